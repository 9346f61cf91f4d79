"""A repair the integrity gate refuses only for the wrapper's own input checks (`assert (x > 0).all()`:
aten ops on the host) is taken again without them, and the gate judges that version like any other."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kernel_medic.graph.api import RepairResult, repair
from kernel_medic.graph.config import RepairConfig
from kernel_medic.tools.repair.host_checks import after_refusal, without_host_checks

WRAPPER = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    assert BLOCK > 0
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def scale(x, index):
    assert all((i >= 0 and i < x.size(0)) for i in index)
    if torch.isnan(x).any():
        raise ValueError(
            "nan in x"
        )
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return y


def checked(x):
    assert (x > 0).all()
'''


def line_of(text: str, source: str = WRAPPER) -> int:
    return next(i for i, line in enumerate(source.splitlines(), start=1) if text in line)


def test_the_checks_holding_the_refused_lines_go_and_nothing_else() -> None:
    lines = [line_of("assert all("), line_of("torch.isnan"), line_of("(x > 0).all()")]
    source, removed = without_host_checks(WRAPPER, lines)  # type: ignore[misc]
    assert removed == lines
    assert "isnan" not in source and "nan in x" not in source and "assert all(" not in source
    assert "assert BLOCK > 0" in source and "y = torch.empty_like(x)" in source
    # A function left with no statement keeps a `pass`, so the module still imports.
    assert source.rstrip().endswith("def checked(x):\n    pass")
    compile(source, "candidate.py", "exec")


def test_a_refused_line_outside_a_host_check_keeps_the_version_as_it_is() -> None:
    assert without_host_checks(WRAPPER, [line_of("y = torch.empty_like(x)")]) is None
    assert without_host_checks(WRAPPER, [line_of("assert BLOCK > 0")]) is None  # in the kernel: not host
    assert without_host_checks(WRAPPER, [line_of("assert all("), 0]) is None  # a finding with no line
    shared = WRAPPER.replace("    assert (x > 0).all()", "    assert (x > 0).all(); x.add_(1)")
    assert without_host_checks(shared, [line_of("(x > 0).all()", shared)]) is None


def test_only_a_refusal_for_host_compute_alone_is_answered() -> None:
    at = line_of("(x > 0).all()")
    host = {"rule": "host_compute", "severity": "cheat", "line": at, "evidence": "aten gt"}
    note = {"rule": "host_epilogue", "severity": "note", "line": 0, "evidence": ""}
    assert after_refusal(WRAPPER, [host, note]) is not None
    # The static findings of the same check's compute go with it.
    static = {"rule": "torch_compute", "severity": "cheat", "line": at, "evidence": "torch.gt"}
    assert after_refusal(WRAPPER, [host, static, note]) is not None
    elsewhere = {"rule": "no_kernel_launch", "severity": "cheat", "line": line_of("y = torch.empty_like(x)")}
    assert after_refusal(WRAPPER, [host, elsewhere]) is None
    # A finding with no line is what the blocked check caused (the held-back run stopped there).
    unplaced = {"rule": "input_modified", "severity": "suspicious", "line": 0, "evidence": ""}
    assert after_refusal(WRAPPER, [host, unplaced]) is not None
    assert after_refusal(WRAPPER, [static]) is None  # no host compute: not this refusal
    assert after_refusal(WRAPPER, [note]) is None


REFERENCE = '''
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        return F.leaky_relu(x, 0.2)


def get_inputs():
    return [torch.randn(6, 1000)]


def get_init_inputs():
    return []
'''

# Stores its result over its input (a rule clones it) and validates its input on the host.
CHECKED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, x * 0.2), mask=mask)


def leaky(x):
    assert torch.isfinite(x).all(), "x must be finite"
    leaky_kernel[(triton.cdiv(x.numel(), 256),)](x, x, x.numel(), BLOCK=256)
    return x


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return leaky(x)
'''


def run(tmp_path: Path, candidate: str) -> RepairResult:
    folder = tmp_path / "problem"
    folder.mkdir()
    (folder / "reference.py").write_text(textwrap.dedent(REFERENCE).lstrip())
    (folder / "candidate.py").write_text(textwrap.dedent(candidate).lstrip())
    config = RepairConfig(strategy="offline", workers=2, kb_path=str(tmp_path / "kb"))
    return repair(folder, None, config, trace=tmp_path / "trace.jsonl", checkpoint_db=tmp_path / "cp.sqlite")


def test_a_fix_refused_for_an_input_check_is_repaired_without_it(tmp_path: Path) -> None:
    result = run(tmp_path, CHECKED)
    assert result.status == "repaired" and result.integrity["verdict"] == "clean", result.stop_reason
    assert [a["rule"] for a in result.attempts][-2:] == ["clone_modified_input", "drop_host_checks"]
    assert "isfinite" not in result.best_source and "x = x.clone()" in result.best_source


def test_a_candidate_passing_as_given_but_for_its_check_is_not_given_up_as_a_cheat(tmp_path: Path) -> None:
    right = CHECKED.replace("](x, x, x.numel()", "](x, y, x.numel()").replace(
        "    return x\n", "    return y\n"
    ).replace("    leaky_kernel[", "    y = torch.empty_like(x)\n    leaky_kernel[")
    result = run(tmp_path, right)
    assert result.status == "repaired" and result.integrity["verdict"] == "clean", result.stop_reason
    assert [a["rule"] for a in result.attempts] == ["drop_host_checks"]
