"""Problem loading: folder and two-path forms, problem.toml, and one-line errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_medic.tools.evaluation.problem import (
    InvalidProblem,
    Problem,
    ProblemConfig,
    load_config,
    load_problem,
)

REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 4
in_features = 64
out_features = 32


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
"""

CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x):
        return torch.relu(self.linear(x))
"""


def write_problem(folder: Path, reference: str = REFERENCE, candidate: str = CANDIDATE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference)
    (folder / "candidate.py").write_text(candidate)
    return folder


def error_of(*args: object, **kwargs: object) -> str:
    with pytest.raises(InvalidProblem) as info:
        load_problem(*args, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message and message.strip() == message
    return message


def test_folder_form_reads_sources_and_constants(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "linear_relu")
    problem = load_problem(folder)
    assert problem.name == "linear_relu"
    assert problem.reference_path == folder / "reference.py"
    assert problem.candidate_path == folder / "candidate.py"
    assert problem.reference_source == REFERENCE
    assert problem.candidate_source == CANDIDATE
    assert problem.config == ProblemConfig()
    assert problem.size_constants == {"batch_size": 4, "in_features": 64, "out_features": 32}


def test_two_path_form_names_problem_after_candidate(tmp_path: Path) -> None:
    (tmp_path / "ref.py").write_text(REFERENCE)
    (tmp_path / "attempt_7.py").write_text(CANDIDATE)
    problem = load_problem(str(tmp_path / "ref.py"), str(tmp_path / "attempt_7.py"))
    assert problem.name == "attempt_7"
    assert problem.candidate_source == CANDIDATE
    assert problem.config == ProblemConfig()


def test_problem_toml_values_land_in_config(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p")
    (folder / "problem.toml").write_text(
        'device = "cpu"\nseeds = [5, 6]\ntimeout_s = 30\nvalue_variants = false\n'
        "[tolerances.float32]\natol = 1e-4\nrtol = 2e-4\n"
        "[tolerances.bf16]\natol = 0.02\nrtol = 0.01\n"
        "[[input_sets]]\nbatch_size = 3\nin_features = 63\n"
        "[[input_sets]]\nout_features = 17\n"
    )
    config = load_problem(folder).config
    assert config.device == "cpu"
    assert config.seeds == (5, 6)
    assert config.timeout_s == 30
    assert config.value_variants is False
    assert config.noncontiguous == "warn"  # the default: run it, as a warning
    assert config.tolerances == {"float32": (1e-4, 2e-4), "bfloat16": (0.02, 0.01)}
    assert config.input_sets == ({"batch_size": 3, "in_features": 63}, {"out_features": 17})


def test_problem_toml_beside_candidate_is_used_in_two_path_form(tmp_path: Path) -> None:
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "reference.py").write_text(REFERENCE)
    (tmp_path / "cand").mkdir()
    (tmp_path / "cand" / "c.py").write_text(CANDIDATE)
    (tmp_path / "cand" / "problem.toml").write_text("seeds = [9]\n")
    assert load_problem(tmp_path / "ref" / "reference.py", tmp_path / "cand" / "c.py").config.seeds == (9,)


def test_problem_toml_beside_reference_judges_a_candidate_written_elsewhere(tmp_path: Path) -> None:
    # A candidate in a scratch folder is still a candidate of the problem: its promises (here strided inputs
    # required) hold, or a benchmark writing answers to a temporary folder judges them more softly.
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "reference.py").write_text(REFERENCE)
    (tmp_path / "ref" / "problem.toml").write_text('noncontiguous = "require"\nseeds = [4]\n')
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "c.py").write_text(CANDIDATE)
    config = load_problem(tmp_path / "ref" / "reference.py", tmp_path / "scratch" / "c.py").config
    assert config.noncontiguous == "require" and config.seeds == (4,)
    (tmp_path / "scratch" / "problem.toml").write_text("seeds = [9]\n")  # one beside the candidate wins
    assert load_problem(tmp_path / "ref" / "reference.py", tmp_path / "scratch" / "c.py").config.seeds == (9,)


def test_explicit_config_wins_over_problem_toml(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p")
    (folder / "problem.toml").write_text('device = "cuda"\n')
    explicit = ProblemConfig(device="cpu", seeds=(1,))
    assert load_problem(folder, config=explicit).config == explicit


def test_unknown_toml_key_names_key_and_file(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p")
    (folder / "problem.toml").write_text("seeds = [0]\ntolerance = 1e-3\n")
    message = error_of(folder)
    assert "tolerance" in message and str(folder / "problem.toml") in message


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ('device = "tpu"\n', "device"),
        ("seeds = []\n", "seeds"),
        ('seeds = [0, "1"]\n', "seeds"),
        ("timeout_s = -1\n", "timeout_s"),
        ('noncontiguous = "yes"\n', "noncontiguous"),
        ("[tolerances.float32]\natol = 1e-3\n", "rtol"),
        ("[tolerances.float32]\natol = 1e-3\nrtol = 1e-3\nbtol = 1\n", "btol"),
        ("[tolerances.int7]\natol = 1\nrtol = 1\n", "int7"),
        ("[[input_sets]]\ndim = 1.5\n", "input_sets[0].dim"),
        ("seeds = [0\n", "invalid TOML"),
    ],
)
def test_bad_toml_values_give_one_line_naming_key(tmp_path: Path, toml: str, needle: str) -> None:
    path = tmp_path / "problem.toml"
    path.write_text(toml)
    with pytest.raises(InvalidProblem) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message
    assert needle in message and str(path) in message


def test_input_set_naming_unknown_constant_is_rejected(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p")
    (folder / "problem.toml").write_text("[[input_sets]]\nbatch = 3\n")
    message = error_of(folder)
    assert "input_sets[0].batch" in message and "batch_size" in message


def test_missing_paths(tmp_path: Path) -> None:
    assert "no such file" in error_of(tmp_path / "nowhere")
    (tmp_path / "ref.py").write_text(REFERENCE)
    message = error_of(tmp_path / "ref.py", tmp_path / "gone.py")
    assert str(tmp_path / "gone.py") in message and "no such file" in message
    message = error_of(tmp_path / "ref.py", tmp_path)
    assert str(tmp_path) in message and "not a file" in message


def test_folder_without_candidate_or_reference(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "reference.py").write_text(REFERENCE)
    assert "candidate.py" in error_of(folder)
    (folder / "reference.py").unlink()
    (folder / "candidate.py").write_text(CANDIDATE)
    assert "reference.py" in error_of(folder)


def test_single_file_without_candidate_is_explained(tmp_path: Path) -> None:
    (tmp_path / "ref.py").write_text(REFERENCE)
    assert "candidate" in error_of(tmp_path / "ref.py")


def test_non_utf8_file_is_named(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p")
    (folder / "candidate.py").write_bytes(b"# caf\xe9\nclass ModelNew: pass\n")
    message = error_of(folder)
    assert str(folder / "candidate.py") in message and "UTF-8" in message


def test_a_candidate_that_does_not_parse_loads_as_it_is(tmp_path: Path) -> None:
    # Not valid Python is the candidate's crash (the judge's compile_error, repairable), not bad input.
    broken = CANDIDATE.replace("    def forward(self, x):", "    def forward(self, x)")
    folder = write_problem(tmp_path / "p", candidate=broken)
    assert load_problem(folder).candidate_source == broken


def test_syntax_error_in_reference(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", reference=REFERENCE + "\nbatch_size = = 3\n")
    message = error_of(folder)
    assert message.startswith(f"{folder / 'reference.py'}:") and "SyntaxError" in message


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("class Model(", "class Reference(", "'Model'"),
        ("def get_inputs(", "def make_inputs(", "'get_inputs'"),
        ("def get_init_inputs(", "def init_inputs(", "'get_init_inputs'"),
    ],
)
def test_reference_missing_required_names(tmp_path: Path, old: str, new: str, needle: str) -> None:
    folder = write_problem(tmp_path / "p", reference=REFERENCE.replace(old, new))
    message = error_of(folder)
    assert str(folder / "reference.py") in message and needle in message


def test_candidate_missing_model_new(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", candidate=CANDIDATE.replace("class ModelNew(", "class Model("))
    message = error_of(folder)
    assert str(folder / "candidate.py") in message and "'ModelNew'" in message


def test_names_bound_by_assignment_or_import_are_accepted(tmp_path: Path) -> None:
    reference = REFERENCE.replace(
        "def get_inputs():\n    return [torch.randn(batch_size, in_features)]\n", ""
    )
    reference = reference.replace("def get_init_inputs():\n    return [in_features, out_features]\n", "")
    reference += "get_init_inputs = lambda: [in_features, out_features]\nfrom helpers import get_inputs\n"
    assert "def get_inputs" not in reference and "def get_init_inputs" not in reference
    assert load_problem(write_problem(tmp_path / "p", reference=reference)).name == "p"
    candidate = "from somewhere import ModelNew\n"
    assert load_problem(write_problem(tmp_path / "q", candidate=candidate)).name == "q"


def test_constructor_mismatch_message(tmp_path: Path) -> None:
    candidate = CANDIDATE.replace(
        "def __init__(self, in_features, out_features, bias=True):",
        "def __init__(self, in_features, out_features):",
    ).replace("bias=bias", "bias=True")
    message = error_of(write_problem(tmp_path / "p", candidate=candidate))
    expected = "Model(in_features, out_features, bias=...) vs ModelNew(in_features, out_features)"
    assert message.endswith(f"constructor mismatch: {expected}")
    assert str(tmp_path / "p" / "candidate.py") in message


@pytest.mark.parametrize(
    "signature",
    [
        "def __init__(self, out_features, in_features, bias=True):",  # order
        "def __init__(self, in_features, out_features, bias):",  # default missing
        "def __init__(self, in_features, out_features, *, bias=True):",  # keyword-only
    ],
)
def test_constructor_mismatch_variants(tmp_path: Path, signature: str) -> None:
    candidate = CANDIDATE.replace("def __init__(self, in_features, out_features, bias=True):", signature)
    assert "constructor mismatch" in error_of(write_problem(tmp_path / "p", candidate=candidate))


def test_args_kwargs_candidate_is_accepted(tmp_path: Path) -> None:
    candidate = CANDIDATE.replace(
        "def __init__(self, in_features, out_features, bias=True):", "def __init__(self, *args, **kwargs):"
    ).replace("nn.Linear(in_features, out_features, bias=bias)", "nn.Linear(*args, **kwargs)")
    assert load_problem(write_problem(tmp_path / "p", candidate=candidate)).candidate_source == candidate


def test_class_without_init_takes_no_parameters(tmp_path: Path) -> None:
    reference = "class Model:\n    pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"
    folder = write_problem(tmp_path / "p", reference=reference, candidate="class ModelNew:\n    x = 1\n")
    assert load_problem(folder).name == "p"
    folder = write_problem(tmp_path / "q", reference=reference, candidate=CANDIDATE)
    assert error_of(folder).endswith("Model() vs ModelNew(in_features, out_features, bias=...)")


def test_constructor_inherited_from_class_in_same_file(tmp_path: Path) -> None:
    subclass = "\n\nclass ModelNew(ModelNew):\n    def forward(self, x):\n        return x\n"
    assert load_problem(write_problem(tmp_path / "p", candidate=CANDIDATE + subclass)).name == "p"
    narrower = CANDIDATE.replace("bias=True):", "bias):")
    message = error_of(write_problem(tmp_path / "q", candidate=narrower + subclass))
    assert message.endswith("vs ModelNew(in_features, out_features, bias)")
    base = "class Base:\n    def __init__(self, dim):\n        pass\n\n\nclass ModelNew(Base):\n    pass\n"
    assert error_of(write_problem(tmp_path / "r", candidate=base)).endswith("vs ModelNew(dim)")


def test_unknown_base_class_skips_the_constructor_check(tmp_path: Path) -> None:
    candidate = "from elsewhere import Base\n\n\nclass ModelNew(Base):\n    pass\n"
    assert load_problem(write_problem(tmp_path / "p", candidate=candidate)).name == "p"


def test_with_candidate_keeps_everything_else(tmp_path: Path) -> None:
    problem = load_problem(write_problem(tmp_path / "p"), config=ProblemConfig(seeds=(3,)))
    patched = problem.with_candidate(CANDIDATE + "# patched\n")
    assert isinstance(patched, Problem)
    assert patched.candidate_source.endswith("# patched\n")
    assert problem.candidate_source == CANDIDATE
    assert (patched.name, patched.reference_source, patched.config, patched.size_constants) == (
        problem.name,
        problem.reference_source,
        problem.config,
        problem.size_constants,
    )


def test_loading_never_executes_sources(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    trap = f"open({str(marker)!r}, 'w').write('x')\n"
    folder = write_problem(tmp_path / "p", reference=trap + REFERENCE, candidate=trap + CANDIDATE)
    load_problem(folder)
    assert not marker.exists()
