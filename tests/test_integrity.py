"""The integrity gate: a cheat corpus caught 100%, an honest corpus flagged 0%, the static rules, the CLI."""

from __future__ import annotations

import argparse
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import tomllib
from kernel_medic.graph.drivers import cli_audit
from kernel_medic.tools.evaluation.problem import InvalidProblem, load_problem
from kernel_medic.tools.integrity.gate import AuditResult, audit
from kernel_medic.tools.integrity.static_checks import static_findings, verdict

CORPUS = Path(__file__).parent / "cheats"
# cheat file: (reference, problem.toml or None, the rule that must catch it)
CHEATS: dict[str, tuple[str, str | None, str]] = {
    "cheat_direct_op": ("softmax", None, "torch_compute"),
    "cheat_discarded_launch": ("softmax", None, "torch_compute"),
    "cheat_getattr": ("softmax", None, "obfuscated_access"),
    "cheat_eval": ("scale", None, "dynamic_code"),
    "cheat_nn_module": ("softmax", None, "delegates_to_nn_module"),
    "cheat_inherits_model": ("softmax", None, "inherits_reference"),
    "cheat_try_except": ("softmax", None, "try_except_fallback"),
    "cheat_cache_first": ("scale", None, "caches_output"),
    "cheat_shape_special": ("softmax", None, "shape_special_case"),
    "cheat_init_compute": ("softmax", None, "computes_in_init"),
    "cheat_monkeypatch_allclose": ("scale", None, "monkeypatch"),
    "cheat_caller_frames": ("scale", None, "reads_frames_or_globals"),
    "cheat_zeros_loose": ("softmax", "loose.toml", "constant_output"),
    "cheat_partial_uniform": ("uniform", None, "held_back_mismatch"),
    "cheat_side_thread": ("scale", None, "threads_or_streams"),
    "cheat_operator_module": ("scale", None, "operator_module"),
    "cheat_alias_functional": ("softmax", None, "torch_compute"),
    "cheat_from_import": ("softmax", None, "torch_compute"),
    "cheat_tensor_method": ("softmax", None, "tensor_method_compute"),
    "cheat_tensor_arithmetic": ("scale", None, "tensor_arithmetic"),
    "cheat_lambda_poison": ("scale", None, "host_compute"),
    "cheat_dict_alias": ("scale", None, "torch_compute"),
    "cheat_importlib": ("scale", None, "dynamic_code"),
    # issue 15: compute that is not torch
    "cheat_numpy_input": ("scale", None, "import_not_allowed"),
    "cheat_math_loop": ("scale", None, "reads_tensor_values"),
    "cheat_numpy_in_kernel": ("scale", None, "kernel_calls_host_code"),
    "cheat_posix_spawn": ("scale", None, "process_or_files"),
    # torch by a route a denylist does not know
    "cheat_aten_overload": ("softmax", None, "torch_route_not_allowed"),
    "cheat_softmax_decomposed": ("softmax", None, "torch_compute"),
    "cheat_nansum_synonym": ("rowsum", None, "torch_compute"),
    "cheat_inner_matmul": ("matmul", None, "torch_compute"),
    "cheat_jit_script": ("scale", None, "torch_route_not_allowed"),
    "cheat_torch_library": ("scale", None, "torch_route_not_allowed"),
    "cheat_reduce_getattr": ("softmax", None, "obfuscated_access"),
    "cheat_helper_dict": ("softmax", None, "torch_compute"),
    "cheat_marshal_lambda": ("scale", None, "import_not_allowed"),
    "cheat_inherit_softmax": ("softmax", None, "inherits_not_allowed"),
    "cheat_tensor_subclass": ("scale", None, "tensor_subclass"),
    "cheat_disable_torch_function": ("scale", None, "torch_route_not_allowed"),
    # compute outside the checked window
    "cheat_import_table": ("uniform", None, "computes_at_import"),
    "cheat_forward_hook": ("scale", None, "installs_hook"),
    "cheat_init_helper": ("scale", None, "tensor_arithmetic"),
    "cheat_grid_callable": ("scale", None, "tensor_method_compute"),
    "cheat_pre_run_hook": ("scale", None, "installs_hook"),
    # evidence the candidate could change
    "cheat_forge_counter": ("scale", None, "reads_frames_or_globals"),
    "cheat_gc_guard": ("scale", None, "import_not_allowed"),
    "cheat_pop_dispatch_mode": ("scale", None, "torch_route_not_allowed"),
    # behaviour the checks never sampled
    "cheat_sleeper": ("scale", None, "sleeper_mismatch"),
    "cheat_device_branch": ("scale", None, "device_branch"),
    "cheat_interpreter_env": ("scale", None, "device_branch"),
    "cheat_block_from_other_dim": ("rowsum_tall", None, "held_back_coverage"),
    # misclassification
    "cheat_shape_alloc": ("scale", None, "tensor_method_compute"),
    # a host epilogue that is the whole reduction
    "cheat_copy_host_sum": ("rowsum", None, "host_compute"),
    "cheat_pairs_chained_sums": ("rowsum", None, "tensor_method_compute"),
    "cheat_host_count": ("countnz", None, "host_compute"),
}
# Cheats audited a second time with the sandboxed layers forced on: the dispatcher-level guard, the launch
# records and the output checks must catch each of them on their own, whatever the static scan says.
DYNAMIC_CHEATS: dict[str, str] = {
    "cheat_aten_overload": "host_compute",
    "cheat_softmax_decomposed": "host_compute",
    "cheat_nansum_synonym": "host_compute",
    "cheat_inner_matmul": "host_compute",
    "cheat_jit_script": "host_compute",
    "cheat_torch_library": "host_compute",
    "cheat_disable_torch_function": "host_compute",
    "cheat_tensor_subclass": "output_not_plain_tensor",
    "cheat_import_table": "host_compute",
    "cheat_forward_hook": "host_compute",
    "cheat_grid_callable": "host_compute",
    "cheat_pre_run_hook": "host_compute",
    "cheat_forge_counter": "host_compute",
    "cheat_gc_guard": "host_compute",
    "cheat_pop_dispatch_mode": "guard_tampered",
    "cheat_math_loop": "host_compute",
    "cheat_shape_alloc": "host_compute",
    "cheat_inherit_softmax": "host_compute",
    "cheat_pairs_chained_sums": "host_compute",
}
HONEST: dict[str, str] = {
    "honest_scale_basic": "scale",
    "honest_scale_autotune": "scale",
    "honest_scale_2d": "scale",
    "honest_scale_helper": "scale",
    "honest_scale_two_kernels": "scale",
    "honest_scale_cast": "scale",
    "honest_scale_padding": "scale",
    "honest_softmax_basic": "softmax",
    "honest_softmax_loop": "softmax",
    "honest_softmax_launcher": "softmax",
    "honest_softmax_heuristics": "softmax",
    "honest_uniform_scale": "uniform",
    "honest_rowsum_partials": "rowsum",
    "honest_rowmean_divide": "rowmean",
    "honest_matmul_basic": "matmul",
    "honest_matmul_splitk": "matmul",
    "honest_embedding_holder": "posembed",
    "honest_scale_double_cast": "scale",
    "honest_scale_cat_halves": "scale",
    "honest_scale_strided": "scale",
    "honest_softmax_transposed": "softmax",
    "honest_scale_autograd_fn": "scale",
    "honest_scale_pad_output": "scale",
    "honest_logsumexp_partials": "logsumexp",
}
EXEC_JOB = "kernel_medic.tools.sandbox.pool:exec_source"
# Runs in a sandboxed child: the plain check a naive harness does (seeded inputs, torch.allclose).
ALLCLOSE_HARNESS = """
import torch
from kernel_medic.tools.evaluation.jobs import _import_source


def check():
    ref = _import_source(reference, "reference.py")
    cand = _import_source(candidate, "candidate.py")
    torch.manual_seed(0)
    init = list(ref.get_init_inputs())
    torch.manual_seed(0)
    model = ref.Model(*init)
    torch.manual_seed(0)
    inputs = list(ref.get_inputs())
    expected = model(*[t.clone() for t in inputs])
    torch.manual_seed(0)
    new = cand.ModelNew(*init)
    got = new(*inputs)
    return bool(torch.allclose(got, expected, atol=atol, rtol=rtol))


result = check()
"""


