from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from difflib import SequenceMatcher

import pytest
from kernel_medic.tools.repair.rules import formula as formula_rules
from kernel_medic.tools.repair.rules.base import Rewrite, RuleContext
from kernel_medic.tools.repair.rules.registry import RULES, propose

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n"


def model(forward: str, init: str = "pass", args: str = "", init_inputs: str = "[]") -> str:
    """A reference Model whose forward is `forward` (the body after `def forward(self, x[, y])`)."""
    signature = "self, x, y" if "y" in forward.split("return")[-1] or "y)" in forward else "self, x"
    return HEADER + textwrap.dedent(f"""\
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self{args}):
                super().__init__()
                {init}

            def forward({signature}):
                {forward}


        def get_inputs():
            return [torch.randn(64)]


        def get_init_inputs():
            return {init_inputs}
    """)


def unary(value: str, params: str = "", launch: str = "", init: str = "pass", prelude: str = "") -> str:
    """A one-input elementwise candidate storing `out = <value>`; `params`/`launch` add kernel arguments."""
    return HEADER + textwrap.dedent(f"""\
        @triton.jit
        def act_kernel(x_ptr, out_ptr, n{params}, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            {prelude or "pass"}
            out = {value}
            tl.store(out_ptr + offs, out, mask=mask)


        class ModelNew(nn.Module):
            def __init__(self, *args):
                super().__init__()
                {init}

            def forward(self, x):
                x = x.contiguous()
                out = torch.empty_like(x)
                n = x.numel()
                act_kernel[(triton.cdiv(n, 256),)](x, out, n{launch}, BLOCK=256)
                return out
    """)


def loss(term: str, params: str = "", launch: str = "", init: str = "pass") -> str:
    """A two-input loss candidate: per-block sums of `term`, masked, then a host-side mean."""
    return HEADER + textwrap.dedent(f"""\
        @triton.jit
        def loss_kernel(a_ptr, b_ptr, partial_ptr, n{params}, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            a = tl.load(a_ptr + offs, mask=mask, other=0.0)
            b = tl.load(b_ptr + offs, mask=mask, other=0.0)
            d = a - b
            term = {term}
            term = tl.where(mask, term, 0.0)
            tl.store(partial_ptr + pid, tl.sum(term, axis=0))


        class ModelNew(nn.Module):
            def __init__(self, *args):
                super().__init__()
                {init}

            def forward(self, predictions, targets):
                p = predictions.contiguous().view(-1)
                t = targets.contiguous().view(-1)
                n = p.numel()
                grid = triton.cdiv(n, 128)
                partial = torch.empty(grid, device=p.device, dtype=torch.float32)
                loss_kernel[(grid,)](p, t, partial, n{launch}, BLOCK=128)
                return partial.sum() / n
    """)


def loss_model(call: str, init: str = "pass", args: str = "", init_inputs: str = "[]") -> str:
    return HEADER + textwrap.dedent(f"""\
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self{args}):
                super().__init__()
                {init}

            def forward(self, predictions, targets):
                return {call}


        def get_inputs():
            return [torch.randn(64), torch.randn(64)]


        def get_init_inputs():
            return {init_inputs}
    """)


def apply(source: str, reference: str, rule: str) -> list[Rewrite]:
    return propose(source, [rule], RuleContext.from_reference(reference))


def changed(old: str, new: str) -> tuple[int, list[str], list[str]]:
    """(1-based first line, removed lines, added lines) of the single changed hunk, stripped."""
    a, b = old.splitlines(), new.splitlines()
    hunks = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    assert len(hunks) == 1, hunks
    _, i1, i2, j1, j2 = hunks[0]
    return i1 + 1, [s.strip() for s in a[i1:i2]], [s.strip() for s in b[j1:j2]]


