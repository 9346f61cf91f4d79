"""Localisation from evidence: recorded intermediates (reference vs kernel) and where the output is wrong."""

from __future__ import annotations

from pathlib import Path

import torch
from kernel_medic.tools.diagnosis.localise import (
    Agreement,
    agreement_share,
    localise,
    rank_statements,
    reference_pool,
)
from kernel_medic.tools.diagnosis.recording import instrument_for_recording
from kernel_medic.tools.evaluation.cases import cases_for_tier
from kernel_medic.tools.evaluation.problem import load_problem
from kernel_medic.tools.repair.llm_prompt import evidence_anchors
from problems import (
    FLAGGED_LSE_CANDIDATE,
    LIGHT_TOML,
    LINEAR_RELU_CANDIDATE,
    LINEAR_RELU_REFERENCE,
    node_state,
    scale_candidate,
    write_problem,
)

ROW_REFERENCE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return {expr}


rows = 12
cols = 24


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""

ROW_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
{body}


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        row_kernel[(n_rows,)](x, out, n_cols, 1e-5, BLOCK=triton.next_power_of_2(n_cols))
        return out
"""

# Variance as E[x^2] (the mean never subtracted): planted on the `var` line.
LAYERNORM_BODY = """\
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    var = tl.sum(x * x, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    y = (x - mean) * rstd
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)"""

# Padded lanes load 0 instead of -inf, so exp() of them pollutes the sum: planted on the load.
SOFTMAX_BODY = """\
    vals = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    peak = tl.max(vals, axis=0)
    num = tl.exp(vals - peak)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, num / den, mask=mask)"""


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def _problem(tmp_path: Path, body: str, expr: str) -> tuple[object, str]:
    source = ROW_CANDIDATE.format(body=body)
    folder = write_problem(tmp_path / "p", source, ROW_REFERENCE.format(expr=expr), toml=LIGHT_TOML)
    return load_problem(folder), source


def test_agreement_matches_values_of_one_quantity_up_to_reshape_and_tolerance() -> None:
    pool = reference_pool([torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([0.5, -2.5])])
    assert agreement_share(torch.tensor([4.0, 2.0, 3.0 + 1e-6, 0.0]), pool) == (1.0, 3)  # 0 and 1: fills
    share, count = agreement_share(torch.tensor([4.0, 7.0, float("nan")]), pool)
    assert (share, count) == (0.5, 2)  # non-finite values are not judged
    # Values drawn from two quantities are no quantity of the reference: a mixture does not agree.
    share, _ = agreement_share(torch.tensor([4.0, 3.0, 0.5, -2.5]), pool)
    assert share == 0.5
    # Only the neutral fills (a load whose lanes are all masked off) is in every quantity: it is not judged,
    # so it cannot pass for agreement and hide where the values went missing.
    assert agreement_share(torch.zeros(16), pool)[1] == 0
    assert agreement_share(torch.tensor([0.0, 1.0, 1.0]), pool)[1] == 0


def test_rank_puts_the_first_disagreeing_statement_and_what_it_reads_first() -> None:
    source = ROW_CANDIDATE.format(body=LAYERNORM_BODY)
    var, mean, load = (_line(source, t) for t in ("var = ", "mean = ", "x = tl.load"))
    agreement = [
        Agreement(load, "x", 1.0, 32),
        Agreement(mean, "mean", 1.0, 1),
        Agreement(var, "var", 0.0, 1),
        Agreement(var + 1, "rstd", 0.0, 1),
    ]
    loc = rank_statements(source, {}, agreement)
    assert loc.first_loss == var and loc.lines[0] == var
    assert load in loc.lines[:3]  # `var` reads x
    assert _line(source, "row_kernel[") in loc.lines  # the wrapper's launch is ranked too


def test_instrumented_copy_keeps_line_numbers_and_records_every_assignment() -> None:
    source = ROW_CANDIDATE.format(body=SOFTMAX_BODY)
    instrumented = instrument_for_recording(source)
    assert f"_kmedic_rec({_line(source, 'peak = ')}, ('peak',), (peak,))" in instrumented
    store = f"_kmedic_rec({_line(source, 'tl.store')}, ('<store>',), (num / den,), store=True, mask=mask, "
    # The store's mask says which lanes of the program's values count; its pointer, which elements it writes.
    assert store + "pointer=out_ptr + row * n_cols + cols)" in instrumented


def test_recorded_variance_bug_is_localised_first(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    problem, source = _problem(tmp_path, LAYERNORM_BODY, "F.layer_norm(x, (x.shape[-1],), eps=1e-5)")
    loc = localise(problem, evaluator.pool, source)  # type: ignore[arg-type]
    assert loc.first_loss == _line(source, "var = "), loc.to_dict()
    assert loc.lines[0] == _line(source, "var = ")
    agreed = {a.name for a in loc.agreement if a.agrees}
    assert {"x", "mean"} <= agreed  # what comes before the bug matches the reference's own mean


def test_recorded_padding_bug_puts_the_load_in_the_top_three(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    problem, source = _problem(tmp_path, SOFTMAX_BODY, "torch.softmax(x, dim=-1)")
    loc = localise(problem, evaluator.pool, source)  # type: ignore[arg-type]
    assert _line(source, "vals = tl.load") in loc.lines[:3], loc.to_dict()


def test_a_mixture_of_two_reference_quantities_is_where_agreement_is_lost(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    # relu(x @ w) + b is b where x @ w < 0 and the linear output elsewhere: every element is SOME reference
    # value, but no one quantity holds them: the bias update, not the ReLU before it, is where it goes wrong.
    folder = write_problem(tmp_path / "p", LINEAR_RELU_CANDIDATE, LINEAR_RELU_REFERENCE, toml=LIGHT_TOML)
    loc = localise(load_problem(folder), evaluator.pool, LINEAR_RELU_CANDIDATE)  # type: ignore[arg-type]
    assert loc.first_loss == _line(LINEAR_RELU_CANDIDATE, "acc = acc + bias"), loc.to_dict()
    relu = next(a for a in loc.agreement if a.line == _line(LINEAR_RELU_CANDIDATE, "tl.maximum"))
    assert relu.agrees  # zeros and linear outputs: one quantity and the neutral fill


def test_an_unwritten_tail_ranks_the_launch_first(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    source = scale_candidate(("triton.cdiv(n, 256)", "n // 256"))
    problem = load_problem(write_problem(tmp_path / "p", source, toml=LIGHT_TOML))
    report = evaluator.evaluate(problem, tier="full").to_dict()
    loc = localise(problem, evaluator.pool, source, report)
    assert loc.lines[0] == _line(source, "scale_kernel[("), loc.to_dict()


SCALED_CANDIDATE = """\
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    y = x * scale
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        factor = 1.0 / math.sqrt(n_rows)
        scale_rows[(n_rows,)](x, out, n_cols, factor, BLOCK=block)
        return out
