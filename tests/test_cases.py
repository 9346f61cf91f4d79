"""Evaluation cases: constants and their rewriting, shape/value/layout variants, and tier composition."""

from __future__ import annotations

import ast

import pytest
import torch
from kernel_medic.tools.evaluation.cases import (
    VALUE_VARIANTS,
    CaseSpec,
    apply_value_variant,
    automatic_shape_overrides,
    cases_for_tier,
    make_noncontiguous,
    module_int_constants,
    rewrite_constants,
)
from kernel_medic.tools.evaluation.problem import ProblemConfig

SOURCE = """\
import torch  # café: non-ASCII before the constants shifts byte offsets
import torch.nn as nn

batch_size = 16
dim: int = 1024  # the row length
offset = -3
flag = True
ratio = 0.5
a = b = 7
twice = 1
twice = 2
x, y = 1, 2
in_channels = 3; out_channels = 64
counter = 0


def bump():
    global counter
    counter = 1


if True:
    nested = 32


class Model(nn.Module):
    hidden = 99

    def forward(self, x):
        local = 5
        return x * dim + local


def get_inputs():
    return [torch.randn(batch_size, dim)]
"""


def test_module_int_constants_finds_only_single_int_literals() -> None:
    assert module_int_constants(SOURCE) == {
        "batch_size": 16,
        "dim": 1024,
        "offset": -3,
        "in_channels": 3,
        "out_channels": 64,
        "nested": 32,
    }


def test_rewrite_constants_changes_only_those_literals() -> None:
    rewritten = rewrite_constants(SOURCE, {"dim": 1021, "offset": 4, "out_channels": 63, "nested": -1})
    expected = (
        SOURCE.replace("dim: int = 1024", "dim: int = 1021")
        .replace("offset = -3", "offset = 4")
        .replace("out_channels = 64", "out_channels = 63")
        .replace("nested = 32", "nested = -1")
    )
    assert rewritten == expected
    assert module_int_constants(rewritten)["dim"] == 1021
    ast.parse(rewritten)


def test_rewrite_constants_keeps_crlf_and_form_feeds() -> None:
    source = "# header\x0c\r\nn = 10\r\nm = 20\r\n"
    assert rewrite_constants(source, {"m": 19}) == "# header\x0c\r\nn = 10\r\nm = 19\r\n"


def test_rewrite_constants_with_no_overrides_is_identity() -> None:
    assert rewrite_constants(SOURCE, {}) == SOURCE


@pytest.mark.parametrize("name", ["twice", "flag", "hidden", "missing", "a", "counter"])
def test_rewrite_constants_rejects_names_that_are_not_constants(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        rewrite_constants(SOURCE, {name: 1})


def test_automatic_overrides_are_odd_and_one_grows_past_the_problem_size() -> None:
    constants = {"batch_size": 16, "in_channels": 3, "dim": 1024, "height": 255, "small": 8, "neg": -64}
    variants = automatic_shape_overrides(constants)
    assert variants[0] == {"batch_size": 15, "dim": 1023, "height": 253, "small": 7}
    # The last size alone, a little smaller and about twice as large (past one block of a row).
    assert variants[1:] == [{"small": 5}, {"small": 17}]
    for variant in variants:
        assert variant and "in_channels" not in variant and "neg" not in variant
        for name, value in variant.items():
            assert value % 2 == 1
            assert all(value % block != 0 for block in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096))
            assert 0 < value < constants[name] or value == 2 * constants[name] + 1


def test_automatic_overrides_single_and_none() -> None:
    assert automatic_shape_overrides({"dim": 1024, "k": 3}) == [{"dim": 1023}, {"dim": 2049}]
    assert automatic_shape_overrides({"k": 3, "axis": 1}) == []
    assert automatic_shape_overrides({}) == []


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


BASE = torch.randn(64, 33, generator=gen(123))