def single(source: str, reference: str, rule: str) -> tuple[Rewrite, list[str], list[str]]:
    rewrites = apply(source, reference, rule)
    assert len(rewrites) == 1, [r.description for r in rewrites]
    line, removed, added = changed(source, rewrites[0].source)
    assert rewrites[0].line == line
    return rewrites[0], removed, added


GELU_TANH_VIA_SIGMOID = "0.5 * x * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))"
TANH_PRELUDE = "inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)"
GELU_ERF = "0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))"
GELU_TANH = "x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))"


# ---------------------------------------------------------------- reference_formula: activations


def test_gelu_tanh_approximation_becomes_the_exact_erf_form() -> None:
    source = unary(GELU_TANH_VIA_SIGMOID, prelude=TANH_PRELUDE)
    rw, removed, added = single(source, model("return F.gelu(x)"), "reference_formula")
    assert removed == [f"out = {GELU_TANH_VIA_SIGMOID}"]
    assert added == [f"out = {GELU_ERF}"]
    assert "act_kernel" in rw.description and "gelu" in rw.description


def test_exact_gelu_becomes_tanh_when_the_module_asks_for_it() -> None:
    reference = model("return self.act(x)", init="self.act = nn.GELU(approximate='tanh')")
    _, removed, added = single(unary(GELU_ERF), reference, "reference_formula")
    assert added == [f"out = {GELU_TANH}"]


def test_gelu_already_exact_in_another_spelling_is_left_alone() -> None:
    source = unary("x * 0.5 * (1 + tl.erf(x / 1.4142135623730951))")
    assert apply(source, model("return torch.nn.functional.gelu(x)"), "reference_formula") == []
    assert apply(unary(GELU_TANH), model("return F.gelu(x, approximate='tanh')"), "reference_formula") == []


def test_keras_hardsigmoid_gets_relu6_over_six_and_the_constant_fix() -> None:
    source = unary("tl.minimum(tl.maximum(0.2 * x + 0.5, 0.0), 1.0)")
    reference = model("return self.act(x)", init="self.act = nn.Hardsigmoid()")
    _, _, added = single(source, reference, "reference_formula")
    assert added == ["out = tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0"]
    _, removed, added = single(source, reference, "reference_constant")
    assert added == ["out = tl.minimum(tl.maximum(0.16666666666666666 * x + 0.5, 0.0), 1.0)"]


def test_hardswish_through_a_jit_helper_is_replaced_at_the_store() -> None:
    source = unary("x").replace(
        "@triton.jit\ndef act_kernel",
        "@triton.jit\ndef _hswish(v):\n    return v * tl.minimum(tl.maximum(0.2 * v + 0.5, 0.0), 1.0)\n\n\n"
        "@triton.jit\ndef act_kernel",
    )
    source = source.replace("out = x\n", "out = _hswish(x)\n")
    _, removed, added = single(source, model("return F.hardswish(x)"), "reference_formula")
    assert removed == ["out = _hswish(x)"]
    assert added == ["out = x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0"]


def test_swish_beta_goes_inside_the_sigmoid_with_the_kernel_parameter() -> None:
    reference = model(
        "return x * torch.sigmoid(self.beta * x)", init="self.beta = beta", args=", beta", init_inputs="[1.5]"
    )
    source = unary(
        "beta * x * tl.sigmoid(x)", params=", beta", launch=", self.beta", init="self.beta = args[0]"
    )
    _, removed, added = single(source, reference, "reference_formula")
    assert added == ["out = x * tl.sigmoid(beta * x)"]


def test_swish_without_a_beta_parameter_uses_the_constructor_value() -> None:
    reference = model(
        "return x * torch.sigmoid(self.beta * x)", init="self.beta = beta", args=", beta", init_inputs="[1.5]"
    )
    _, _, added = single(unary("x * tl.sigmoid(x)"), reference, "reference_formula")
    assert added == ["out = x * tl.sigmoid(1.5 * x)"]


