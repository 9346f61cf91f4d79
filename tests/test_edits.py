from __future__ import annotations

import re

import pytest
from kernel_medic.tools.repair.edits import (
    EditError,
    SearchReplace,
    apply_search_replace,
    changed_fraction,
    diff_stats,
    parse_search_replace,
    unified_diff,
)

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n - 1
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
'''

FIX = """Here is the fix:

```python
<<<<<<< SEARCH
    mask = offs < n - 1
=======
    mask = offs < n
>>>>>>> REPLACE
```
"""


def test_parse_fenced_block_with_prose() -> None:
    assert parse_search_replace(FIX) == [SearchReplace("    mask = offs < n - 1\n", "    mask = offs < n\n")]


def test_parse_several_blocks_in_order_and_empty_replace() -> None:
    text = (
        "<<<<<<< SEARCH\na = 1\nb = 2\n=======\na = 3\n>>>>>>> REPLACE\n"
        "and then\n"
        "<<<<<<< SEARCH\nc = 4\n=======\n>>>>>>> REPLACE\n"
    )
    expected = [SearchReplace("a = 1\nb = 2\n", "a = 3\n"), SearchReplace("c = 4\n", "")]
    assert parse_search_replace(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("I think the mask is wrong.", "no SEARCH/REPLACE block"),
        ("<<<<<<< SEARCH\na = 1\n=======\na = 2\n", "block 1 is unterminated"),
        ("<<<<<<< SEARCH\na = 1\n", "block 1 is unterminated"),
        ("<<<<<<< SEARCH\n\n=======\na = 2\n>>>>>>> REPLACE\n", "SEARCH part is empty"),
        ("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nc\n<<<<<<< SEARCH\n", "block 2"),
        ("a = 1\n>>>>>>> REPLACE\n", "without a '<<<<<<< SEARCH'"),
    ],
)
def test_parse_rejects_malformed_answers(text: str, message: str) -> None:
    with pytest.raises(EditError, match=message) as info:
        parse_search_replace(text)
    assert "\n" not in str(info.value)


def test_apply_exact_one_line_fix() -> None:
    fixed = apply_search_replace(KERNEL, parse_search_replace(FIX))
    assert "mask = offs < n\n" in fixed
    assert "n - 1" not in fixed
    assert fixed.replace("mask = offs < n\n", "mask = offs < n - 1\n") == KERNEL


def test_apply_tolerates_trailing_whitespace_and_indentation() -> None:
    # the LLM dropped the 4-space indentation and added trailing spaces: the replacement is re-indented
    edit = SearchReplace("x = tl.load(x_ptr + offs, mask=mask)   \ny = tl.load(y_ptr + offs, mask=mask)\n",
                         "x = tl.load(x_ptr + offs, mask=mask, other=0.0)\nif True:\n    y = x\n")
    fixed = apply_search_replace(KERNEL, [edit])
    assert "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n    if True:\n        y = x\n" in fixed
    assert "y_ptr + offs" not in fixed


def test_apply_blocks_in_order_on_the_current_text() -> None:
    edits = [SearchReplace("    mask = offs < n - 1\n", "    mask = offs < n - 2\n"),
             SearchReplace("    mask = offs < n - 2\n", "    mask = offs < n\n")]
    assert "    mask = offs < n\n" in apply_search_replace(KERNEL, edits)


def test_apply_not_found_names_block_and_first_line() -> None:
    edits = [SearchReplace("    pid = tl.program_id(0)\n", "    pid = tl.program_id(axis=0)\n"),
             SearchReplace("    acc = tl.zeros([BLOCK], dtype=tl.float32)\n", "    acc = 0\n")]
    first_line = re.escape("'acc = tl.zeros([BLOCK], dtype=tl.float32)'")
    with pytest.raises(EditError, match=rf"^block 2: .*{first_line} is not in the candidate"):
        apply_search_replace(KERNEL, edits)


def test_apply_ambiguous_match_is_refused() -> None:
    source = "def f(x):\n    return x\n\n\ndef g(x):\n    return x\n"
    with pytest.raises(EditError, match="block 1: .*'return x' occurs 2 times"):
        apply_search_replace(source, [SearchReplace("    return x\n", "    return x + 1\n")])
    # ambiguous only after whitespace normalisation is refused too
    with pytest.raises(EditError, match="occurs 2 times"):
        apply_search_replace(source, [SearchReplace("return x\n", "return -x\n")])
    # with context it becomes unique
    edit = SearchReplace("def g(x):\n    return x\n", "def g(x):\n    return -x\n")
    fixed = apply_search_replace(source, [edit])
    assert fixed.endswith("def g(x):\n    return -x\n") and fixed.startswith("def f(x):\n    return x\n")


def test_apply_no_op_is_refused() -> None:
    with pytest.raises(EditError, match="the edit changes nothing"):
        line = "    pid = tl.program_id(0)\n"
        apply_search_replace(KERNEL, [SearchReplace(line, line)])


def test_apply_keeps_a_missing_final_newline() -> None:
    assert apply_search_replace("a = 1\nb = 2", [SearchReplace("b = 2\n", "b = 3\n")]) == "a = 1\nb = 3"


def test_unified_diff_and_stats() -> None:
    fixed = apply_search_replace(KERNEL, parse_search_replace(FIX))
    diff = unified_diff(KERNEL, fixed, "kernels/add.py")
    assert diff.startswith("--- a/kernels/add.py\n+++ b/kernels/add.py\n@@")
    assert "\n-    mask = offs < n - 1\n+    mask = offs < n\n" in diff
    assert unified_diff(KERNEL, KERNEL) == ""
    assert diff_stats(KERNEL, fixed) == {"added": 1, "removed": 1, "changed_lines": 2}
    inserted = KERNEL.replace("    pid = tl.program_id(0)\n", "    pid = tl.program_id(0)\n    n = n + 0\n")
    assert diff_stats(KERNEL, inserted) == {"added": 1, "removed": 0, "changed_lines": 1}


def test_changed_fraction_separates_a_fix_from_a_rewrite() -> None:
    fixed = apply_search_replace(KERNEL, parse_search_replace(FIX))
    assert changed_fraction(KERNEL, KERNEL) == 0.0
    assert 0 < changed_fraction(KERNEL, fixed) < 0.1
    rewrite = '''import torch
import triton
import triton.language as tl


@triton.jit
def fused_add(a, b, c, numel, BS: tl.constexpr):
    i = tl.program_id(axis=0) * BS + tl.arange(0, BS)
    m = i < numel
    tl.store(c + i, tl.load(a + i, mask=m) + tl.load(b + i, mask=m), mask=m)


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty_like(a)
        fused_add[(triton.cdiv(a.numel(), 256),)](a, b, c, a.numel(), BS=256)
        return c
'''
    assert changed_fraction(KERNEL, rewrite) > 0.6
