"""Reading LLM answers in the forms models really write; the prompt that a small model gets."""

from __future__ import annotations

from kernel_medic.tools.repair.answer_completion import parallel_edit, resolve_names
from kernel_medic.tools.repair.answer_parts import answer_parts
from kernel_medic.tools.repair.answers import describe_edit, read_answer, read_region
from kernel_medic.tools.repair.llm import render_prompt
from kernel_medic.tools.repair.llm_prompt import (
    anchor_lines,
    estimate_tokens,
    evidence_anchors,
    hypothesis_lines,
    pattern_fixes,
    pattern_lines,
    symptom_lines,
    trim_reference,
)
from problems import SCALE_REFERENCE, scale_candidate

BROKEN = scale_candidate(("x * 2.0", "x * 3.0"))
FIXED = scale_candidate()
INSTRUCTIONS = render_prompt("patch_system")
OLD = "    tl.store(out_ptr + offs, x * 3.0, mask=mask)"
NEW = "    tl.store(out_ptr + offs, x * 2.0, mask=mask)"


def sr(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def read(text: str, source: str = BROKEN) -> object:
    return read_answer(text, source, INSTRUCTIONS, max_fraction=0.6)


def test_exact_search_replace() -> None:
    answer = read(sr(OLD, NEW))
    assert (answer.source, answer.form) == (FIXED, "search_replace")


def test_indentation_tolerant_search_replace() -> None:
    answer = read("Here is the fix:\n" + sr(OLD.strip(), NEW.strip()))
    assert (answer.source, answer.form) == (FIXED, "search_replace_fuzzy")


def test_an_ambiguous_fuzzy_match_is_refused() -> None:
    source = "def f(a):\n    x = 1\n    if a:\n        x = 1\n    return x\n"
    answer = read_answer(sr("  x = 1", "  x = 2"), source, INSTRUCTIONS)
    assert answer.source is None and "occurs 2 times" in answer.refusal


def test_unified_diff() -> None:
    diff = (
        "```diff\n--- a/candidate.py\n+++ b/candidate.py\n@@ -13,3 +13,3 @@\n"
        "     x = tl.load(x_ptr + offs, mask=mask)\n"
        f"-{OLD}\n+{NEW}\n \n```\n"
    )
    answer = read(diff)
    assert (answer.source, answer.form) == (FIXED, "unified_diff")


def test_whole_file_in_a_fence_is_diffed_and_cosmetic_changes_are_reverted() -> None:
    # What the 1.5B model did on every call: the template echoed, then the whole file with comments dropped.
    echoed = sr(
        "lines copied exactly from the current candidate, including indentation",
        "the lines that replace them",
    )
    commented = BROKEN.replace(
        "    pid = tl.program_id(0)\n", "    # one program per block\n    pid = tl.program_id(0)\n"
    )
    whole = "```python\n" + FIXED.replace("x * 2.0", "x*2.0") + "```\n"
    answer = read_answer(echoed + "\nThe corrected kernel:\n" + whole, commented, INSTRUCTIONS + echoed)
    assert answer.form == "fenced_code"
    assert answer.source == commented.replace("x * 3.0", "x*2.0")  # the comment the model dropped is kept
    assert any("instructions" in note for note in answer.notes)


def test_a_fenced_kernel_alone_replaces_the_function_of_the_same_name() -> None:
    kernel = FIXED[FIXED.index("@triton.jit") : FIXED.index("class ModelNew")]
    answer = read(f"```python\n{kernel}```")
    assert (answer.source, answer.form) == (FIXED, "fenced_code")


def test_a_large_rewrite_is_refused_as_regeneration_with_the_reason() -> None:
    rewrite = (
        FIXED.replace("pid = tl.program_id(0)", "p = tl.program_id(axis=0)")
        .replace("offs = pid * BLOCK", "offs = p * BLOCK")
        .replace("mask = offs < n", "m = offs < n")
        .replace("mask=mask", "mask=m")
    )
    answer = read_answer(f"```python\n{rewrite}```", BROKEN, INSTRUCTIONS, max_fraction=0.2)
    assert answer.source is None and "regeneration" in answer.refusal and "limit 20%" in answer.refusal


def test_an_echoed_example_alone_is_named_as_such() -> None:
    answer = read(
        sr("    total = tl.sum(vals, axis=0) / BLOCK_SIZE", "    total = tl.sum(vals, axis=0) / n_cols")
    )
    assert answer.source is None and "repeated the template/example" in answer.refusal


def test_prose_only_is_no_edit() -> None:
    answer = read("I would change the constant to 2.0.")
    assert answer.source is None and answer.form == "none" and "no edit found" in answer.refusal


def test_a_patch_is_named_from_the_edit_not_the_prose() -> None:
    name = describe_edit(BROKEN, FIXED, "search_replace")
    assert (
        name == "llm search_replace, line 13: tl.store(out_ptr + offs, x * 3.0, mask=mask) -> " + NEW.strip()
    )


def test_symptoms_are_grouped_by_variant_and_deduplicated() -> None:
    report = {
        "symptoms": [
            "12 of 4000 elements outside tolerance (max abs error 1)",
            "candidate = 0.98 x reference",
            "errors in the last block",
            "errors in the last block",
        ],
        "cases": [
            {
                "name": "seed0",
                "verdict": "mismatch",
                "pattern": "tail",
                "relationships": ["constant_ratio:0.98"],
                "mismatch_fraction": 0.003,
            },
            {
                "name": "seed1",
                "verdict": "mismatch",
                "pattern": "tail",
                "relationships": ["constant_ratio:0.99"],
                "mismatch_fraction": 0.004,
            },
            {"name": "x100", "verdict": "pass"},
        ],
    }
    lines = symptom_lines(report)
    assert lines[0].startswith("fails on seed0, seed1: mismatch") and "0.98..0.99 x reference" in lines[0]
    assert lines[1] == "passes on x100" and lines[2:] == ["errors in the last block"]


def test_hypotheses_deduplicated_and_evidence_backed_patterns_thresholded() -> None:
    hyps = [
        {"bug_class": "k_loop", "confidence": 0.5, "evidence": []},
        {"bug_class": "mask", "confidence": 0.4, "evidence": ["tail_errors"]},
        {"bug_class": "mask", "confidence": 0.3, "evidence": ["tail_errors"]},
    ]
    assert [line.split(" ")[0] for line in hypothesis_lines(hyps)] == ["mask"]
    pats = [
        {"title": "A", "bug_class": "mask", "fix": "f", "score": 0.8},
        {"title": "B", "bug_class": "x", "fix": "g", "score": 0.3},
    ]
    assert pattern_lines(pats, 0.35) == ["A [mask]: f"]


def test_lines_that_look_like_a_patterns_bug_are_named_with_its_fix() -> None:
    from kernel_medic.vectordb.pattern import load_seeds

    seeds = {p.id: p for p in load_seeds()}
    advance = seeds["matmul-pointer-advance-without-stride"]
    padded = seeds["layernorm-padded-lanes-in-variance"]
    assert advance.changes() == [["b_ptrs += BLOCK_K", "b_ptrs += BLOCK_K * stride_bk"]]
    pats = [{"title": p.title, "fix": p.fix, "changes": p.changes()} for p in (advance, padded)]
    kernel = "    a_ptrs += BLOCK_K * stride_ak\n    b_ptrs += BLOCK_K\n    centred = x - mean\n"
    lines = anchor_lines(kernel, pats)
    # The bug's own line is named with the fixed form; a temporary named differently still matches.
    assert lines[0].startswith("line 2 `b_ptrs += BLOCK_K` looks like the known bug")
    assert "correct form `b_ptrs += BLOCK_K * stride_bk`" in lines[0]
    assert lines[1].startswith("line 3 `centred = x - mean`") and len(lines) == 2
    # Lines already in the fixed form, or only loosely alike, are not pointed at.
    fixed = "    b_ptrs += BLOCK_K * stride_bk\n    d = tl.where(m, x - mean, 0.0)\n"
    assert anchor_lines(fixed, pats) == []
    assert anchor_lines("    tl.store(out_ptr + offs, y, mask=mask)\n", pats) == []


def test_a_line_the_bug_leaves_out_is_pointed_at_through_its_neighbour() -> None:
    from kernel_medic.vectordb.pattern import load_seeds

    seed = next(p for p in load_seeds() if p.id == "elementwise-missing-contiguous")
    assert seed.changes() == [["def forward(self, x):", "def forward(self, x):\nx = x.contiguous()"]]
    pats = [{"title": seed.title, "fix": seed.fix, "changes": seed.changes()}]
    wrapper = "class M:\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return f(x)\n"
    [line] = anchor_lines(wrapper, pats)
    assert line.startswith("line 2 `def forward(") and "the fix adds `x = x.contiguous()`" in line
    # Once the missing line is there, nothing is pointed at.
    fixed = wrapper.replace("        return", "        x = x.contiguous()\n        return")
    assert anchor_lines(fixed, pats) == []


def test_a_patterns_fix_is_shown_in_the_candidates_own_names() -> None:
    # The 1.5B model copied `x = x - tl.max(x, axis=0)` into a kernel whose loaded row is named `row`
    # (and has no `x`): the fix must name what the candidate names.
    from kernel_medic.vectordb.pattern import load_seeds

    seed = next(p for p in load_seeds() if p.id == "softmax-no-max-subtraction")
    pats = [{"title": seed.title, "fix": seed.fix, "changes": seed.changes()}]
    kernel = (
        '    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float("inf"))\n'
        "    numerator = tl.exp(row)\n"
    )
    [line] = anchor_lines(kernel, pats)
    assert "the fix adds `row = row - tl.max(row, axis=0)`" in line, line
    assert "exponentiating: `row = row - tl.max(row, axis=0)`" in line  # the prose's code, not its words
    assert "x - tl.max(x" not in line
    # Names standing for two things (p and q both for a; i for i and j) are not renamed.
    changes = [["y = tl.load(p + i) + tl.load(q + i)", "y = tl.load(p + i) * tl.load(q + i)"]]
    code = "    z = tl.load(a + i) + tl.load(a + j)\n"
    [odd] = anchor_lines(code, [{"title": "t", "fix": "Use `y = p * q`.", "changes": changes}])
    assert "correct form `z = tl.load(p + i) * tl.load(q + i)`" in odd, odd


def test_reference_is_trimmed_to_the_module_the_kernel_implements() -> None:
    reference = SCALE_REFERENCE + "\n\nclass Unused:\n    pass\n\n\ndef helper_never_used():\n    return 1\n"
    trimmed = trim_reference(reference)
    assert "class Model" in trimmed and "get_inputs" in trimmed
    assert "Unused" not in trimmed and "helper_never_used" not in trimmed
    assert estimate_tokens(trimmed) < estimate_tokens(reference)


def test_a_fix_quoted_from_the_prompt_hints_is_not_an_echo() -> None:
    hints = INSTRUCTIONS + "\nKnown pattern:\n-" + OLD + "\n+" + NEW
    answer = read_answer(sr(OLD, NEW), BROKEN, hints)
    assert answer.source == FIXED


def test_a_unique_fragment_of_a_line_is_accepted() -> None:
    answer = read(sr("x * 3.0, mask", "x * 2.0, mask"))
    assert (answer.source, answer.form) == (FIXED, "search_replace_fuzzy")


def test_the_current_source_given_back_is_named_unchanged() -> None:
    answer = read(f"```python\n{BROKEN}```")
    assert answer.source is None and "unchanged" in answer.refusal


def test_the_usual_fix_of_a_relevant_pattern_sits_next_to_its_hypothesis() -> None:
    hyps = [{"bug_class": "strides_layout", "confidence": 0.5, "evidence": ["garbage_region"]}]
    pats = [
        {
            "title": "t",
            "bug_class": "strides_layout",
            "fix": "Call `.contiguous()` in the wrapper.",
            "score": 0.5,
        },
        {"title": "u", "bug_class": "strides_layout", "fix": "irrelevant", "score": 0.1},
    ]
    [line] = hypothesis_lines(hyps, fixes=pattern_fixes(pats, 0.25))
    assert line.endswith("usual fix: Call `.contiguous()` in the wrapper.")


def test_a_region_reply_replaces_those_lines_keeping_its_relative_indentation() -> None:
    source = "class M:\n    def forward(self, x):\n        return f(x)\n"
    reply = "Here:\n```python\ndef forward(self, x):\n    x = x.contiguous()\n    return f(x)\n```\n"
    answer = read_region(reply, source, 2, 3)
    assert answer.form == "region"
    fixed = "class M:\n    def forward(self, x):\n        x = x.contiguous()\n        return f(x)\n"
    assert answer.source == fixed
    unchanged = read_region("```python\n    return   f(x)\n```", source, 3, 3)
    assert unchanged.source is None and "unchanged" in unchanged.refusal
    # A SEARCH/REPLACE answer is still read as one; prose far longer than the region is not an edit.
    sr_reply = "<<<<<<< SEARCH\n        return f(x)\n=======\n        return g(x)\n>>>>>>> REPLACE\n"
    assert read_region(sr_reply, source, 2, 3).source == source.replace("f(x)", "g(x)")
    prose = "I think\nthe bug\nis somewhere\nin the\nkernel\nbut\nI am\nnot sure"
    assert read_region(prose, source, 3, 3).source is None
    refused = read_region("I would change the constant.", source, 3, 3)
    assert refused.source is None and "not valid Python" in refused.refusal


def test_a_line_whose_pattern_fix_was_already_tried_is_not_pointed_at_again() -> None:
    from kernel_medic.tools.trace import source_hash

    change = ["out = torch.empty_like(x)", "out = torch.zeros_like(x)"]
    pats = [{"title": "t", "fix": "f", "changes": [change]}]
    wrapper = "def forward(x):\n    out = torch.empty_like(x)\n    return out\n"
    assert len(anchor_lines(wrapper, pats)) == 1
    tried = {source_hash(wrapper.replace("empty_like", "zeros_like"))}
    assert anchor_lines(wrapper, pats, tried=tried) == []
    # The same for a missing line: once the pattern's own insertion was tried, it is not offered again.
    missing = ["def forward(x):", "def forward(x):\nx = x.contiguous()"]
    seed = [{"title": "c", "fix": "f", "changes": [missing]}]
    assert len(anchor_lines(wrapper, seed)) == 1
    inserted = wrapper.replace("    out =", "    x = x.contiguous()\n    out =")
    assert anchor_lines(wrapper, seed, tried={source_hash(inserted)}) == []


def test_without_an_anchored_line_the_evidence_names_whole_statements_and_what_fails() -> None:
    source = BROKEN.replace(
        "    tl.store(out_ptr + offs, x * 3.0, mask=mask)",
        "    tl.store(\n        out_ptr + offs,\n        x * 3.0,\n        mask=mask,\n    )",
    )
    report = {"cases": [{"name": "seed0", "verdict": "mismatch", "pattern": "everywhere"}]}
    hyps = [
        {"bug_class": "operator_misread", "evidence": ["constant_ratio"], "location": "candidate.py:15"},
        {"bug_class": "k_loop", "evidence": [], "location": "candidate.py:9"},  # no evidence: not asked
    ]
    found = evidence_anchors(source, hyps, report, ranked_lines=[12, 14])
    # The evidence-backed hypothesis' line first (a line inside a call asks about the whole call), then the
    # localiser's ranking where it names another statement.
    assert [(a.first, a.last) for a in found] == [(13, 17), (12, 12)]
    store, load = found
    assert "the diagnosis suspects operator misread here" in store.note
    assert "fails on seed0: mismatch" in store.note
    assert "tl.load(x_ptr + offs, mask=mask)" in load.note and "most suspect" in load.note
    assert [a.first for a in evidence_anchors(source, hyps, report, [])] == [13]
    assert len(evidence_anchors(source, hyps, report, [9, 10, 11, 12, 13], limit=3)) == 3


TRIM_WRAPPER = """\
import torch


def launch(x, border_width):
    N, H, W = x.shape
    bw = border_width
    H_out = H - bw
    W_out = W - bw
    rows = [r for r in range(H_out)]
    return torch.empty(N, H_out, W_out), rows
"""


def test_a_misspelt_name_is_read_as_the_one_in_scope_it_stands_for() -> None:
    # Small models write the reference's names (`padding`, `kernel_size`) where the wrapper has its own.
    answer = TRIM_WRAPPER.replace("H_out = H - bw", "H_out = H - 2 * border")
    new, notes = resolve_names(TRIM_WRAPPER, answer)
    assert new == TRIM_WRAPPER.replace("H - bw", "H - 2 * border_width", 1)
    assert notes == ["read `border` as `border_width` (no `border` is defined there)"]
    # `border_width` is in scope: it stays. Initials (`b_w` -> `bw`) and other-case spellings are read too.
    for written, meant in (("border_width", "border_width"), ("b_w", "bw"), ("h_OUT", "H_out")):
        answer = TRIM_WRAPPER.replace("W_out = W - bw", f"W_out = W - {written}")
        new, notes = resolve_names(TRIM_WRAPPER, answer)
        assert new == TRIM_WRAPPER.replace("W_out = W - bw", f"W_out = W - {meant}")
        assert bool(notes) == (written != meant)
    # Two names it could stand for (`bord` starts `border_width` and `border_w`): unique or nothing.
    ambiguous = TRIM_WRAPPER.replace("bw = border_width", "bw = border_width\n    border_w = bw")
    answer = ambiguous.replace("W_out = W - bw", "W_out = W - bord")
    assert resolve_names(ambiguous, answer) == (answer, [])
    # A name the candidate already used undefined (a global it imports some other way) is not the answer's.
    odd = TRIM_WRAPPER.replace("rows = [r for r in range(H_out)]", "rows = helper(H_out)")
    answer = odd.replace("W_out = W - bw", "W_out = W - 2 * bw")
    assert resolve_names(odd, answer) == (answer, [])


def test_an_edit_of_one_of_two_parallel_lines_is_offered_for_its_twin_too() -> None:
    answer = TRIM_WRAPPER.replace("H_out = H - bw", "H_out = H - 2 * bw")
    both, twins = parallel_edit(TRIM_WRAPPER, answer) or ("", 0)
    assert twins == 1 and both == answer.replace("W_out = W - bw", "W_out = W - 2 * bw")
    # A twin is renamed as a swap: an edit that reads the other dimension's name keeps them paired.
    answer = TRIM_WRAPPER.replace("H_out = H - bw", "H_out = H - bw - (W % 2)")
    assert "W_out = W - bw - (H % 2)" in (parallel_edit(TRIM_WRAPPER, answer) or ("",))[0]
    # No twin: lines that differ in more than names, an edit that already changed both, an added line.
    answer = TRIM_WRAPPER.replace("N, H, W = x.shape", "N, H, W = x.size()")
    assert parallel_edit(TRIM_WRAPPER, answer) is None
    answer = TRIM_WRAPPER.replace("- bw\n", "- 2 * bw\n")
    assert parallel_edit(TRIM_WRAPPER, answer) is None
    answer = TRIM_WRAPPER.replace("    H_out = H - bw\n", "    bw = 2 * bw\n    H_out = H - bw\n")
    assert parallel_edit(TRIM_WRAPPER, answer) is None


def test_a_region_reply_that_only_comments_the_lines_is_no_edit() -> None:
    # "x  # fixed" verified as an edit would spend an iteration judging the same code again.
    reply = f"```python\n{OLD.strip()}  # Corrected: the bug is fixed here\n```\nThis fixes the bug."
    answer = read_region(reply, BROKEN, 13, 13)
    assert answer.source is None and "unchanged" in answer.refusal
    assert read_region(f"```python\n{NEW.strip()}  # fixed\n```", BROKEN, 13, 13).source is not None


def test_a_region_fix_anywhere_in_the_reply_is_read_as_well() -> None:
    # What a real 1.5B model does: the fix in the first fence and a wrong copy in the last, a fence never
    # closed, the fixed line quoted in a sentence. Every reading is an edit the evaluator can judge.
    source = "def f(x):\n    y = x + 1\n    return y\n"
    fixed = source.replace("x + 1", "x + 2")
    two = "```python\ny = x + 2\n```\n\n```python\ny = x + 3\n```"
    answer = read_region(two, source, 2, 2)
    assert answer.source == source.replace("x + 1", "x + 3") and answer.alternatives == [fixed]
    copy_then_fix = "```python\ny = x + 1\n```\nFixed:\n```python\ny = x + 2\n```"
    assert read_region(copy_then_fix, source, 2, 2).source == fixed
    assert read_region("The bug: the constant.\n```python\n    y = x + 2\n", source, 2, 2).source == fixed
    said = "The line `y = x + 1` adds the wrong constant; it should be `y = x + 2`, as `return y` shows."
    answer = read_region(said, source, 2, 3)
    assert answer.source == fixed and answer.alternatives == []
    # A quoted statement of another kind, or the line as it is, is no edit.
    assert read_region("It should call `print(x)` or use `y = x + 1`.", source, 2, 2).source is None


SCAN = """\
@triton.jit
def scan_kernel(x_ptr, y_ptr, stride_y, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * stride_y + offs, mask=mask, other=0.0)
    inclusive = tl.cumsum(x, axis=0)
    tl.store(y_ptr + row * stride_y + offs, inclusive, mask=mask)
"""


def test_an_answer_s_changes_are_each_offered_alone() -> None:
    # A real 1.5B model's fill-in: the fix (`- x`) with the offsets and the mask dropped beside it.
    old = "    tl.store(y_ptr + row * stride_y + offs, inclusive, mask=mask)\n"
    answer = SCAN.replace(old, "    tl.store(y_ptr + row * stride_y, inclusive - x)\n")
    parts = dict(answer_parts(SCAN, answer))
    fixed = SCAN.replace(old, "    tl.store(y_ptr + row * stride_y + offs, inclusive - x, mask=mask)\n")
    assert parts[fixed] == " (part of the answer: add `- x`)"
    assert SCAN.replace(" + offs, inclusive,", ", inclusive,") in parts  # `+ offs` dropped alone
    assert SCAN not in parts and answer not in parts


def test_one_change_or_a_rewrite_is_not_split() -> None:
    one = SCAN.replace("inclusive, mask=mask)", "inclusive - x, mask=mask)")
    assert answer_parts(SCAN, one) == []
    body = SCAN[SCAN.index("    inclusive =") :]
    new = "    acc = tl.zeros((BLOCK,), tl.float32) + tl.sum(x)\n    tl.store(y_ptr + offs * 2, acc - x)\n"
    rewrite = SCAN.replace(body, new)
    assert answer_parts(SCAN, rewrite) == []


def test_a_part_that_is_not_python_is_not_offered() -> None:
    # `(` added in one place and `)` in another: either alone leaves the source unparsable.
    answer = SCAN.replace("inclusive = tl.cumsum(x, axis=0)", "inclusive = (tl.cumsum(x, axis=0) - x)")
    assert answer_parts(SCAN, answer) == []


def test_one_name_written_for_another_has_no_halves_and_nothing_is_glued() -> None:
    # `torch.empty` -> `torch.zeros` beside another change: `zeros` added before `empty` would read
    # `zerosempty`, one name neither wrote.
    base = "def f(n):\n    out = torch.empty(n)\n    return out * 2\n"
    answer = "def f(n):\n    out = torch.zeros(n)\n    return out * 3\n"
    parts = [src for src, _ in answer_parts(base, answer)]
    assert parts == [
        "def f(n):\n    out = torch.zeros(n)\n    return out * 2\n",
        "def f(n):\n    out = torch.empty(n)\n    return out * 3\n",
    ]