def test_correct_silu_is_left_alone() -> None:
    for value in ("x * tl.sigmoid(x)", "x / (1.0 + tl.exp(-x))"):
        assert apply(unary(value), model("return F.silu(x)"), "reference_formula") == []
        assert apply(unary(value), model("return F.silu(x)"), "reference_constant") == []


def test_hard_coded_leaky_slope_takes_the_kernel_parameter() -> None:
    reference = model(
        "return self.act(x)",
        init="self.act = nn.LeakyReLU(negative_slope)",
        args=", negative_slope",
        init_inputs="[0.2]",
    )
    source = unary(
        "tl.where(x > 0, x, 0.01 * x)",
        params=", slope",
        launch=", self.negative_slope",
        init="self.negative_slope = args[0]",
    )
    rw, removed, added = single(source, reference, "reference_constant")
    assert added == ["out = tl.where(x > 0, x, slope * x)"]
    assert "0.01 -> slope" in rw.description
    _, _, added = single(source, reference, "reference_formula")
    assert added == ["out = tl.where(x > 0.0, x, x * slope)"]


def test_leaky_slope_without_a_parameter_takes_the_literal() -> None:
    reference = model("return F.leaky_relu(x, 0.2)")
    _, _, added = single(unary("tl.where(x > 0, x, 0.01 * x)"), reference, "reference_constant")
    assert added == ["out = tl.where(x > 0, x, 0.2 * x)"]


def test_hardtanh_bounds_from_the_constructor_change_two_literals() -> None:
    reference = model(
        "return F.hardtanh(x, self.lo, self.hi)",
        init="self.lo = lo; self.hi = hi",
        args=", lo, hi",
        init_inputs="[-2.0, 3.0]",
    )
    source = unary("tl.minimum(tl.maximum(x, -1.0), 1.0)")
    _, _, added = single(source, reference, "reference_constant")
    assert added == ["out = tl.minimum(tl.maximum(x, -2.0), 3.0)"]


def test_upcast_variable_and_pointer_variable_are_followed() -> None:
    source = unary("xf * tl.sigmoid(xf)", prelude="xf = x.to(tl.float32)").replace(
        "x = tl.load(x_ptr + offs, mask=mask, other=0.0)",
        "ptrs = x_ptr + offs\n    x = tl.load(ptrs, mask=mask)",
    )
    _, _, added = single(source, model("return F.mish(x)"), "reference_formula")
    assert added[0].startswith("out = xf * (2.0 * tl.sigmoid(2.0 * tl.where(xf > 20.0, xf,")


def test_wrapper_function_between_forward_and_the_launch_is_followed() -> None:
    source = HEADER + textwrap.dedent("""\
        @triton.jit
        def swish_kernel(x_ptr, out_ptr, n, beta, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(out_ptr + offs, v * tl.sigmoid(v), mask=offs < n)


        def swish(x, beta):
            out = torch.empty_like(x)
            swish_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), beta, BLOCK=256)
            return out


        class ModelNew(nn.Module):
            def __init__(self, beta):
                super().__init__()
                self.scale = beta

            def forward(self, x):
                return swish(x.contiguous(), self.scale)
    """)
    reference = model(
        "return x * torch.sigmoid(self.beta * x)", init="self.beta = beta", args=", beta", init_inputs="[1.5]"
    )
    _, removed, added = single(source, reference, "reference_formula")
    assert added == ["tl.store(out_ptr + offs, v * tl.sigmoid(beta * v), mask=offs < n)"]


# ---------------------------------------------------------------- reference_formula: losses