"""


def test_a_kernel_argument_the_lost_value_reads_leads_to_the_wrapper_line_computing_it() -> None:
    # The kernel's arithmetic is right; the scale the wrapper hands it is not (rows for columns). Agreement
    # is lost where the scale is applied, and the wrapper line computing it is suspect too, not only the
    # kernel's own statements.
    source = SCALED_CANDIDATE
    load, lost, factor = (_line(source, t) for t in ("x = tl.load", "y = x * scale", "factor = "))
    agreement = [Agreement(load, "x", 1.0, 32), Agreement(lost, "y", 0.0, 32)]
    loc = rank_statements(source, {}, agreement)
    assert loc.lines[0] == lost
    assert factor in loc.lines[:3]
    assert loc.lines.index(factor) < loc.lines.index(_line(source, "block = "))  # not every host line


def test_a_flag_choosing_the_branch_of_the_lost_value_leads_to_the_wrapper_line_setting_it() -> None:
    # The value is computed on the wrong branch (no max subtracted): the `if` choosing it is suspect, and the
    # wrapper line computing its flag too, ahead of the wrapper's other lines.
    source = FLAGGED_LSE_CANDIDATE
    load, e, total = (_line(source, t) for t in ("x = tl.load", "e = tl.exp", "total = "))
    agreement = [Agreement(load, "x", 1.0, 32), Agreement(e, "e", 0.98, 32)]
    agreement.append(Agreement(total, "total", 0.0, 1))
    loc = rank_statements(source, {}, agreement)
    assert loc.lines[0] == total
    branch, flag, block = (_line(source, t) for t in ("if STABLE:", "stable = ", "block = "))
    assert loc.lines.index(branch) < loc.lines.index(flag) < loc.lines.index(block)


def test_equal_sizes_stay_apart_in_micro_so_a_swapped_size_is_localised(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    # A square problem (rows == cols) hides the scale taken from the wrong size; the micro case, the one the
    # agent records on, must not be square too, or the recording agrees everywhere and points nowhere.
    square = ROW_REFERENCE.format(expr="x * x.shape[-1] ** -0.5").replace("rows = 12", "rows = 24")
    problem = load_problem(write_problem(tmp_path / "p", SCALED_CANDIDATE, square, toml=LIGHT_TOML))
    (micro,) = cases_for_tier("micro", problem.config, problem.size_constants)
    loc = localise(problem, evaluator.pool, SCALED_CANDIDATE, None, "cpu", micro)
    assert loc.first_loss == _line(SCALED_CANDIDATE, "y = x * scale"), loc.to_dict()
    assert _line(SCALED_CANDIDATE, "factor = ") in loc.lines[:3]


def test_the_agent_records_on_a_case_that_shows_the_bug(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    # A softmax without the row max subtracted is right at ordinary magnitudes, the micro case included, and
    # overflows on large inputs. Recorded where it passes, every value would agree and point nowhere: the
    # agent records on the case the search screens on, one the kernel fails.
    from kernel_medic.nodes.patch import _localiser

    body = SOFTMAX_BODY.replace("    peak = tl.max(vals, axis=0)\n", "").replace("vals - peak", "vals")
    body = body.replace("other=0.0", 'other=-float("inf")')
    source = ROW_CANDIDATE.format(body=body)
    toml = "seeds = [0]\nautomatic_shapes = false\n"
    folder = write_problem(tmp_path / "p", source, ROW_REFERENCE.format(expr="torch.softmax(x, -1)"), toml)
    report = evaluator.evaluate(load_problem(folder), tier="full").to_dict()
    assert report["verdict"] != "pass"
    state = node_state(folder, source, trace_path=str(tmp_path / "trace.jsonl"))
    lines = _localiser(state)(source, report)  # type: ignore[arg-type]
    assert lines[0] == _line(source, "num = tl.exp"), lines


# exp overflows where the reference clamps: the kernel's output holds +inf, the reference's none.
OVERFLOW_BODY = """\
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    z = x * 100.0
    e = tl.exp(z)
    tl.store(out_ptr + row * n_cols + cols, e, mask=mask)"""


def test_the_statement_that_first_makes_an_infinity_the_output_holds_is_where_agreement_is_lost() -> None:
    source = ROW_CANDIDATE.format(body=OVERFLOW_BODY)
    load, z, e = (_line(source, t) for t in ("x = tl.load", "z = x", "e = tl.exp"))
    # Finite lanes agree with the reference's own exp; the infinities are not judged by agreement.
    agreement = [
        Agreement(load, "x", 1.0, 32, frozenset({"-inf"})),  # a fill of padded lanes: not computed here
        Agreement(z, "z", 1.0, 32, frozenset({"-inf"})),  # carried from what it reads
        Agreement(e, "e", 1.0, 24, frozenset({"+inf"})),  # made here from finite values
    ]
    assert rank_statements(source, {}, agreement, nonfinite_output=True).first_loss == e
    assert rank_statements(source, {}, agreement, nonfinite_output=True).lines[0] == e
    # Without non-finite output, or when what it reads already held +inf, nothing is lost at `e`.
    assert rank_statements(source, {}, agreement).first_loss is None
    inf = frozenset({"+inf"})
    carried = [Agreement(load, "x", 1.0, 32, inf), Agreement(z, "z", 1.0, 32, inf), agreement[2]]
    assert rank_statements(source, {}, carried, nonfinite_output=True).first_loss is None


def test_an_overflow_the_output_shows_is_localised_on_the_recording(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    problem, source = _problem(tmp_path, OVERFLOW_BODY, "torch.exp(x * 100.0).clamp(max=1e30)")
    loc = localise(problem, evaluator.pool, source)  # type: ignore[arg-type]
    assert loc.first_loss == _line(source, "e = tl.exp"), loc.to_dict()
    assert loc.lines[0] == _line(source, "e = tl.exp")


# A correct kernel whose padded lanes compute a value no reference quantity holds (3.0, from the zero fill):
# the store masks them off, so they are nobody's values and must not count against agreement.
AFFINE_BODY = """\
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    y = x * 2.0 + 3.0
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)"""


def test_lanes_a_store_masks_off_are_not_evidence(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    # 24 columns in a 32-lane block: a quarter of every program's lanes is padding. Judged with them, the
    # right values "agree" on only 75% and the localiser blames a correct statement.
    problem, source = _problem(tmp_path, AFFINE_BODY, "x * 2.0 + 3.0")
    loc = localise(problem, evaluator.pool, source)  # type: ignore[arg-type]
    y = next(a for a in loc.agreement if a.name == "y")
    assert y.agrees and y.count == 12 * 24, loc.to_dict()
    assert loc.first_loss is None


def test_an_accumulator_updated_into_a_reference_value_is_not_where_agreement_is_lost() -> None:
    # `acc = tl.sum(...)` is a convolution without its bias (no quantity of a fused reference op), `acc += b`
    # the reference's output: the value carries on, composed differently, nothing is lost there.
    source = ROW_CANDIDATE.format(
        body="""\
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    acc = tl.sum(x, axis=0)
    acc += eps
    tl.store(out_ptr + row, acc)"""
    )
    load, acc, update = (_line(source, t) for t in ("x = tl.load", "acc = tl.sum", "acc += eps"))
    agreement = [Agreement(load, "x", 1.0, 32), Agreement(acc, "acc", 0.0, 1)]
    agreement.append(Agreement(update, "acc", 1.0, 1))
    assert rank_statements(source, {}, agreement).first_loss is None


POOL_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pool_kernel(x_ptr, y_ptr, W, W_out, KS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    o = tl.arange(0, BLOCK)
    m = o < W_out
    acc = tl.load(x_ptr + row * W + o * KS, mask=m, other=0.0)
    tl.store(y_ptr + row * W_out + o, acc, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        n_rows, W = x.shape
        ks, pad = 2, 1
        W_out = (W - ks) // ks + 1
        y = torch.empty((n_rows, W_out), device=x.device, dtype=x.dtype)
        pool_kernel[(n_rows,)](x, y, W, W_out, KS=ks, BLOCK=triton.next_power_of_2(W_out))
        return y
"""