@pytest.mark.parametrize("variant", VALUE_VARIANTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_value_variant_keeps_dtype_shape_and_is_deterministic(variant: str, dtype: torch.dtype) -> None:
    t = BASE.to(dtype)
    out = apply_value_variant(t, variant, gen(7))
    assert out.dtype == dtype and out.shape == t.shape and out.is_contiguous()
    assert torch.isfinite(out).all()
    assert torch.equal(out, apply_value_variant(t, variant, gen(7)))
    assert not torch.equal(out, t)


def test_value_variant_keeps_non_contiguous_strides() -> None:
    t = make_noncontiguous(BASE)
    out = apply_value_variant(t, "x100", gen())
    assert out.stride() == t.stride() and not out.is_contiguous()
    assert torch.allclose(out, BASE * 100)


def test_scaling_and_sign_variants() -> None:
    assert torch.allclose(apply_value_variant(BASE, "x100", gen()), BASE * 100)
    assert torch.allclose(apply_value_variant(BASE, "x1e-3", gen()), BASE * 1e-3)
    shifted = apply_value_variant(BASE, "shifted_mean", gen())
    assert torch.allclose(shifted, BASE + 3)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        t = torch.cat([BASE.flatten(), torch.zeros(3)]).to(dtype)
        assert (apply_value_variant(t, "all_negative", gen()) < 0).all()
        assert (apply_value_variant(t, "all_positive", gen()) > 0).all()


def test_integer_ties_variant_has_many_ties() -> None:
    out = apply_value_variant(BASE, "integer_ties", gen())
    assert torch.equal(out, out.round())
    assert out.min() >= -3 and out.max() <= 3
    assert out.unique().numel() <= 7 and out.numel() == BASE.numel()


def test_heavy_tailed_variant_has_heavier_tail_than_normal() -> None:
    normal = torch.randn(20000, generator=gen(1))
    heavy = apply_value_variant(normal, "heavy_tailed", gen(1))

    def tail_ratio(x: torch.Tensor) -> float:
        return float(x.abs().max() / x.std())

    assert tail_ratio(heavy) > 3 * tail_ratio(normal)
    assert heavy.abs().max() <= 1e3
    assert not torch.equal(apply_value_variant(normal, "heavy_tailed", gen(2)), heavy)


def test_non_floating_tensors_are_unchanged() -> None:
    idx = torch.arange(10)
    mask = idx > 4
    for variant in VALUE_VARIANTS:
        assert apply_value_variant(idx, variant, gen()) is idx
        assert apply_value_variant(mask, variant, gen()) is mask


def test_unknown_value_variant_is_rejected() -> None:
    with pytest.raises(ValueError, match="x1000"):
        apply_value_variant(BASE, "x1000", gen())


@pytest.mark.parametrize("shape", [(7,), (2,), (4, 5), (3, 4, 5), (6, 1), (1, 6), (2, 3, 1)])
def test_make_noncontiguous_keeps_values(shape: tuple[int, ...]) -> None:
    t = torch.randn(shape, generator=gen())
    out = make_noncontiguous(t)
    assert torch.equal(out, t)
    assert out.shape == t.shape and out.dtype == t.dtype
    assert not out.is_contiguous()


def test_make_noncontiguous_leaves_scalars_and_single_elements() -> None:
    scalar, single = torch.tensor(2.0), torch.ones(1, 1)
    assert make_noncontiguous(scalar) is scalar
    assert make_noncontiguous(single) is single


def test_make_noncontiguous_works_for_integer_tensors() -> None:
    t = torch.arange(12).reshape(3, 4)
    out = make_noncontiguous(t)
    assert torch.equal(out, t) and not out.is_contiguous()


def names(cases: list[CaseSpec]) -> list[str]:
    return [c.name for c in cases]


def test_light_tier_is_first_seed_only() -> None:
    cases = cases_for_tier("light", ProblemConfig(seeds=(4, 5)), {"dim": 1024})
    assert cases == [CaseSpec(name="seed4", seed=4)]


def test_full_tier_with_automatic_shapes() -> None:
    cases = cases_for_tier("full", ProblemConfig(seeds=(0, 1, 2)), {"batch_size": 16, "dim": 1024})
    assert names(cases) == [
        "seed0",
        "seed1",
        "seed2",
        *VALUE_VARIANTS,
        "shape[batch_size=15,dim=1023]",
        "shape[dim=1021]",
        "shape[dim=2049]",
        "noncontig",
    ]
    by_name = {c.name: c for c in cases}
    assert by_name["seed2"].seed == 2
    assert by_name["x100"] == CaseSpec(name="x100", seed=0, value_variant="x100")
    assert by_name["shape[dim=1021]"].size_overrides == (("dim", 1021),)
    assert by_name["noncontig"].noncontiguous and by_name["noncontig"].seed == 0


def test_a_case_tier_is_that_one_case_of_the_full_tier() -> None:
    # The search screens on the one case a bug shows in (a magnitude, a shape, a layout): the same spec.
    constants, config = {"batch_size": 16, "dim": 1024}, ProblemConfig(seeds=(0, 1))
    full = {c.name: c for c in cases_for_tier("full", config, constants)}
    for name in ("x100", "shape[dim=1021]", "noncontig"):
        assert cases_for_tier(f"case:{name}", config, constants) == [full[name]]
    with pytest.raises(ValueError, match="no case 'x7'"):
        cases_for_tier("case:x7", config, constants)


def test_full_tier_prefers_input_sets_and_honours_switches() -> None:
    config = ProblemConfig(
        seeds=(3,),
        input_sets=({"dim": 1000, "batch_size": 2}, {"dim": 1000, "batch_size": 2}, {"dim": 17}),
        value_variants=False,
        noncontiguous=False,
    )
    cases = cases_for_tier("full", config, {"batch_size": 16, "dim": 1024})
    assert names(cases) == ["seed3", "shape[batch_size=2,dim=1000]", "shape[dim=17]"]
    assert cases[1].size_overrides == (("batch_size", 2), ("dim", 1000)) and cases[1].seed == 3


def test_full_tier_without_automatic_shapes() -> None:
    config = ProblemConfig(seeds=(0,), automatic_shapes=False)
    assert not any(c.size_overrides for c in cases_for_tier("full", config, {"dim": 1024}))


def test_full_tier_names_are_unique() -> None:
    config = ProblemConfig(seeds=(0, 1, 0))
    cases = cases_for_tier("full", config, {"a": 64, "b": 64, "c": 9})
    assert len(names(cases)) == len(set(names(cases)))
    assert names(cases)[:2] == ["seed0", "seed1"]


def test_case_spec_round_trips_through_dict() -> None:
    spec = CaseSpec(name="mix", seed=2, value_variant="x1e-3", size_overrides=(("z", 3), ("a", 9)))
    assert spec.size_overrides == (("a", 9), ("z", 3))
    data = spec.to_dict()
    assert data == {
        "name": "mix",
        "seed": 2,
        "value_variant": "x1e-3",
        "size_overrides": {"a": 9, "z": 3},
        "noncontiguous": False,
        "derived": False,
    }
    assert CaseSpec.from_dict(data) == spec


def test_rewrite_constants_rejects_non_int_values() -> None:
    with pytest.raises(ValueError, match="dim"):
        rewrite_constants(SOURCE, {"dim": 10.5})  # type: ignore[dict-item]