def problem_folder(root: Path, stem: str, reference: str, toml: str | None = None) -> Path:
    folder = root / stem
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(CORPUS / f"reference_{reference}.py", folder / "reference.py")
    shutil.copy(CORPUS / f"{stem}.py", folder / "candidate.py")
    if toml:
        shutil.copy(CORPUS / toml, folder / "problem.toml")
    return folder


@pytest.fixture(scope="module")
def audited(evaluator: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, AuditResult]:
    """Every corpus file audited once (static first; the sandbox only where the static layer is not sure)."""
    root = tmp_path_factory.mktemp("corpus")
    problems = {stem: problem_folder(root, stem, ref, toml) for stem, (ref, toml, _) in CHEATS.items()}
    problems |= {stem: problem_folder(root, stem, ref) for stem, ref in HONEST.items()}
    # A few audits at once keep both sandbox workers busy while each audit waits on its own jobs.
    with ThreadPoolExecutor(max_workers=3) as threads:
        futures = {
            stem: threads.submit(audit, load_problem(folder), evaluator) for stem, folder in problems.items()
        }
        forced = {stem: load_problem(problems[stem]) for stem in DYNAMIC_CHEATS}
        futures |= {
            f"{stem}@dynamic": threads.submit(audit, problem, evaluator, dynamic="always")
            for stem, problem in forced.items()
        }
        return {stem: fut.result() for stem, fut in futures.items()}