def test_an_output_of_the_wrong_shape_ranks_its_allocation_and_size_formula_first() -> None:
    # The kernel cannot give its output a shape: the wrapper's allocation and the size it computes can.
    report = {"verdict": "shape_mismatch", "cases": [{"name": "seed0", "verdict": "shape_mismatch"}]}
    loc = rank_statements(POOL_CANDIDATE, report)
    alloc, size = _line(POOL_CANDIDATE, "y = torch.empty"), _line(POOL_CANDIDATE, "W_out = (W")
    assert loc.lines[:2] == [alloc, size], loc.to_dict()
    assert loc.lines.index(size) < loc.lines.index(_line(POOL_CANDIDATE, "n_rows, W = x.shape"))
    # A wrong dtype is the allocation's too; wrong values are not (the kernel's statements come first).
    dtype = {"verdict": "dtype_mismatch", "cases": [{"name": "seed0", "verdict": "dtype_mismatch"}]}
    assert rank_statements(POOL_CANDIDATE, dtype).lines[0] == alloc
    values = {"verdict": "mismatch", "cases": [{"name": "seed0", "verdict": "mismatch", "pattern": "rows"}]}
    assert rank_statements(POOL_CANDIDATE, values).lines[0] != alloc


# Every program stores its row to row 0 (no row term in the store's address): the values are right, rows
# 1.. are never written, and the store is where the programs collide.
ROW_ZERO_BODY = """\
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    y = x * 2.0
    tl.store(out_ptr + cols, y, mask=mask)"""