def test_l1_missing_abs_in_an_accumulator_loop() -> None:
    source = HEADER + textwrap.dedent("""\
        @triton.jit
        def l1_kernel(p_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for start in range(0, n, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                mask = offs < n
                p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
                t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
                acc += tl.where(mask, p - t, 0.0)
            tl.store(out_ptr, tl.sum(acc, axis=0) / n)


        class ModelNew(nn.Module):
            def forward(self, predictions, targets):
                out = torch.empty(1, device=predictions.device)
                n = predictions.numel()
                l1_kernel[(1,)](predictions.reshape(-1), targets.reshape(-1), out, n, BLOCK=128)
                return out[0]
    """)
    _, removed, added = single(source, loss_model("F.l1_loss(predictions, targets)"), "reference_formula")
    assert added == ["acc += tl.where(mask, tl.abs(p - t), 0.0)"]


def test_unmasked_loss_term_is_masked_when_replaced() -> None:
    source = loss("d").replace("    term = tl.where(mask, term, 0.0)\n", "")
    _, _, added = single(source, loss_model("torch.abs(predictions - targets).mean()"), "reference_formula")
    assert added == ["term = tl.where(mask, tl.abs(a - b), 0.0)"]


def test_mse_written_as_l1_becomes_the_square() -> None:
    _, _, added = single(
        loss("tl.abs(d)"), loss_model("F.mse_loss(predictions, targets)"), "reference_formula"
    )
    assert added == ["term = (a - b) * (a - b)"]
    reference = loss_model("torch.mean((predictions - targets) ** 2)")
    assert apply(loss("d * d"), reference, "reference_formula") == []


SMOOTH_L1_BETA1 = "tl.where(tl.abs(d) < 1.0, 0.5 * d * d, tl.abs(d) - 0.5)"


def test_smooth_l1_uses_the_beta_the_kernel_receives() -> None:
    reference = loss_model(
        "self.loss(predictions, targets)",
        init="self.loss = nn.SmoothL1Loss(beta=beta)",
        args=", beta",
        init_inputs="[0.5]",
    )
    source = loss(SMOOTH_L1_BETA1, params=", beta", launch=", self.beta", init="self.beta = args[0]")
    _, _, added = single(source, reference, "reference_formula")
    assert added == [
        "term = tl.where(tl.abs(a - b) < beta, 0.5 * (a - b) * (a - b) / beta, tl.abs(a - b) - 0.5 * beta)"
    ]
    default = loss_model("F.smooth_l1_loss(predictions, targets)")
    assert apply(loss(SMOOTH_L1_BETA1), default, "reference_formula") == []


def test_huber_delta_from_a_literal_constructor_argument() -> None:
    reference = loss_model("self.loss(predictions, targets)", init="self.loss = nn.HuberLoss(delta=2.0)")
    _, _, added = single(loss(SMOOTH_L1_BETA1), reference, "reference_formula")
    assert added == [
        "term = tl.where(tl.abs(a - b) < 2.0, 0.5 * (a - b) * (a - b), 2.0 * (tl.abs(a - b) - 0.5 * 2.0))"
    ]


def test_bce_with_logits_through_log_sigmoid_becomes_the_stable_form() -> None:
    source = loss("-(b * tl.log(tl.sigmoid(a)) + (1.0 - b) * tl.log(1.0 - tl.sigmoid(a)))")
    reference = loss_model("F.binary_cross_entropy_with_logits(predictions, targets)")
    _, _, added = single(source, reference, "reference_formula")
    assert added == ["term = tl.maximum(a, 0.0) - a * b + tl.log(1.0 + tl.exp(-tl.abs(a)))"]
    stable = loss("tl.maximum(a, 0.0) - a * b + tl.log(1.0 + tl.exp(-tl.abs(a)))")
    assert apply(stable, reference, "reference_formula") == []


def test_kl_div_with_reversed_terms_is_rewritten() -> None:
    reference = loss_model("F.kl_div(predictions, targets, reduction='batchmean')")
    _, _, added = single(loss("tl.exp(a) * (a - tl.log(b))"), reference, "reference_formula")
    assert added == ["term = tl.where(b > 0.0, b * tl.log(b), 0.0) - b * a"]


# ---------------------------------------------------------------- when the rules stay quiet


