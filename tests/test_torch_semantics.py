"""The LLM prompts quote PyTorch's definition of each operator the reference calls."""

from __future__ import annotations

from importlib.resources import files

import tomllib
from kernel_medic.tools.repair.llm import LLMClient, LLMSettings
from kernel_medic.tools.repair.llm_patch import LLMBudget, LLMOptions, LLMPatcher
from kernel_medic.tools.repair.llm_prompt import Anchor, patch_messages, region_messages
from kernel_medic.tools.repair.torch_semantics import reference_semantics
from openai_server import ScriptedOpenAIServer
from test_search import request_for

GELU_REFERENCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, beta: float) -> None:
        super().__init__()
        self.loss = nn.SmoothL1Loss(beta=beta)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = max(x.shape[0], 1) * F.gelu(x)
        return self.loss(z, y) + F.gelu(y, approximate="tanh").sum()


def get_inputs():
    return [torch.randn(4, 8).softmax(dim=1), torch.randn(4, 8)]


def get_init_inputs():
    return [0.5]
'''

CANDIDATE = """import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    t = tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))
    tl.store(out_ptr + offs, x * t, mask=offs < n)
"""


def test_each_called_operator_is_defined_once_in_call_order_with_the_call_as_written() -> None:
    lines = reference_semantics(GELU_REFERENCE)
    assert len(lines) == 2  # gelu twice is one operator; Python's max() and the input builders' calls are not
    assert lines[0].startswith("`nn.SmoothL1Loss(beta=beta)`:") and "0.5 * d * d / beta" in lines[0]
    assert lines[1].startswith("`F.gelu(x)`:") and "tl.math.erf(x * 0.7071067811865476)" in lines[1]
    assert reference_semantics(GELU_REFERENCE, limit=1) == lines[:1]
    assert reference_semantics("def broken(:\n") == []
    bare = "from torch.nn.functional import gelu\n\ndef forward(x):\n    return gelu(x)\n"
    assert "erf" in reference_semantics(bare)[0]


def test_the_table_names_each_call_once_and_defines_every_operator() -> None:
    table = tomllib.loads(files("kernel_medic.prompts").joinpath("torch_semantics.toml").read_text("utf-8"))
    calls = [c for entry in table.values() for c in entry["calls"]]
    assert len(calls) == len(set(calls))  # a call listed twice would silently take one operator's text
    assert all(entry["text"].strip() and entry["calls"] for entry in table.values())


def test_the_region_question_and_the_file_prompt_quote_the_definition() -> None:
    request = request_for(CANDIDATE, reference_source=GELU_REFERENCE, report={"verdict": "mismatch"})
    [_, user] = region_messages("p", CANDIDATE, Anchor(9, 9, "line 9: suspect"), GELU_REFERENCE)
    assert "tl.math.erf(x * 0.7071067811865476)" in user["content"]
    messages, _ = patch_messages(request, "", 8000, 0.25)
    assert "tl.math.erf(x * 0.7071067811865476)" in messages[1]["content"]
    # A tight budget trims the definitions to the first before it touches the kernel.
    tight, trimmed = patch_messages(request, "", 700, 0.25)
    assert "semantics" in trimmed and CANDIDATE in tight[1]["content"]


def test_a_model_asked_about_the_lines_receives_the_definition() -> None:
    # Through the real client and patcher: what the server is asked holds PyTorch's definition.
    fix = "```python\n    t = 1.0 + tl.math.erf(x * 0.7071067811865476)\n```"
    script = [{"content": fix, "usage": (5, 5)}]
    hypotheses = [
        {"bug_class": "operator_misread", "evidence": ["constant_ratio"], "location": "candidate.py:9"}
    ]
    with ScriptedOpenAIServer(script) as server:
        client = LLMClient(LLMSettings(model="scripted", base_url=server.base_url, backoff_s=0.0))
        patcher = LLMPatcher(client, LLMOptions(region_first=True), LLMBudget(4, 2, 600.0))
        outcome = patcher.propose(
            request_for(CANDIDATE, reference_source=GELU_REFERENCE, report={"verdict": "mismatch"},
                        hypotheses=hypotheses)
        )
    asked = server.requests[0]["messages"][1]["content"]
    assert "What PyTorch defines these calls to compute" in asked and "erf(x / sqrt(2))" in asked
    assert outcome.proposal is not None and "tl.math.erf" in outcome.proposal.source


TRITONBENCH_REFERENCE = '''
import torch


def selu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """
    Applies SELU elementwise.
{padding}
    """
    alpha = 1.6732632423543772
    zero = torch.zeros_like(input)
    return 1.0507 * (torch.maximum(input, zero) + torch.minimum(input, alpha * torch.exp(input)))


class Model(torch.nn.Module):
    def forward(self, x0):
        return selu(x0)


def get_inputs():
    return [torch.randn(5)]
'''


def test_the_region_question_shows_the_function_a_tritonbench_model_calls() -> None:
    """TritonBench's Model only calls a function of the reference: the question shows that function, and
    drops its docstring rather than the computation when the window is tight."""
    for padding in ("", "\n".join(f"    Detail {i}." for i in range(60))):
        reference = TRITONBENCH_REFERENCE.format(padding=padding)
        [_, user] = region_messages("p", CANDIDATE, Anchor(9, 9, "line 9: suspect"), reference)
        assert "alpha * torch.exp(input)" in user["content"]
        assert "return selu(x0)" in user["content"]
        assert "Detail 0." not in user["content"]
        assert ("Applies SELU elementwise." in user["content"]) is not bool(padding)
