"""intake: load and validate the problem; bad input ends the run with one clear line, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.runtime import traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.evaluation.problem import InvalidProblem, load_problem
from kernel_medic.tools.trace import source_hash


@traced("intake")
def intake(state: RepairState) -> dict[str, Any]:
    try:
        config = RepairConfig.from_dict(dict(state.get("config") or {}))
        problem = load_problem(state["reference_path"], state.get("candidate_path") or None)
        problem = problem.with_tolerance(config.tolerance)
    except (InvalidProblem, ValueError, KeyError) as exc:
        return {"status": "invalid", "stop_reason": "invalid_problem", "error": str(exc)}
    return {
        "reference_path": str(Path(problem.reference_path).resolve()),
        "candidate_path": str(Path(problem.candidate_path).resolve()),
        "problem_name": problem.name,
        "reference_source": problem.reference_source,
        "original_source": problem.candidate_source,
        "current_source": problem.candidate_source,
        "best_source": problem.candidate_source,
        "config": config.to_dict(),
        "seen_hashes": [source_hash(problem.candidate_source)],
        "status": "running",
    }