SELU_FUNCTION = '''
def selu(input: torch.Tensor, inplace: bool = False, out: torch.Tensor = None) -> torch.Tensor:
    """SELU(x) = scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))."""
    alpha = 1.6732632423543772
    scale = 1.0507009873554805
    if out is not None:
        raise NotImplementedError
    if not inplace:
        zero = torch.zeros_like(input)
        result = scale * (torch.maximum(input, zero) + torch.minimum(zero, alpha * (torch.exp(input) - 1)))
    return result
'''


def test_a_function_the_reference_defines_is_read_through_its_call() -> None:
    """TritonBench's references are module functions a Model calls: locals substituted, literal branches
    taken."""
    reference = model("return selu(x)").replace("class Model", SELU_FUNCTION + "\n\nclass Model")
    wrong = "1.0507 * (tl.maximum(x, 0.0) + tl.minimum(x, 0.0) * tl.exp(tl.minimum(x, 0.0) / 1.6733))"
    _, removed, added = single(unary(wrong), reference, "reference_formula")
    assert removed == [f"out = {wrong}"]
    right = (
        "1.0507009873554805 * (tl.maximum(x, 0.0) + tl.minimum(0.0, 1.6732632423543772 * (tl.exp(x) - 1.0)))"
    )
    assert added == [f"out = {right}"]
    # A branch on a value only the run knows is not guessed: the reader gives up and nothing is proposed.
    branching = reference.replace("return selu(x)", "return selu(x, inplace=x.sum() > 0)")
    assert apply(unary(wrong), branching, "reference_formula") == []


def test_unknown_reference_operator_proposes_nothing() -> None:
    reference = model("return torch.cumsum(x, dim=0)")
    for rule in ("reference_formula", "reference_constant"):
        assert apply(unary("x * tl.sigmoid(x)"), reference, rule) == []
    assert apply(unary("x * tl.sigmoid(x)"), model("return self.linear(x)"), "reference_formula") == []


def test_no_reference_proposes_nothing() -> None:
    assert propose(unary(GELU_TANH), ["reference_formula", "reference_constant"], None) == []
    assert propose(unary(GELU_TANH), ["reference_formula", "reference_constant"], RuleContext()) == []


def test_kernel_not_reading_the_reference_inputs_is_left_alone() -> None:
    source = unary("x * 2.0").replace("x = tl.load(x_ptr + offs", "x = tl.load(out_ptr + offs")
    assert apply(source, model("return F.relu(x)"), "reference_formula") == []


def test_every_formula_rule_has_a_kernel_it_applies_to() -> None:
    cases = [
        (unary(GELU_TANH), model("return F.gelu(x)")),
        (unary("tl.where(x > 0, x, 0.01 * x)"), model("return F.leaky_relu(x, 0.2)")),
    ]
    covered = {
        r.rule
        for source, reference in cases
        for r in propose(source, None, RuleContext.from_reference(reference))
    }
    ids = {rule.id for rule in formula_rules.RULES}
    assert ids <= covered
    assert ids <= set(RULES)


# ---------------------------------------------------------------- the formulas run like PyTorch

