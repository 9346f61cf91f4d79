"""Crash repair in the same graph: offline crash rules turn crashing kernels into passing ones.

Per fixture (tests/crash_problems/, one crash class each) the crash rules are proposed with the crash the
light tier reported, and one of them must make the kernel pass the light tier; a few fixtures run the whole
graph (full tier, integrity gate): an import-time NameError is repaired (not bad input), two crashes in a row
are fixed one after the other, a crash fixed into a near-miss goes on as a near-miss repair, and a
CPU-interpreter limitation is labelled and never repaired.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_medic.graph.api import RepairResult, repair
from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.drivers.cli import main
from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.problem import load_problem
from kernel_medic.tools.repair.crash_patcher import CrashPatcher, crash_rules
from kernel_medic.tools.repair.patchers import PatchRequest
from kernel_medic.tools.repair.rules.base import RuleContext
from kernel_medic.tools.repair.rules.registry import propose

PROBLEMS = Path(__file__).parent / "crash_problems"

# fixture -> the rule that fixes it
FIXABLE = {
    "api_libdevice": "api_moves",
    "api_math": "api_moves",
    "import_optional": "missing_import",
    "import_demo": "drop_import_time_code",
    "grid_int": "grid_tuple",
    "device_cuda": "host_device",
    "autotune_conflict": "launch_arguments",
    "block_not_pow2": "pow2_block",
    "missing_constexpr": "add_constexpr",
    "output_shape": "output_allocation",
    "pointer_index": "pointer_subscript",
    "numpy_arange": "arange_start",
    "torch_script": "drop_torch_script",
    "cuda_launch": "launch_config",
    "entry_point_name": "entry_point",
    "kernel_called": "entry_point",
    "astype_cast": "tensor_method_drift",
    "int_constexpr": "add_constexpr",
    "kernel_free_name": "kernel_free_name",
    "cuda_context": "host_device",
    "unknown_kw": "unknown_keyword",
    "device_fn_call": "device_function_launch",
    "syntax_prose": "syntax_salvage",
    "syntax_fenced": "syntax_salvage",
    "dot_small_k": "dot_min_tile",
    "gpu_check": "host_device",
    "entry_args": "entry_arguments",
    "dot_dtypes": "dot_operand_dtype",
    "bare_pointer": "pointer_offsets",
    "power_op": "power_operator",
    "output_dtype_call": "output_allocation",
    "entry_dest": "entry_arguments",
    "entry_ref_default": "entry_arguments",
    "leading_dims": "flatten_leading_dims",
    "host_dtype": "api_moves",
    "tensor_strides": "tensor_attribute",
    "entry_module": "entry_class",
    "broken_check": "broken_check",
    "dtype_call": "dtype_call",
    "undefined_annotation": "drop_bad_annotation",
    "method_clip": "tensor_method_drift",
    "min_of_two": "reduction_as_pairwise",
}


@pytest.mark.parametrize("name", sorted(FIXABLE))
def test_a_crash_rule_turns_each_fixture_into_a_passing_kernel(evaluator: Evaluator, name: str) -> None:
    problem = load_problem(PROBLEMS / name)
    report = evaluator.evaluate(problem, tier="light").to_dict()
    assert report["crash"] is not None
    context = RuleContext.from_reference(problem.reference_source, report)
    rewrites = propose(problem.candidate_source, crash_rules(), context)
    assert rewrites, "no crash rule applies"
    mine = [rw for rw in rewrites if rw.rule == FIXABLE[name]]
    assert mine, [(rw.rule, rw.description) for rw in rewrites]
    verdicts = [evaluator.evaluate(problem.with_candidate(rw.source), tier="light").verdict for rw in mine]
    assert "pass" in verdicts, [(rw.description, v) for rw, v in zip(mine, verdicts)]


def test_syntax_salvage_offers_only_sources_that_parse_and_nothing_for_valid_python() -> None:
    tabs = "import torch\n\n\nclass ModelNew:\n    def forward(self, x):\n\t\tif x is None:\n"
    tabs += "            return x\n"
    rewrites = propose(tabs, ["syntax_salvage"])
    assert rewrites and all(compile(rw.source, "c.py", "exec") for rw in rewrites)
    assert any("expand tabs" in rw.description and "return x" in rw.source for rw in rewrites)
    assert not any("class ModelNew" not in rw.source for rw in rewrites)  # the entry point is never cut
    assert propose(tabs.replace("\t\t", " " * 8), ["syntax_salvage"]) == []
    # Prose between two functions: the paragraph goes, the code after it stays.
    prose = "def f():\n    return 1\n\nThis helper returns one.\n\ndef g():\n    return 2\n"
    rewrites = propose(prose, ["syntax_salvage"])
    assert rewrites[0].source == "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    assert rewrites[0].line == 4
    # Prompt text glued to the code (no blank line) goes up to the first import; an indented file is dedented.
    glued = "Document 1: write a kernel.\nimport math\nx = math.pi\n"
    assert any(rw.source == "import math\nx = math.pi\n" for rw in propose(glued, ["syntax_salvage"]))
    indented = "    import math\n    x = math.pi\n"
    assert [rw.source for rw in propose(indented, ["syntax_salvage"])][0] == "import math\nx = math.pi\n"


def test_a_block_size_the_entry_expects_from_its_caller_gets_a_value() -> None:
    problem = load_problem(PROBLEMS / "entry_args")
    source = problem.candidate_source.replace("(x, scale):", "(x, scale, approximate, BLOCK):")
    crash = {"exception": "TypeError", "message": "tanh2() missing 1 required positional argument: 'BLOCK'"}
    report = {"verdict": "runtime_error", "crash": crash}
    context = RuleContext.from_reference(problem.reference_source, report)
    calls = [rw.source.splitlines()[-1].strip() for rw in propose(source, ["entry_arguments"], context)]
    assert calls == [
        "return tanh2(x, 2.0, False, 1024)",
        "return tanh2(x, 2.0, False, triton.next_power_of_2(x.shape[-1]))",
    ]


def test_an_undefined_entry_goes_to_the_one_top_level_launcher_whatever_its_name() -> None:
    problem = load_problem(PROBLEMS / "entry_args")
    source = problem.candidate_source.replace("def tanh2(x, scale):", "def run_it(x, scale):")
    crash = {"exception": "NameError", "message": "name 'tanh2' is not defined"}
    report = {"verdict": "runtime_error", "crash": crash}
    rewrites = propose(source, ["entry_point"], RuleContext.from_reference(problem.reference_source, report))
    assert [rw.source.splitlines()[-1].strip() for rw in rewrites] == ["return run_it(x, 2.0, False)"]


def test_demo_code_goes_with_the_seed_it_set_at_import() -> None:
    # The integrity gate refuses a candidate that seeds the global RNG; demo code often starts with a seed.
    source = "import torch\n\n\ndef f(x):\n    return x\n\n\n# demo\ntorch.manual_seed(0)\n"
    source += 'x = torch.randn(3, device="cuda")\nprint(f(x))\n'
    crash = {"phase": "import", "module_line": 10, "exception": "AssertionError", "message": "no cuda"}
    context = RuleContext.from_reference("", {"verdict": "compile_error", "crash": crash})
    rewrites = propose(source, ["drop_import_time_code"], context)
    assert rewrites and all("manual_seed" not in rw.source and "def f(x)" in rw.source for rw in rewrites)
    assert "print(f(x))" not in rewrites[-1].source


def test_crash_rules_stay_silent_without_a_crash() -> None:
    problem = load_problem(PROBLEMS / "api_libdevice")
    quiet = RuleContext.from_reference(problem.reference_source, {"verdict": "mismatch", "crash": None})
    assert propose(problem.candidate_source, crash_rules(), quiet) == []


def run(name: str, tmp_path: Path) -> RepairResult:
    config = RepairConfig(strategy="offline", workers=2, kb_path=str(tmp_path / "kb"))
    return repair(
        PROBLEMS / name, None, config, trace=tmp_path / "trace.jsonl", checkpoint_db=tmp_path / "cp.sqlite"
    )


def test_import_time_name_error_is_repaired_by_the_cli_not_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `kmedic repair` in process (the CLI's own argument parsing, exit code, --out files, --json).
    monkeypatch.setenv("KMEDIC_KB_PATH", str(tmp_path / "kb"))
    out = tmp_path / "out"
    code = main(["repair", str(PROBLEMS / "import_optional"), "--workers", "2", "--out", str(out), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["status"] == "repaired" and data["integrity"] == "clean", data
    assert "+from typing import Optional" in data["diff"]
    assert data["crash"]["class"] == "import_error" and data["crash"]["line"] == 21
    report = json.loads((out / "report.json").read_text())
    assert report["crash"]["class"] == "import_error" and "NameError" in report["crash"]["exception"]
    assert "id=crash" in (out / "report.html").read_text()
    assert (out / "repaired.py").exists()


def test_two_crashes_are_fixed_one_after_the_other(tmp_path: Path) -> None:
    # The second crash shows only once the first is fixed: both fixes go into one chained patch.
    result = run("two_crashes", tmp_path)
    assert result.status == "repaired", result.stop_reason
    first = result.attempts[0]
    assert first["rule"] == "host_device" and "; then launch grid as a tuple" in first["description"]
    assert first["verdict"] == "pass" and len(result.attempts) == 1, result.attempts


def test_a_chat_answer_with_prose_and_fences_is_repaired_not_bad_input(tmp_path: Path) -> None:
    # The generation as a chat model returns it: a sentence, two fenced blocks, notes. Not valid Python.
    result = run("syntax_fenced", tmp_path)
    assert result.status == "repaired" and result.integrity["verdict"] == "clean", result.stop_reason
    assert result.start_verdict == "compile_error" and result.attempts[0]["rule"] == "syntax_salvage"
    assert "```" not in result.repaired_source and "class ModelNew" in result.repaired_source


def test_a_generation_broken_many_times_over_is_repaired_in_one_run(tmp_path: Path) -> None:
    # TorchScript on the wrapper, a CUDA launch config, data_ptr() ints, an `int` block size, triton.X for
    # tl.X, NumPy's arange, pointers indexed like arrays: each fix only exposes the next crash.
    result = run("many_crashes", tmp_path)
    assert result.status == "repaired" and result.integrity["verdict"] == "clean", result.stop_reason
    steps = " ".join(a["description"] for a in result.attempts)
    for fix in ("TorchScript", "tl.program_id", "tl.arange(0, N)", "tl.load/tl.store", "tl.constexpr"):
        assert fix in steps, steps
    assert len(result.attempts) <= 3, [a["description"] for a in result.attempts]


def test_a_device_function_called_from_host_is_launched_and_audited_clean(tmp_path: Path) -> None:
    # The added kernel computes on the device: the integrity gate finds no host computation to object to.
    result = run("device_fn_call", tmp_path)
    assert result.status == "repaired" and result.integrity["verdict"] == "clean", result.stop_reason
    assert result.attempts[0]["rule"] == "device_function_launch"
    assert "_scaled_shift_kmedic_kernel[" in (result.repaired_source or "")


def test_the_chain_stops_where_no_fix_gets_further(evaluator: Evaluator) -> None:
    # NumPy's arange (a rule fixes it), then a call of a function Triton never had (none does): the patcher
    # proposes the one fix that got further, and chains nothing after it.
    problem = load_problem(PROBLEMS / "numpy_arange")
    source = problem.candidate_source.replace("x * 3.0 - 1.0", "tl.no_such_function(x) * 3.0 - 1.0")
    report = evaluator.evaluate(problem.with_candidate(source), tier="light").to_dict()

    def evaluate(src: str, tier: str) -> dict[str, Any]:
        return evaluator.evaluate(problem.with_candidate(src), tier=tier).to_dict()  # type: ignore[arg-type]

    request = PatchRequest(
        "t", problem.reference_source, source, report, [], [], [], [], [], "", set(), {}, 6
    )
    outcome = CrashPatcher(evaluate, workers=1).propose(request)
    assert outcome.proposal is not None and outcome.proposal.rule == "arange_start"
    assert "then" not in outcome.proposal.description and "tl.arange(0, BLOCK)" in outcome.proposal.source
    after = evaluate(outcome.proposal.source, "light")["crash"]
    assert after is not None and "no_such_function" in after["message"]


def test_a_crash_fixed_into_a_near_miss_goes_on_as_a_near_miss_repair(tmp_path: Path) -> None:
    result = run("crash_then_near_miss", tmp_path)
    assert result.status == "repaired" and result.integrity["verdict"] == "clean"
    assert result.attempts[0]["rule"] == "api_moves" and result.attempts[0]["verdict"] == "mismatch"
    assert result.attempts[-1]["verdict"] == "pass" and result.attempts[-1]["rule"] != "api_moves"


def test_an_interpreter_limitation_is_labelled_and_never_repaired(tmp_path: Path) -> None:
    result = run("interpreter_i0", tmp_path)
    assert result.status == "unrepaired" and result.stop_reason == "interpreter_limitation"
    assert result.attempts == [] and result.crash is not None
    assert result.crash["class"] == "interpreter_limitation" and result.crash["line"] == 13


def test_a_kernel_never_written_stops_at_once_as_a_stub(tmp_path: Path) -> None:
    # A generation whose kernel body is only `pass` (and a comment) is not a near-miss: nothing to repair.
    folder = tmp_path / "stub"
    shutil.copytree(PROBLEMS / "grid_int", folder)
    source = (folder / "candidate.py").read_text()
    body = source[source.index("    pid = tl.program_id(0)") : source.index("\n\n\nclass ModelNew")]
    stub = '    """tanh * 2"""\n    # kernel here\n    pass'
    (folder / "candidate.py").write_text(source.replace(body, stub))
    config = RepairConfig(strategy="offline", workers=2, kb_path=str(tmp_path / "kb"))
    result = repair(folder, None, config, trace=tmp_path / "trace.jsonl")
    assert result.status == "unrepaired" and result.stop_reason == "stub_kernel", result.stop_reason
    assert result.attempts == [] and "tanh2_kernel has no body" in result.error


def test_a_candidate_computing_its_wrong_numbers_without_any_kernel_stops_at_once(tmp_path: Path) -> None:
    # Its forward computes on the host and never launches the kernel it defines: an edit that made it pass
    # would be host code the gate refuses, so the run ends after the baseline instead of searching.
    folder = tmp_path / "no_launch"
    shutil.copytree(PROBLEMS / "grid_int", folder)
    source = (folder / "candidate.py").read_text()
    launch = next(line for line in source.splitlines() if "tanh2_kernel[" in line)
    indent = launch[: len(launch) - len(launch.lstrip())]
    (folder / "candidate.py").write_text(source.replace(launch, f"{indent}out.copy_(torch.tanh(x) * 3)"))
    config = RepairConfig(strategy="offline", workers=2, kb_path=str(tmp_path / "kb"))
    result = repair(folder, None, config, trace=tmp_path / "trace.jsonl")
    assert result.status == "unrepaired" and result.stop_reason == "no_kernel_launch", result.stop_reason
    assert result.attempts == [] and "never launches a kernel" in result.error


def test_a_missing_import_goes_after_the_leading_imports_not_after_a_late_one() -> None:
    # Generated files (and importers' wrappers) append imports at the end; the name is used before them.
    source = '"""doc"""\nimport torch\n\n\ndef f(x: Optional[int] = None):\n    return x\n\n\nimport math\n'
    crash = {"class": "import_error", "phase": "import", "message": "name 'Optional' is not defined"}
    context = RuleContext.from_reference("", {"verdict": "compile_error", "crash": crash})
    (rewrite,) = propose(source, ["missing_import"], context)
    lines = rewrite.source.splitlines()
    assert lines.index("from typing import Optional") == 2 < lines.index("def f(x: Optional[int] = None):")


def test_an_argument_on_the_wrong_parameter_goes_by_the_reference_name_and_sizes_are_derived() -> None:
    # The generation put a size before eps: `1e-06` lands on N_SIZE, and the crash is a TypeError in range().
    reference = "def norm(x, w, eps=1e-6):\n    return x\n\n\nclass Model:\n    def forward(self, x, w):\n"
    reference += "        return norm(x, w, 1e-06)\n"
    source = "import torch\n\n\ndef norm(x, w, N_SIZE, eps=1e-5, BLOCK_N=128):\n    return x\n\n\n"
    source += "class ModelNew:\n    def forward(self, x0, x1):\n        return norm(x0, x1, 1e-06)\n"
    crash = {"exception": "TypeError", "message": "'float' object cannot be interpreted as an integer"}
    context = RuleContext.from_reference(reference, {"verdict": "runtime_error", "crash": crash})
    calls = [rw.source.splitlines()[-1].strip() for rw in propose(source, ["entry_arguments"], context)]
    assert calls == ["return norm(x0, x1, x0.shape[-1], 1e-06)"]
    # A dtype or device the caller was to pass comes from the first tensor.
    typed = source.replace("N_SIZE, eps=1e-5", "dtype, eps=1e-5")
    assert [rw.source.splitlines()[-1].strip() for rw in propose(typed, ["entry_arguments"], context)] == [
        "return norm(x0, x1, x0.dtype, 1e-06)"
    ]
    # Arguments that already line up are left alone whatever crashed.
    aligned = source.replace("N_SIZE, eps=1e-5", "eps=1e-5, N_SIZE=None")
    assert propose(aligned, ["entry_arguments"], context) == []


def test_a_fix_that_turns_the_crash_into_a_hang_gets_the_next_fix_on_top(evaluator: Evaluator) -> None:
    # Removing the CUDA assert lets `k[grid, BLOCK]` run: grid x BLOCK programs, a hang on the light case.
    problem = load_problem(PROBLEMS / "hang_after_fix")
    report = evaluator.evaluate(problem, tier="light").to_dict()

    def evaluate(src: str, tier: str) -> dict[str, Any]:
        return evaluator.evaluate(problem.with_candidate(src), tier=tier).to_dict()  # type: ignore[arg-type]

    request = PatchRequest(
        "t", problem.reference_source, problem.candidate_source, report, [], [], [], [], [], "", set(), {}, 6
    )
    outcome = CrashPatcher(evaluate, workers=2).propose(request)
    assert outcome.proposal is not None
    assert "cuda" in outcome.proposal.description and "block configuration" in outcome.proposal.description
    assert evaluate(outcome.proposal.source, "light")["verdict"] == "pass"


def test_an_autograd_function_entry_is_applied_with_the_arguments_by_the_reference_names() -> None:
    reference = "def norm(x, w, eps):\n    return x\n\n\nclass Model:\n    def forward(self, x, w):\n"
    reference += "        return norm(x, w, 1e-06)\n"
    source = "import torch\n\n\nclass NormFn(torch.autograd.Function):\n    @staticmethod\n"
    source += "    def forward(ctx, x, w, eps=1e-5):\n        k[(1,)](x, w)\n        return x\n\n\n"
    source += "class ModelNew:\n    def forward(self, x0, x1):\n        return norm(x0, x1, 1e-06)\n"
    crash = {"exception": "NameError", "message": "name 'norm' is not defined"}
    context = RuleContext.from_reference(reference, {"verdict": "runtime_error", "crash": crash})
    calls = [rw.source.splitlines()[-1].strip() for rw in propose(source, ["entry_class"], context)]
    assert calls == ["return NormFn.apply(x0, x1, 1e-06)"]


def test_a_wrapper_that_unpacks_more_dimensions_than_it_gets_is_given_leading_ones() -> None:
    source = "def f(x):\n    B, T, C = x.shape\n    y = x * 2\n    return y.reshape_as(x)\n"
    message = "not enough values to unpack (expected 3, got 2)"
    crash = {"line": 2, "exception": "ValueError", "message": message}
    context = RuleContext.from_reference("", {"verdict": "runtime_error", "crash": crash})
    rewrites = propose(source, ["flatten_leading_dims"], context)
    assert len(rewrites) == 1
    namespace: dict = {}
    exec(rewrites[0].source, namespace)  # the test's own three lines, not a candidate
    x = torch.arange(6.0).reshape(2, 3)
    assert torch.equal(namespace["f"](x), x * 2)


def test_a_matmul_that_takes_its_output_and_sizes_gets_them_from_its_operands() -> None:
    reference = "def mm(a, b):\n    return a @ b\n\n\nclass Model:\n    def forward(self, a, b):\n"
    reference += "        return mm(a, b)\n"
    source = "import torch\n\n\ndef mm(C, A, B, M, N, K, BLOCK_M=64):\n    k[(1,)](C, A, B, M, N, K)\n\n\n"
    source += "class ModelNew:\n    def forward(self, a, b):\n        return mm(a, b)\n"
    message = "mm() missing 4 required positional arguments: 'B', 'M', 'N', 'K'"
    crash = {"exception": "TypeError", "message": message}
    context = RuleContext.from_reference(reference, {"verdict": "runtime_error", "crash": crash})
    rewrites = propose(source, ["entry_arguments"], context)
    assert [line.strip() for line in rewrites[0].source.splitlines()[-3:]] == [
        "out = a.new_empty((a.shape[0], b.shape[1]))",
        "mm(out, a, b, a.shape[0], b.shape[1], a.shape[1])",
        "return out",
    ]