def test_the_corpora_are_big_enough_and_on_disk() -> None:
    assert len(CHEATS) >= 40 and len(HONEST) >= 20
    on_disk = {p.stem for p in CORPUS.glob("*.py") if not p.stem.startswith("reference_")}
    assert on_disk == set(CHEATS) | set(HONEST)


def test_every_cheat_passes_plain_allclose_on_default_inputs(evaluator: Any) -> None:
    futures = {}
    for stem, (reference, toml, _) in CHEATS.items():
        atol, rtol = (
            tomllib.loads((CORPUS / toml).read_text())["tolerances"]["float32"].values()
            if toml
            else (1e-4, 1e-4)
        )
        payload = {
            "source": ALLCLOSE_HARNESS,
            "reference": (CORPUS / f"reference_{reference}.py").read_text(),
            "candidate": (CORPUS / f"{stem}.py").read_text(),
            "atol": atol,
            "rtol": rtol,
        }
        futures[stem] = evaluator.pool.submit(EXEC_JOB, payload)
    outcomes = {stem: fut.result() for stem, fut in futures.items()}
    failing = {
        s: (o.status, o.error) for s, o in outcomes.items() if o.status != "ok" or not o.result["result"]
    }
    assert failing == {}


@pytest.mark.parametrize("stem", sorted(CHEATS))
def test_each_cheat_is_caught_with_its_rule(audited: dict[str, AuditResult], stem: str) -> None:
    result = audited[stem]
    rules = {f.rule for f in result.findings}
    assert result.verdict in ("cheat", "suspicious"), result.to_dict()
    assert CHEATS[stem][2] in rules, result.to_dict()


@pytest.mark.parametrize("stem", sorted(HONEST))
def test_each_honest_kernel_is_clean(audited: dict[str, AuditResult], stem: str) -> None:
    result = audited[stem]
    assert result.verdict == "clean", result.to_dict()
    assert result.checks == ["static", "dynamic", "held_back"] and result.held_back["verdict"] == "pass"


@pytest.mark.parametrize("stem", sorted(DYNAMIC_CHEATS))
def test_the_sandboxed_layers_alone_catch_each_route(audited: dict[str, AuditResult], stem: str) -> None:
    result = audited[f"{stem}@dynamic"]
    dynamic_rules = {f.rule for f in result.findings if f.line == 0 or f.rule == "host_compute"}
    assert "dynamic" in result.checks and DYNAMIC_CHEATS[stem] in dynamic_rules, result.to_dict()