ACTIVATIONS = [
    "F.gelu(x)",
    "F.gelu(x, approximate='tanh')",
    "F.silu(x)",
    "torch.sigmoid(x)",
    "torch.tanh(x)",
    "F.relu(x)",
    "F.relu6(x)",
    "F.hardsigmoid(x)",
    "F.hardswish(x)",
    "F.leaky_relu(x, 0.2)",
    "F.elu(x, alpha=0.7)",
    "F.celu(x, alpha=1.3)",
    "F.selu(x)",
    "F.softplus(x, beta=2.0, threshold=10.0)",
    "F.mish(x)",
    "F.hardtanh(x, -2.0, 0.5)",
    "F.logsigmoid(x)",
    "F.softsign(x)",
    "F.tanhshrink(x)",
    "F.softshrink(x, 0.3)",
    "F.hardshrink(x)",
    "F.threshold(x, 0.1, -3.0)",
    "torch.clamp(x, min=-0.5, max=0.75)",
    "x * torch.sigmoid(1.7 * x)",
    "torch.trunc(x * 3.0)",
    "torch.rad2deg(x)",
    "torch.cos(x) + torch.floor(x)",
]
LOSSES = [
    ("F.l1_loss(a, b, reduction='sum')", "real"),
    ("F.mse_loss(a, b, reduction='sum')", "real"),
    ("F.smooth_l1_loss(a, b, reduction='sum', beta=0.4)", "real"),
    ("F.huber_loss(a, b, reduction='sum', delta=1.7)", "real"),
    ("F.binary_cross_entropy_with_logits(a, b, reduction='sum')", "unit"),
    ("F.binary_cross_entropy(torch.sigmoid(a), b, reduction='sum')", "unit"),
    ("F.kl_div(a, b, reduction='sum')", "unit"),
    ("F.soft_margin_loss(a, b, reduction='sum')", "sign"),
    ("F.hinge_embedding_loss(a, b, margin=0.6, reduction='sum')", "sign"),
]


def test_every_formula_runs_in_the_interpreter_like_pytorch() -> None:
    """Each reference op's rewrite of a wrong kernel, run in the Triton interpreter, matches PyTorch."""
    script = [HEADER, "import torch.nn.functional as F\nresults = []\n"]
    for i, call in enumerate(ACTIVATIONS):
        reference = model(f"return {call}")
        fixed = apply(unary("x + 1234.5"), reference, "reference_formula")
        assert len(fixed) == 1, call
        body = fixed[0].source.replace("act_kernel", f"act_kernel_{i}").replace(HEADER, "")
        body = body.replace("class ModelNew", f"class ModelNew{i}")
        script.append(body)
        script.append(
            textwrap.dedent(f"""
            x = torch.cat([torch.randn(300) * 3, torch.tensor([0.0, 1e-3, -60.0, 60.0, 200.0, -200.0])])
            got, want = ModelNew{i}()(x), {call}
            ok = torch.allclose(got, want, atol=1e-5, rtol=1e-5)
            results.append(({call!r}, ok, (got - want).abs().max()))
        """)
        )
    for i, (call, domain) in enumerate(LOSSES):
        reference_call = call.replace("torch.sigmoid(a)", "a")
        reference = loss_model(reference_call.replace("(a, b", "(predictions, targets"))
        fixed = apply(loss("d + 1234.5"), reference, "reference_formula")
        assert len(fixed) == 1, call
        body = fixed[0].source.replace("loss_kernel", f"loss_kernel_{i}").replace(HEADER, "")
        body = body.replace("class ModelNew", f"class LossNew{i}")
        b = {"real": "torch.randn(300)", "unit": "torch.rand(300)", "sign": "torch.randn(300).sign()"}[domain]
        a = "torch.sigmoid(torch.randn(300) * 3)" if "torch.sigmoid(a)" in call else "torch.randn(300) * 3"
        script.append(body)
        script.append(
            textwrap.dedent(f"""
            a, b = {a}, {b}
            got, want = LossNew{i}()(a, b) * a.numel(), {reference_call}
            results.append(({call!r}, torch.allclose(got, want, atol=1e-3, rtol=1e-4), (got - want).abs()))
        """)
        )
    script.append("bad = [r for r in results if not r[1]]\nassert not bad, bad\n")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("call", ACTIVATIONS)
def test_a_correct_kernel_gets_no_proposal(call: str) -> None:
    """The rule's own output is already right: applied again, nothing is proposed."""
    reference = model(f"return {call}")
    fixed = apply(unary("x + 1234.5"), reference, "reference_formula")[0].source
    assert apply(fixed, reference, "reference_formula") == []
    assert apply(fixed, reference, "reference_constant") == []
