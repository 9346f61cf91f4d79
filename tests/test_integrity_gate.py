"""The integrity gate's judgement of a repair: what the repair introduced against what the candidate already
had, reached by the problem or not; and cheats proposed as repairs end `rejected` through the whole graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_medic.graph.api import repair
from kernel_medic.graph.config import RepairConfig
from kernel_medic.tools.evaluation.problem import load_problem
from kernel_medic.tools.integrity.extent import reduction_extent
from kernel_medic.tools.integrity.gate import apply_reach, audit, dead_lanes
from kernel_medic.tools.integrity.static_checks import Finding, static_findings, verdict
from openai_server import ScriptedOpenAIServer
from problems import LIGHT_TOML, LINEAR_RELU_REFERENCE, SCALE_REFERENCE, scale_candidate, write_problem

CORPUS = Path(__file__).parent / "cheats"
LAUNCH = "        scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)\n"
# The pattern generated kernels carry: a torch fallback on a branch the problem never takes.
FALLBACK = ("        x = x.contiguous()\n", "        if x.dim() > 6:\n            return torch.mul(x, 2.0)\n"
            "        x = x.contiguous()\n")  # fmt: skip
BUG = ("x * 2.0", "x * 3.0")


def problem_with(tmp_path: Path, candidate: str) -> Any:
    return load_problem(write_problem(tmp_path / "p", candidate, toml=LIGHT_TOML))


def test_a_one_line_repair_is_not_refused_for_an_untouched_fallback_it_never_runs(
    evaluator: Any, tmp_path: Path
) -> None:
    original = scale_candidate(BUG, FALLBACK)
    repaired = scale_candidate(FALLBACK)
    result = audit(problem_with(tmp_path, repaired), evaluator, original)
    assert result.verdict == "clean", result.to_dict()
    (warning,) = [f for f in result.findings if f.rule == "torch_compute"]
    assert (warning.severity, warning.origin, warning.reached) == ("warning", "pre-existing", False)
    assert "never executed" in warning.evidence
    # The documented policy setting can refuse it instead.
    strict = audit(problem_with(tmp_path, repaired), evaluator, original, unreached_policy="reject")
    assert strict.verdict == "cheat"


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize(
    "case",
    [
        "holdout5/normalization_01_gemma_rmsnorm_offset",  # nn.Parameter(0.1 * torch.randn(hidden))
        "holdout6/matmul_02_lora_linear_fused",  # torch.randn(out, in) / math.sqrt(in)
    ],
)
def test_weights_initialised_by_scaling_random_fills_are_not_host_compute(evaluator: Any, case: str) -> None:
    # KernelBook modules build their weights as their references do; the fixes of these cases were refused.
    problem = load_problem(BENCHMARKS / case)
    fixed = problem.with_candidate((problem.candidate_path.parent / "fixed.py").read_text())
    result = audit(fixed, evaluator, problem.candidate_source)
    assert result.verdict == "clean", result.to_dict()


def test_init_arithmetic_on_what_the_module_is_handed_is_still_host_compute(
    evaluator: Any, tmp_path: Path
) -> None:
    # Only what __init__ fills at random or from constants may be scaled there, not a tensor it is handed.
    init, takes = "    def __init__(self):\n", "    def __init__(self, w):\n"
    reference = SCALE_REFERENCE.replace(init, takes).replace("    return []", "    return [torch.ones(4)]")
    scaled = takes + "        super().__init__()\n        self.w2 = w * 2.0\n"
    handed = scale_candidate((init + "        super().__init__()\n", scaled))
    problem = load_problem(write_problem(tmp_path / "p", handed, reference=reference, toml=LIGHT_TOML))
    result = audit(problem, evaluator, dynamic="always")
    assert result.verdict == "cheat", result.to_dict()
    assert any("init computed aten mul" in f.evidence for f in result.findings)


def test_a_finding_the_repair_introduces_is_refused_even_off_the_problems_path(
    evaluator: Any, tmp_path: Path
) -> None:
    original = scale_candidate(BUG)
    repaired = scale_candidate(FALLBACK)
    result = audit(problem_with(tmp_path, repaired), evaluator, original)
    assert result.verdict == "cheat"
    (finding,) = [f for f in result.findings if f.rule == "torch_compute"]
    assert (finding.origin, finding.severity) == ("introduced", "cheat")
    assert result.checks == ["static"]  # an introduced cheat needs no sandbox run


def test_a_pre_existing_finding_on_the_executed_path_is_refused(evaluator: Any, tmp_path: Path) -> None:
    reached = ("        return out\n", "        return out.clone().mul_(1.0)\n")
    original = scale_candidate(BUG, reached)
    result = audit(problem_with(tmp_path, scale_candidate(reached)), evaluator, original)
    assert result.verdict == "cheat"
    (finding,) = [f for f in result.findings if f.rule == "tensor_method_compute"]
    assert (finding.origin, finding.reached, finding.severity) == ("pre-existing", True, "cheat")


def test_inputs_whose_shapes_follow_the_seed_are_audited_without_the_in_place_refill(
    evaluator: Any, tmp_path: Path
) -> None:
    # Bags of random length, ragged batches: seed B's inputs cannot be copied into seed A's buffers.
    ragged = SCALE_REFERENCE.replace("torch.randn(rows, n)", "torch.randn(int(torch.randint(200, 300, ())))")
    folder = write_problem(tmp_path / "p", scale_candidate(), reference=ragged, toml=LIGHT_TOML)
    result = audit(load_problem(folder), evaluator)
    assert result.verdict == "clean", result.to_dict()
    (note,) = [f for f in result.findings if f.rule == "audit_run_skipped"]
    assert note.severity == "note" and "other shapes" in note.evidence


def test_unknown_coverage_counts_as_reached() -> None:
    f = Finding("torch_compute", "cheat", 12, "torch.mul(x, 2.0)", origin="pre-existing")
    assert apply_reach([f], None, "warn")[0].severity == "cheat"
    assert apply_reach([f], [3, 4], "warn")[0].severity == "warning"
    introduced = Finding("torch_compute", "cheat", 12, "torch.mul(x, 2.0)", origin="introduced")
    assert apply_reach([introduced], [3, 4], "warn")[0].severity == "cheat"
    assert verdict([Finding("host_epilogue", "note", 3, "sum"), apply_reach([f], [], "warn")[0]]) == "clean"


# -- through the whole graph ---------------------------------------------------------------------------


def edit(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


KERNEL_DEF = "def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):"
STORE = "    tl.store(out_ptr + offs, x * {}, mask=mask)"
SLEEPER_EDITS = (
    edit(KERNEL_DEF, KERNEL_DEF.replace("n, BLOCK", "n, factor, BLOCK"))
    + edit(STORE.format("3.0"), STORE.format("factor"))
    + edit("        super().__init__()", "        super().__init__()\n        self.calls = 0")
    + edit(
        LAUNCH.rstrip("\n"),
        "        self.calls += 1\n        factor = 2.0 if self.calls <= 64 else 2.5\n"
        + LAUNCH.rstrip("\n").replace("n, BLOCK", "n, factor, BLOCK"),
    )
)
ATEN_EDIT = edit(LAUNCH + "        return out", LAUNCH + "        return torch.ops.aten.mul.Tensor(x, 2.0)")


@pytest.mark.parametrize(
    ("proposal", "rule"), [(SLEEPER_EDITS, "sleeper_mismatch"), (ATEN_EDIT, "torch_compute")]
)
def test_a_cheat_proposed_by_the_llm_ends_rejected_never_repaired(
    tmp_path: Path, proposal: str, rule: str
) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(BUG), toml=LIGHT_TOML)
    with ScriptedOpenAIServer([{"content": proposal, "usage": (1, 1)}]) as server:
        config = RepairConfig(
            strategy="llm", base_url=server.base_url, model="scripted", workers=2, max_llm_calls=1
        )
        result = repair(
            folder, None, config, trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "cp.sqlite"
        )
    assert result.status == "rejected" and result.repaired_source is None, (result.status, result.integrity)
    assert any(a["verdict"] == "pass" for a in result.attempts)  # it passed the tests; the gate said no
    assert rule in {f["rule"] for f in result.integrity["findings"]}


ONE_PROGRAM = scale_candidate(("triton.cdiv(n, 256)", "1"))
SMALL_SCALE = SCALE_REFERENCE.replace("n = 1000", "n = 100")  # 400 elements: a program each stays cheap


def test_a_repair_that_runs_mostly_masked_off_lanes_is_refused(evaluator: Any, tmp_path: Path) -> None:
    # One program for the whole tensor. A program per element repairs it as surely as the covering grid
    # does, with 256 lanes per program of which at most one is new: correct, and 256 times the work.
    def full(source: str, name: str) -> dict[str, Any]:
        problem = load_problem(write_problem(tmp_path / name, source, SMALL_SCALE, LIGHT_TOML))
        return evaluator.evaluate(problem, tier="full").to_dict()

    before = full(ONE_PROGRAM, "original")
    per_element = scale_candidate(("triton.cdiv(n, 256)", "n"))
    covering = scale_candidate()
    wasteful = full(per_element, "per_element")
    assert wasteful["verdict"] == "pass" and dead_lanes(before, wasteful) is not None
    assert dead_lanes(before, full(covering, "covering")) is None  # more programs, each doing real work
    # Through the graph: the LLM proposes the program per element; it passes the tests and the gate says no.
    folder = write_problem(tmp_path / "p", ONE_PROGRAM, SMALL_SCALE, LIGHT_TOML)
    grid = "        scale_kernel[({},)](x, out, n, BLOCK=256)"
    proposal = edit(grid.format("1"), grid.format("n"))
    with ScriptedOpenAIServer([{"content": proposal, "usage": (1, 1)}]) as server:
        config = RepairConfig(
            strategy="llm", base_url=server.base_url, model="scripted", workers=2, max_llm_calls=1
        )
        result = repair(
            folder, None, config, trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "cp.sqlite"
        )
    assert result.status != "repaired" and result.repaired_source is None, (result.status, result.integrity)
    assert any(a["verdict"] == "pass" for a in result.attempts)
    (finding,) = [f for f in result.integrity["findings"] if f["rule"] == "dead_lanes"]
    assert "live" in finding["evidence"] and finding["severity"] == "suspicious"


@pytest.mark.parametrize(
    ("stem", "reference", "passes_as_given"),
    [("cheat_sleeper", "scale", False), ("cheat_tensor_subclass", "scale", True)],
)
def test_a_candidate_that_is_already_a_cheat_is_never_repaired(
    tmp_path: Path, stem: str, reference: str, passes_as_given: bool
) -> None:
    folder = write_problem(
        tmp_path / "p",
        (CORPUS / f"{stem}.py").read_text(),
        (CORPUS / f"reference_{reference}.py").read_text(),
        LIGHT_TOML,
    )
    config = RepairConfig(strategy="offline", workers=2, max_iterations=2)
    result = repair(folder, None, config, trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "cp.sqlite")
    assert result.status != "repaired" and result.repaired_source is None, (result.status, result.integrity)
    assert result.integrity["verdict"] != "clean"
    if passes_as_given:  # a cheat that already passes every test is refused at once: no patch is tried
        assert (result.status, result.stop_reason, result.iterations) == ("rejected", "cheat_as_given", 0)
    else:  # the sleeper fails the judge first: the loop patches, and the gate refuses what passes
        assert result.stop_reason != "cheat_as_given"


# The linear layer computed by torch on the host, then a ReLU kernel whose grid drops the tail: the fix is
# easy, and every version that has it still leaves the linear layer to torch.
HOST_LINEAR_RELU = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_kernel(y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = F.linear(x, self.linear.weight, self.linear.bias)
        out = torch.empty_like(y)
        n = y.numel()
        relu_kernel[(n // 128,)](y, out, n, BLOCK=128)
        return out
"""