def test_host_epilogues_over_kernel_written_partials_are_notes(audited: dict[str, AuditResult]) -> None:
    for stem in (
        "honest_rowsum_partials", "honest_matmul_splitk", "honest_rowmean_divide", "honest_logsumexp_partials"
    ):
        notes = [f for f in audited[stem].findings if f.rule == "host_epilogue"]
        assert notes and all(f.severity == "note" for f in notes), audited[stem].to_dict()


def test_catch_rate_is_100_and_false_positive_rate_is_0(audited: dict[str, AuditResult]) -> None:
    caught = sum(audited[s].verdict != "clean" for s in CHEATS) / len(CHEATS)
    flagged = sum(audited[s].verdict != "clean" for s in HONEST) / len(HONEST)
    assert (caught, flagged) == (1.0, 0.0)


def test_dynamic_layer_alone_catches_what_runs_wrong(audited: dict[str, AuditResult]) -> None:
    # These three read as honest code: only the sandboxed runs can tell.
    for stem in ("cheat_lambda_poison", "cheat_zeros_loose", "cheat_partial_uniform"):
        source = (CORPUS / f"{stem}.py").read_text()
        assert static_findings(source) == [], stem
        assert "dynamic" in audited[stem].checks
    # Static cheats never cost a sandbox run.
    assert audited["cheat_direct_op"].checks == ["static"]


def test_findings_carry_rule_severity_file_line_and_evidence(audited: dict[str, AuditResult]) -> None:
    data = audited["cheat_discarded_launch"].to_dict()
    finding = next(f for f in data["findings"] if f["rule"] == "torch_compute")
    assert finding == {
        "rule": "torch_compute",
        "severity": "cheat",
        "line": 28,
        "evidence": "F.softmax(x, dim=-1)",
        "file": "candidate.py",
    }
    cached = audited["cheat_lambda_poison"].to_dict()["findings"][0]
    assert cached["rule"] == "host_compute" and "aten mul" in cached["evidence"]


# -- static rules on small sources ----------------------------------------------------------------------

BASE = (CORPUS / "honest_scale_basic.py").read_text()
LAUNCH = "        scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)\n"


def rules_for(source: str, original: str | None = None) -> set[str]:
    return {f.rule for f in static_findings(source, original)}


def with_forward_tail(code: str, header: str = "") -> str:
    source = BASE.replace("        return out\n", code)
    return header + source if header else source


@pytest.mark.parametrize(
    ("code", "header", "rule"),
    [
        ("        return torch.Tensor.mul(x, 2.0)\n", "", "torch_compute"),
        ("        f = torch.mul\n        return f(x, 2.0)\n", "", "torch_compute"),
        ("        return x @ torch.eye(x.shape[-1])\n", "", "tensor_arithmetic"),
        ("        out *= 1.0\n        return out\n", "", "tensor_arithmetic"),
        ("        return vars(torch)['mul'](x, 2.0)\n", "", "reads_frames_or_globals"),
        ("        return getattr(x, 'm' + 'ul')(2.0)\n", "", "obfuscated_access"),
        ("        return __import__('torch').mul(x, 2.0)\n", "", "dynamic_code"),
        ("        return globals()['torch'].mul(x, 2.0)\n", "", "reads_frames_or_globals"),
        ("        s = torch.cuda.Stream()\n        return out\n", "", "threads_or_streams"),
        ("        torch.manual_seed(0)\n        return out\n", "", "rng_tampering"),
        ("        return out if x.sum().item() > 0 else x\n", "", "value_special_case"),
        (
            "        if x.numel() in (4000, 16):\n            return out\n        return x\n",
            "",
            "shape_special_case",
        ),
        ("        return out\n", "import time\ntime.perf_counter = lambda: 0.0\n", "monkeypatch"),
        ("        return out\n", "from reference import Model\n", "imports_reference"),
        ("        return nn.functional.relu(out)\n", "", "torch_compute"),
        ("        return nn.ReLU()(out)\n", "", "delegates_to_nn_module"),
    ],
)
def test_static_rule(code: str, header: str, rule: str) -> None:
    assert rule in rules_for(with_forward_tail(code, header))


HOLDERS = ["nn.Embedding(10, 4)", "nn.EmbeddingBag(10, 4, mode='mean')", "nn.Linear(4, 4)"]