def test_programs_storing_to_the_same_elements_put_the_store_first(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    problem, source = _problem(tmp_path, ROW_ZERO_BODY, "x * 2.0")
    report = evaluator.evaluate(problem, tier="full").to_dict()  # type: ignore[attr-defined]
    loc = localise(problem, evaluator.pool, source, report)  # type: ignore[arg-type]
    store = _line(source, "tl.store")
    assert loc.lines[0] == store, loc.to_dict()
    assert any("another program stored already" in n for n in loc.notes)


TILED_SOURCE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def tile_kernel(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n_m = tl.cdiv(M, BLOCK)
    n_n = tl.cdiv(N, BLOCK)
    pid_m = pid // n_m
    pid_n = pid % n_m
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], x, mask=mask)
"""


def test_colliding_stores_rank_the_program_ids_decomposition_above_other_index_lines() -> None:
    store = _line(TILED_SOURCE, "tl.store")
    lines = rank_statements(TILED_SOURCE, {}, [], collisions={store: 0.25}).lines
    assert lines[0] == store
    split = {_line(TILED_SOURCE, "pid_m = "), _line(TILED_SOURCE, "pid_n = ")}
    assert lines.index(_line(TILED_SOURCE, "n_n = ")) > max(lines.index(x) for x in split)
    # A few elements stored twice: a block's edge lanes reach into the next block (a mask off by one).
    edge = rank_statements(TILED_SOURCE, {}, [], collisions={store: 0.03}).lines
    assert set(edge[:2]) == {store, _line(TILED_SOURCE, "mask = ")}
    # No collision, no such ranking: the decomposition is one index line among others.
    assert rank_statements(TILED_SOURCE, {}, []).lines[0] != store


ROW_LOSS_CANDIDATE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    loss = tl.sum(x * x, axis=0)
    tl.store(out_ptr + row, loss)


def forward(x, keep):
    n_rows, n_cols = x.shape
    losses = torch.empty(n_rows, device=x.device)
    row_loss_kernel[(n_rows,)](x, losses, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    total = losses.sum()
    return total / n_rows
"""


