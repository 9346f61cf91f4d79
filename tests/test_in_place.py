"""The reference's in-place contract: a kernel that overwrites its input, or returns a new tensor where the
reference writes into a destination it is handed, is repaired by host glue the integrity gate accepts."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kernel_medic.graph.api import RepairResult, repair
from kernel_medic.graph.config import RepairConfig
from kernel_medic.tools.repair.rules.base import RuleContext
from kernel_medic.tools.repair.rules.registry import propose

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, x * slope), mask=mask)
'''

# Stores its result over its input and returns the input: right values, input destroyed.
IN_PLACE = KERNEL + '''

def leaky(x, slope):
    leaky_kernel[(triton.cdiv(x.numel(), 256),)](x, x, x.numel(), slope, BLOCK=256)
    return x


class ModelNew(torch.nn.Module):
    def __init__(self, slope=0.01):
        super().__init__()
        self.slope = slope

    def forward(self, x):
        return leaky(x, self.slope)
'''

OUT_OF_PLACE_REFERENCE = '''
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self, slope=0.01):
        super().__init__()
        self.slope = slope

    def forward(self, x):
        return F.leaky_relu(x, self.slope)


def get_inputs():
    return [torch.randn(6, 1000)]


def get_init_inputs():
    return [0.2]
'''

# The reference writes into the destination it is handed (TritonBench-G's originals often do) and returns it.
DESTINATION_REFERENCE = '''
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, out, x):
        out.copy_(F.leaky_relu(x, 0.2))
        return out


def get_inputs():
    return [torch.empty(6, 1000), torch.randn(6, 1000)]


def get_init_inputs():
    return []
'''

# The generation's function allocates its own output: right values, destination never written.
NEW_TENSOR = KERNEL + '''

def leaky(x):
    y = torch.empty_like(x)
    leaky_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), 0.2, BLOCK=256)
    return y


class ModelNew(torch.nn.Module):
    def forward(self, out, x):
        return leaky(x)
'''


def changed(old: str, new: str) -> list[str]:
    before = set(old.splitlines())
    return [line.strip() for line in new.splitlines() if line not in before]


def context(*relationships: str) -> RuleContext:
    report = {"cases": [{"name": "seed0", "verdict": "mismatch", "relationships": list(relationships)}]}
    return RuleContext.from_reference("", report)


def test_the_context_keeps_what_the_judge_said_of_each_input() -> None:
    ctx = context("input_modified:0", "input_update_wrong:2", "max_at_end")
    assert ctx.inputs_with("input_modified") == [0] and ctx.inputs_with("input_update_wrong") == [2]
    uncounted = {"cases": [{"counted": False, "relationships": ["input_modified:0"]}]}
    assert RuleContext.from_reference("", uncounted).inputs_with("input_modified") == []


def test_an_overwritten_input_is_cloned_at_the_top_of_forward() -> None:
    [rewrite] = propose(IN_PLACE, ["clone_modified_input"], context("input_modified:0"))
    assert changed(IN_PLACE, rewrite.source) == ["x = x.clone()"]
    assert rewrite.source.index("x = x.clone()") < rewrite.source.index("return leaky(x, self.slope)")


def test_a_destination_gets_the_result_copied_into_it() -> None:
    [rewrite] = propose(NEW_TENSOR, ["write_back_update"], context("input_update_wrong:0"))
    assert changed(NEW_TENSOR, rewrite.source) == ["result = leaky(x)", "out.copy_(result)", "return result"]


def test_the_in_place_rules_need_the_judges_word_about_that_input() -> None:
    assert propose(IN_PLACE, ["clone_modified_input", "write_back_update"], context()) == []
    assert propose(NEW_TENSOR, ["write_back_update"], context("input_modified:1")) == []
    # A forward that already returns the destination has wrong values there, not a broken contract.
    returns_it = NEW_TENSOR.replace("        return leaky(x)\n", "        leaky(x)\n        return out\n")
    assert propose(returns_it, ["write_back_update"], context("input_update_wrong:0")) == []


def problem(tmp_path: Path, reference: str, candidate: str) -> Path:
    folder = tmp_path / "problem"
    folder.mkdir()
    (folder / "reference.py").write_text(textwrap.dedent(reference).lstrip())
    (folder / "candidate.py").write_text(textwrap.dedent(candidate).lstrip())
    return folder


def run(folder: Path, tmp_path: Path) -> RepairResult:
    config = RepairConfig(strategy="offline", workers=2, kb_path=str(tmp_path / "kb"))
    return repair(folder, None, config, trace=tmp_path / "trace.jsonl", checkpoint_db=tmp_path / "cp.sqlite")


def test_a_kernel_that_overwrites_its_input_is_repaired_and_passes_the_gate(tmp_path: Path) -> None:
    result = run(problem(tmp_path, OUT_OF_PLACE_REFERENCE, IN_PLACE), tmp_path)
    assert result.status == "repaired" and result.integrity["verdict"] == "clean", result.stop_reason
    assert result.attempts[-1]["rule"] == "clone_modified_input"


def test_a_result_returned_instead_of_written_is_repaired_and_passes_the_gate(tmp_path: Path) -> None:
    result = run(problem(tmp_path, DESTINATION_REFERENCE, NEW_TENSOR), tmp_path)
    assert result.status == "repaired" and result.integrity["verdict"] == "clean", result.stop_reason
    assert result.attempts[-1]["rule"] == "write_back_update"


def test_the_result_takes_a_name_forward_does_not_use() -> None:
    head = "    def forward(self, out, x):\n"
    busy = NEW_TENSOR.replace(head, head + "        result = updated = x\n")
    [rewrite] = propose(busy, ["write_back_update"], context("input_update_wrong:0"))
    assert changed(busy, rewrite.source) == [
        "kmedic_result = leaky(x)", "out.copy_(kmedic_result)", "return kmedic_result"
    ]
    taken = busy.replace("result = updated = x", "result = updated = kmedic_result = x")
    assert propose(taken, ["write_back_update"], context("input_update_wrong:0")) == []