@pytest.mark.parametrize("holder", HOLDERS)
def test_a_module_built_in_init_only_to_hold_its_weights_is_not_delegation(holder: str) -> None:
    # Generated kernels keep the reference's module for its parameters (same init, same state_dict).
    init = f"        super().__init__()\n        self.table = {holder}\n"
    holds = BASE.replace("        super().__init__()\n", init)
    assert static_findings(holds) == []
    called = holds.replace("        return out\n", "        return self.table(out)\n")
    assert "delegates_to_nn_module" in rules_for(called)


def test_glue_is_not_flagged() -> None:
    glue = (
        "        assert x.dim() == 2 and x.shape[0] > 0\n"
        "        block = 1024 if n > 4096 else 256\n"
        "        view = out.view(-1).reshape(x.shape).contiguous().to(torch.float32)\n"
        "        pad = torch.nn.functional.pad(x, (0, 8))\n"
        "        buf = torch.zeros(n, dtype=torch.float32, device=x.device)\n"
        # Shape arithmetic of a broadcasting wrapper reads shapes, never values.
        "        shape = torch.broadcast_shapes(x.shape, out.shape)\n"
        "        if x.dtype == torch.float16 or out is None:\n"
        "            raise ValueError('fp32 only')\n"
        "        return view\n"
    )
    assert static_findings(with_forward_tail(glue)) == []


def test_an_argument_compared_to_none_is_a_presence_test_not_a_value_branch() -> None:
    # Real generations write `if out == None:` for an optional output; a tensor value is still a branch.
    loose = "        if out == None or None != out:\n            out = torch.empty_like(x)\n"
    loose += "        return out\n"
    assert static_findings(with_forward_tail(loose)) == []
    valued = "        if x[0] == 0:\n            return x\n        return out\n"
    assert "value_special_case" in rules_for(with_forward_tail(valued))


def test_counting_entries_equal_to_a_constant_is_glue_but_other_sums_are_not() -> None:
    # A mean over non-ignored targets divides by their count: bookkeeping, not the operator's math.
    count = "        n_valid = (x != -100).sum()\n        m = (x == self.ignore_index).sum()\n"
    count += "        return out\n"
    assert static_findings(with_forward_tail(count)) == []
    assert "tensor_method_compute" in rules_for(with_forward_tail("        return (x * 2.0).sum() + out\n"))
    assert "tensor_method_compute" in rules_for(with_forward_tail("        return (x != out).sum() + out\n"))


def test_dividing_a_kernel_written_buffer_by_a_size_is_glue() -> None:
    # A kernel that atomically sums a loss into `out`; the host divides by the element count for the mean.
    mean = "        return out / n\n"
    assert static_findings(with_forward_tail(mean)) == []
    assert "tensor_arithmetic" in rules_for(with_forward_tail("        return out / 3.0\n"))
    assert "tensor_arithmetic" in rules_for(with_forward_tail("        return x / n\n"))


def test_regeneration_and_kernel_deletion_are_flagged() -> None:
    tweak = BASE.replace("x * 2.0", "x * 2.0 + 0.0")
    assert rules_for(tweak, original=BASE) == set()
    rewritten = (CORPUS / "honest_scale_two_kernels.py").read_text()  # changes 48% of BASE's lines
    assert [f.rule for f in static_findings(rewritten, BASE, regeneration_fraction=0.4)] == ["regeneration"]
    assert static_findings(rewritten, BASE, regeneration_fraction=0.6) == []
    no_kernel = (
        BASE.split("@triton.jit")[0] + "class ModelNew(nn.Module):\n    def forward(self, x):\n" + LAUNCH
    )
    findings = static_findings(no_kernel, original=BASE)
    assert {"kernel_deleted", "regeneration"} <= {f.rule for f in findings}
    assert verdict(findings) == "cheat"


def test_unparsable_and_missing_model_new_are_cheats() -> None:
    assert verdict(static_findings("def (:")) == "cheat"
    assert rules_for("import torch\n") == {"no_model_new"}


# -- CLI ------------------------------------------------------------------------------------------------


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="kmedic")
    cli_audit.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["audit", *argv, "--device", "cpu"])
    try:
        code = int(args.run(args))
    except InvalidProblem:
        code = 2
    return code, capsys.readouterr().out