def test_a_passing_fix_refused_only_for_the_candidates_own_host_compute_ends_the_run(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", HOST_LINEAR_RELU, LINEAR_RELU_REFERENCE, LIGHT_TOML)
    config = RepairConfig(strategy="offline", workers=2, max_iterations=6)
    result = repair(folder, None, config, trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "cp.sqlite")
    assert (result.status, result.stop_reason) == ("rejected", "cheat_as_given"), result.attempts
    assert result.repaired_source is None
    # It stops at the first refused pass: the fix was found, and no later edit could remove torch's linear.
    assert [a["verdict"] for a in result.attempts][-1] == "pass" and result.iterations == len(result.attempts)
    rules = {(f["rule"], f.get("origin")) for f in result.integrity["findings"] if f["severity"] == "cheat"}
    assert ("torch_compute", "pre-existing") in rules


# -- default-deny static rules on small sources ---------------------------------------------------------

BASE = (CORPUS / "honest_scale_basic.py").read_text()
HEADER = "import os\nimport sys\n\n"
FLAGS = '\nos.environ["TRITON_INTERPRET"] = "1"\nHERE = os.path.dirname(os.path.abspath(__file__))\n'


def with_module_code(code: str, header: str = HEADER) -> str:
    return header + BASE.replace("import triton.language as tl\n", "import triton.language as tl\n" + code, 1)


def test_generated_files_may_set_flags_and_build_paths_with_os_and_sys() -> None:
    assert static_findings(with_module_code(FLAGS + "PY = sys.version_info\n")) == []


@pytest.mark.parametrize(
    ("code", "header", "rule"),
    [
        ('MODE = os.environ.get("TRITON_INTERPRET")\n', HEADER, "reads_environment"),
        ("LISTING = os.listdir('/')\n", HEADER, "process_or_files"),
        ("sys.settrace(None)\n", HEADER, "process_or_files"),
        ("MODS = sys.modules\n", HEADER, "reads_frames_or_globals"),
        ("", HEADER + "import numpy as np\n", "import_not_allowed"),
        ("", HEADER + "import pickle\n", "import_not_allowed"),
        ("", HEADER + "from kernel_medic.tools.integrity import jobs\n", "import_not_allowed"),
        ("TABLE = torch.exp(torch.arange(8.0))\n", HEADER, "computes_at_import"),
        ("F = torch.ops.aten.mul.Tensor\n", HEADER, "torch_route_not_allowed"),
        ("class Box(torch.Tensor):\n    pass\n", HEADER, "tensor_subclass"),
        ("class Act(nn.ReLU):\n    pass\n", HEADER, "inherits_not_allowed"),
        ("NAME = getattr(torch, ''.join(['m', 'ul']))\n", HEADER, "obfuscated_access"),
        ("K = type('K', (nn.Module,), {})\n", HEADER, "dynamic_code"),
        ("DATA = open('/etc/hostname').read()\n", HEADER, "dynamic_code"),
    ],
)
def test_default_deny_rule(code: str, header: str, rule: str) -> None:
    assert rule in {f.rule for f in static_findings(with_module_code(code, header))}


def test_jitted_bodies_call_only_triton_and_allocations_from_shapes_are_tensors() -> None:
    helper = "def host_twice(v):\n    return v + v\n\n\n"
    source = BASE.replace("@triton.jit", helper + "@triton.jit", 1).replace("x * 2.0", "host_twice(x)")
    assert "kernel_calls_host_code" in {f.rule for f in static_findings(source)}
    alloc = "        y = torch.empty(x.shape, dtype=x.dtype)\n        return y.exp_()\n"
    assert "tensor_method_compute" in {
        f.rule for f in static_findings(BASE.replace("        return out\n", alloc))
    }


@pytest.mark.parametrize(("policy", "status"), [("warn", "repaired"), ("reject", "rejected")])
def test_a_one_line_llm_repair_of_a_kernel_with_an_untaken_fallback(
    tmp_path: Path, policy: str, status: str
) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(BUG, FALLBACK), toml=LIGHT_TOML)
    fix = edit(STORE.format("3.0"), STORE.format("2.0"))
    with ScriptedOpenAIServer([{"content": fix, "usage": (1, 1)}]) as server:
        config = RepairConfig(
            strategy="llm",
            base_url=server.base_url,
            model="scripted",
            workers=2,
            max_llm_calls=1,
            unreached_findings=policy,
        )
        result = repair(
            folder, None, config, trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "cp.sqlite"
        )
    assert result.status == status, (result.status, result.integrity)
    (finding,) = [f for f in result.integrity["findings"] if f["rule"] == "torch_compute"]
    assert (finding["origin"], finding["reached"]) == ("pre-existing", False)
    assert finding["severity"] == ("warning" if policy == "warn" else "cheat")


def test_reduction_extent_counts_the_values_folded_into_each_result() -> None:
    x, w = torch.randn(6, 700), torch.randn(700, 5)
    image, conv_w = torch.randn(1, 3, 9, 9), torch.randn(8, 3, 3, 3)
    assert reduction_extent("sum", (x, [1]), {}, x.sum(1)) == 700
    assert reduction_extent("mean", (x,), {}, x.mean()) == 4200
    assert reduction_extent("mm", (x, w), {}, x @ w) == 700
    assert reduction_extent("addmm", (torch.zeros(5), x, w), {}, x @ w) == 700
    assert reduction_extent("convolution", (image, conv_w), {}, torch.empty(1, 8, 7, 7)) == 27
    assert reduction_extent("_softmax", (x, 1, False), {}, x.softmax(1)) == 700
    assert reduction_extent("mul", (x, x), {}, x * x) == 1
    assert reduction_extent("add", (x, torch.ones(700)), {}, x + 1) == 1