def test_right_kernel_values_put_the_hosts_work_on_them_after_the_launch_first() -> None:
    # Every value the kernel computes agrees with the reference (per-row losses), the output does not: the
    # host's reduction of them after the launch is next in line (a mean over the wrong count).
    source = ROW_LOSS_CANDIDATE
    load, loss, store = (_line(source, t) for t in ("x = tl.load", "loss = tl.sum", "tl.store("))
    agreement = [Agreement(load, "x", 1.0, 32), Agreement(loss, "l", 1.0, 4), Agreement(store, "s", 1.0, 4)]
    report = {"cases": [{"name": "seed0", "verdict": "mismatch", "pattern": "everywhere"}]}
    lines = rank_statements(source, report, agreement).lines
    assert lines[:2] == [_line(source, "return total"), _line(source, "total = losses.sum()")]
    # Returning the kernel's output as it is, the host did nothing after the launch: the kernel's lines lead.
    plain = source.replace("    total = losses.sum()\n    return total / n_rows\n", "    return losses\n")
    assert set(rank_statements(plain, report, agreement).lines[:3]) <= {load, loss, store}


SHORT_NAMES = """\
import triton
import triton.language as tl


@triton.jit
def shift(x, y, L, S, BL: tl.constexpr):
    lo = tl.arange(0, BL)
    li = lo * S - 1
    t = li * 2.0
    m = (li >= 0) & (li <= L)
    v = tl.load(x + li, mask=m, other=0.0)
    tl.store(y + lo, v + t, mask=lo < L)
"""