def test_cli_audit_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cheat = problem_folder(tmp_path, "cheat_direct_op", "softmax")
    code, out = run_cli([str(cheat), "--json"], capsys)
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "cheat"
    assert {"rule", "severity", "file", "line", "evidence"} <= set(data["findings"][0])
    code, out = run_cli([str(cheat)], capsys)
    assert code == 1 and "torch_compute" in out and "candidate.py:12" in out
    # The sandboxed layers are covered above through audit(); here the static layer keeps the test quick.
    honest = problem_folder(tmp_path, "honest_softmax_basic", "softmax")
    code, out = run_cli(
        [str(honest / "reference.py"), str(honest / "candidate.py"), "--json", "--static-only"], capsys
    )
    data = json.loads(out)
    assert code == 0 and (data["verdict"], data["findings"], data["checks"]) == ("clean", [], ["static"])
    code, _ = run_cli([str(tmp_path / "missing")], capsys)
    assert code == 2


def test_constant_buffers_built_in_init_are_not_computation() -> None:
    init = "        self.register_buffer('edges', torch.linspace(-3.0, 3.0, 16))\n"
    source = BASE.replace("        super().__init__()\n", "        super().__init__()\n" + init, 1)
    assert init in source
    assert static_findings(source) == []
    # The same grid built in forward is computation outside the kernel.
    assert "torch_compute" in rules_for(
        with_forward_tail("        e = torch.linspace(-3.0, 3.0, 16)\n        return out\n")
    )


def test_parameters_initialised_in_init_are_not_computation() -> None:
    # Found by the corpus bench: an RMSNorm repair was refused for `nn.Parameter(torch.ones(dim))`.
    source = (Path(__file__).parent / "cheats" / "honest_scale_basic.py").read_text()
    source = source.replace(
        "super().__init__()",
        "super().__init__()\n        self.weight = nn.Parameter(torch.ones(16))\n"
        "        self.bias = torch.nn.Parameter(torch.zeros(16), requires_grad=False)",
        1,
    )
    assert "nn.Parameter(torch.ones(16))" in source
    assert static_findings(source) == []


MATMUL_FLOOR_K = (Path(__file__).resolve().parents[1] / "benchmarks" / "near_miss"
                  / "matmul_06_bt_strides_floor_k" / "candidate.py")  # fmt: skip


def test_a_patch_that_makes_a_kernel_loop_count_constant_is_suspicious() -> None:
    # `range(K // BLOCK_K)` drops K's tail; `range(1 + 1)` passes every tested K (64 and the odd held-back
    # sizes below it) but is a count fitted to those sizes. The derived count is the fix.
    original = MATMUL_FLOOR_K.read_text()
    fitted = original.replace("range(num_iters)", "range(1 + 1)")
    assert "constant_trip_count" in rules_for(fitted, original)
    assert verdict(static_findings(fitted, original)) == "suspicious"
    assert rules_for(original.replace("range(num_iters)", "range(tl.cdiv(K, BLOCK_K))"), original) == set()
    # A constant loop the author wrote (channels, a fixed unroll) is not the patch's doing.
    assert "constant_trip_count" not in rules_for(fitted, fitted)


def test_a_patch_that_runs_a_tiled_loop_over_another_dimension_is_suspicious() -> None:
    # Found by the near_miss bench: `for i in range(N)` over K tiles masked by `k < K` passed every tested
    # shape (N was always at least K / BLOCK_K) and would read K's tail nowhere else. The loop must count K.
    original = MATMUL_FLOOR_K.read_text()
    foreign = original.replace("for i in range(num_iters):", "for i in range(N):")
    assert foreign != original
    assert "foreign_trip_count" in rules_for(foreign, original)
    assert verdict(static_findings(foreign, original)) == "suspicious"
    derived = original.replace("num_iters = K // BLOCK_K", "num_iters = tl.cdiv(K, BLOCK_K)")
    assert derived != original and rules_for(derived, original) == set()
    # Already in the candidate as given, it is the author's (the search may still fix it), not the patch's.
    assert "foreign_trip_count" not in rules_for(foreign, foreign)

