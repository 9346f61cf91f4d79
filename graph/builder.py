"""The repair graph, wired as in the design's diagram. Read top to bottom, it is the diagram.

intake -> evaluate --pass--> audit
             |mismatch
             v
         diagnose -> retrieve -> patch -> verify --passes--> audit --clean--> distill -> END(repaired)
             ^                             |                   |cheat
             |        instrument <---------+ (first failed)    +--> patch (with the finding)
             +-------- guard <-------------+ (otherwise)
                         |budget spent / stagnation / oscillation
                         v        (stagnation once: back to the version before the best)
                       END(unrepaired, best attempt kept)
"""

from __future__ import annotations

from typing import Literal

from kernel_medic.graph.budget import stop_reason
from kernel_medic.graph.runtime import config_of
from kernel_medic.graph.state import RepairState
from kernel_medic.nodes.audit import audit
from kernel_medic.nodes.diagnose import diagnose
from kernel_medic.nodes.distill import distill
from kernel_medic.nodes.evaluate import evaluate
from kernel_medic.nodes.guard import guard
from kernel_medic.nodes.instrument import instrument
from kernel_medic.nodes.intake import intake
from kernel_medic.nodes.patch import patch
from kernel_medic.nodes.retrieve import retrieve
from kernel_medic.nodes.verify import verify
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph


def after_intake(state: RepairState) -> Literal["evaluate", "__end__"]:
    return END if state.get("status") == "invalid" else "evaluate"


def after_evaluate(state: RepairState) -> Literal["audit", "diagnose", "__end__"]:
    if state.get("status") in ("invalid", "unrepaired"):  # bad input, interpreter limit, stub, no launch
        return END
    return "audit" if state.get("best_verdict") == "pass" else "diagnose"


def after_patch(state: RepairState) -> Literal["verify", "guard"]:
    # Nothing to verify (no rule left, an LLM that failed to produce an edit): the guard decides.
    return "verify" if state.get("pending") else "guard"


def after_verify(state: RepairState) -> Literal["audit", "instrument", "guard"]:
    if state.get("pending"):
        return "audit"
    # Instrumentation is worth its cost only once a first fix has failed (as in the paper), and never on a
    # crash: its probes need outputs to compare.
    if (state.get("best_report") or {}).get("crash"):
        return "guard"
    # Its findings feed the next diagnosis, which a spent wall budget never reaches (probes ran 61 s past it).
    if stop_reason(state, config_of(state)) == "wall_budget":
        return "guard"
    return "instrument" if not state.get("instrumentation") else "guard"


def after_audit(state: RepairState) -> Literal["distill", "patch", "__end__"]:
    if (state.get("integrity") or {}).get("verdict") == "clean":
        return "distill"
    # A refused fix goes back to patch with the finding, unless the budgets are spent (status set by audit).
    return END if state.get("status") == "rejected" else "patch"


def after_guard(state: RepairState) -> Literal["diagnose", "__end__"]:
    return END if state.get("status") in ("unrepaired", "rejected") else "diagnose"


def build_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    builder = StateGraph(RepairState)
    builder.add_node("intake", intake)
    builder.add_node("evaluate", evaluate)
    builder.add_node("diagnose", diagnose)
    builder.add_node("retrieve", retrieve)
    builder.add_node("instrument", instrument)
    builder.add_node("patch", patch)
    builder.add_node("verify", verify)
    builder.add_node("audit", audit)
    builder.add_node("distill", distill)
    builder.add_node("guard", guard)

    builder.add_edge(START, "intake")
    builder.add_conditional_edges("intake", after_intake)
    builder.add_conditional_edges("evaluate", after_evaluate)
    builder.add_edge("diagnose", "retrieve")  # hypotheses decide what to look up
    builder.add_edge("retrieve", "patch")  # patterns order the patch candidates
    builder.add_conditional_edges("patch", after_patch)
    builder.add_conditional_edges("verify", after_verify)
    builder.add_edge("instrument", "guard")  # findings feed the next diagnosis, within the budgets
    builder.add_conditional_edges("audit", after_audit)
    builder.add_edge("distill", END)
    builder.add_conditional_edges("guard", after_guard)
    return builder.compile(checkpointer=checkpointer, name="kernel-medic")


# `langgraph dev` / Studio load this; the server brings its own checkpointer.
graph = build_graph()