def test_a_mask_and_an_index_are_known_by_where_loads_use_them_not_by_their_names() -> None:
    tail = {"cases": [{"name": "seed0", "verdict": "mismatch", "pattern": "tail_block", "counted": True}]}
    lines = rank_statements(SHORT_NAMES, tail).lines
    mask_line, compute_line = 10, 9  # `m = ...` feeds only the load's mask; `t = ...` only the stored value
    assert lines.index(mask_line) < 3
    assert compute_line not in lines or lines.index(compute_line) > lines.index(mask_line)


def test_only_the_last_column_wrong_is_a_boundary_like_a_tail_not_a_layout() -> None:
    def columns(wrong: list[int]) -> dict:  # type: ignore[type-arg]
        detail = {"columns": wrong, "count": len(wrong), "of": 100}
        case = {"name": "seed0", "verdict": "mismatch", "pattern": "columns", "pattern_detail": detail}
        return {"cases": [case]}

    mask_line = 10
    assert rank_statements(SHORT_NAMES, columns([99])).lines.index(mask_line) < 3
    assert rank_statements(SHORT_NAMES, columns([40, 41])).lines.index(mask_line) > 2


HELPER_CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _hard_sigmoid(x):
    return tl.minimum(tl.maximum(0.2 * x + 0.5, 0.0), 1.0)


@triton.jit
def hardsigmoid_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, _hard_sigmoid(x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        hardsigmoid_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
"""


def test_a_value_a_jit_helper_returns_leads_to_the_helpers_return() -> None:
    # The store calls the helper: where its value stops agreeing, the helper's formula is next in line.
    load, store = _line(HELPER_CANDIDATE, "x = tl.load"), _line(HELPER_CANDIDATE, "tl.store(")
    agreement = [Agreement(load, "x", 1.0, 64), Agreement(store, "<store>", 0.8, 64)]
    loc = rank_statements(HELPER_CANDIDATE, {}, agreement)
    assert loc.lines[:2] == [store, _line(HELPER_CANDIDATE, "return tl.minimum")]


def test_a_block_mostly_of_padding_is_judged_by_its_real_lanes() -> None:
    # Attention probabilities at a micro size: 19 of 20 lanes are padding (0), the one real lane is wrong.
    # The fills are in every quantity and say nothing; counted in, the block agreed at 95%.
    pool = reference_pool([torch.tensor([0.25, 0.5, 0.75])])
    values = torch.cat([torch.zeros(19), torch.tensor([0.6])])
    assert agreement_share(values, pool) == (0.0, 1)


PAIRED_CANDIDATE = """\
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_scale_kernel(x_ptr, b_ptr, out_ptr, n, C, L, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    c = offs % C
    b = tl.load(b_ptr + c, mask=mask)
    y = (x + b) * scale
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, b):
        x = x.contiguous()
        b = b.contiguous()
        B, C, L = x.shape
        out = torch.empty_like(x)
        n = x.numel()
        factor = 1.0 / math.sqrt(L)
        bias_scale_kernel[(triton.cdiv(n, 256),)](x, b, out, n, C, L, factor, BLOCK=256)
        return out
"""


def test_operands_right_by_value_and_wrong_together_put_an_index_only_one_of_them_uses_next() -> None:
    # x and the gathered bias each hold values of the reference's tensors; their sum does not: they are
    # paired wrongly. The bias's own index (`offs % C`) is next after the lost line, ahead of the mask and
    # the offsets every operand and the store share.
    source = PAIRED_CANDIDATE
    load_x, index, load_b, lost = (
        _line(source, t) for t in ("x = tl.load", "c = offs % C", "b = tl.load", "y = (x + b)")
    )
    agreement = [Agreement(load_x, "x", 1.0, 64), Agreement(load_b, "b", 1.0, 64)]
    agreement.append(Agreement(lost, "y", 0.3, 64))
    loc = rank_statements(source, {}, agreement)
    assert loc.lines[:2] in ([lost, index], [index, lost])
    assert loc.lines.index(index) < loc.lines.index(_line(source, "mask = offs < n"))
    assert loc.lines.index(index) < loc.lines.index(_line(source, "offs = pid"))


ATTENTION_CANDIDATE = """\\
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scores_kernel(
    Q, K, Out, stride_bh, stride_s, S, D, sm_scale, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr
):
    bh = tl.program_id(0)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    mask = (offs_s[:, None] < S) & (offs_d[None, :] < D)
    ptrs = bh * stride_bh + offs_s[:, None] * stride_s + offs_d[None, :]
    q = tl.load(Q + ptrs, mask=mask, other=0.0)
    k = tl.load(K + ptrs, mask=mask, other=0.0)
    scores = tl.dot(q, tl.trans(k)) * sm_scale
    out_ptrs = bh * BLOCK_S * BLOCK_S + offs_s[:, None] * BLOCK_S + offs_s[None, :]
    tl.store(Out + out_ptrs, scores)


class ModelNew(nn.Module):
    def forward(self, q, k):
        q, k = q.contiguous(), k.contiguous()
        B, H, S, D = q.shape
        BLOCK_S = max(16, triton.next_power_of_2(S))
        out = torch.empty(B * H, BLOCK_S, BLOCK_S, device=q.device)
        sm_scale = 1.0 / math.sqrt(q.shape[-2])
        scores_kernel[(B * H,)](
            q, k, out, q.stride(1), q.stride(2), S, D, sm_scale, BLOCK_S=BLOCK_S, BLOCK_D=16
        )
        return out[:, :S, :S].reshape(B, H, S, S)
"""


def test_with_its_operands_right_the_scalar_the_lost_value_reads_is_next() -> None:
    # q and k agree, their scaled product does not: the scale the wrapper computes is next. q and k are
    # loaded at one index (`ptrs`), which pairs them alike: it is not blamed for a wrong pairing.
    source = ATTENTION_CANDIDATE
    lq, lk, lost = (_line(source, t) for t in ("q = tl.load", "k = tl.load", "scores = tl.dot"))
    agreement = [Agreement(lq, "q", 1.0, 64), Agreement(lk, "k", 1.0, 64)]
    agreement.append(Agreement(lost, "scores", 0.3, 64))
    loc = rank_statements(source, {}, agreement)
    assert loc.lines[:2] == [lost, _line(source, "sm_scale = ")]


CAPPED_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        block = min(triton.next_power_of_2(n_cols), 64)
        row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK=block)
        return out
"""


def test_a_reduction_of_right_values_with_a_wrong_result_leads_to_its_lanes_and_block_size() -> None:
    # Every loaded value is an input value; the row sums are wrong: the lanes reduced are wrong (here the
    # block they are counted with is capped below the row). The lost store, the load (its mask, its padding)
    # and the wrapper line sizing the block come first, the block ahead of the wrapper's other lines.
    source = CAPPED_CANDIDATE
    load, store, block = (_line(source, t) for t in ("x = tl.load", "tl.store(", "block = min"))
    agreement = [Agreement(load, "x", 1.0, 64), Agreement(store, "<store>", 0.0, 4)]
    loc = rank_statements(source, {}, agreement)
    assert loc.lines[:3] == [store, load, block]


def test_a_question_about_a_suspect_line_says_why_the_evidence_points_there() -> None:
    # The pairing index's region note says what the recording found (its operands right, their pairing
    # not), not only that a localiser ranked it: a small model asked about a line needs something to act on.
    source = PAIRED_CANDIDATE
    load_x, index, load_b, lost = (
        _line(source, t) for t in ("x = tl.load", "c = offs % C", "b = tl.load", "y = (x + b)")
    )
    agreement = [Agreement(load_x, "x", 1.0, 64), Agreement(load_b, "b", 1.0, 64)]
    agreement.append(Agreement(lost, "y", 0.3, 64))
    suspects = rank_statements(source, {}, agreement).suspects
    assert list(suspects[:2]) in ([lost, index], [index, lost])
    anchors = evidence_anchors(source, [], {"cases": []}, suspects, limit=2)
    note = next(a.note for a in anchors if a.first == index)
    assert "`b`" in note and "`x`" in note and f"line {lost} combines them wrongly" in note
    assert "localiser ranks" not in note
