"""intake: load and validate the problem; bad input ends the run with one clear line, never a traceback."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.runtime import traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.evaluation.problem import InvalidProblem, load_problem
from kernel_medic.tools.trace import source_hash
from kernel_medic.vectordb.embedding import model
from kernel_medic.vectordb.store import open_knowledge_base


@traced("intake")
def intake(state: RepairState) -> dict[str, Any]:
    try:
        config = RepairConfig.from_dict(dict(state.get("config") or {}))
        problem = load_problem(state["reference_path"], state.get("candidate_path") or None)
        problem = problem.with_tolerance(config.tolerance)
    except (InvalidProblem, ValueError, KeyError) as exc:
        return {"status": "invalid", "stop_reason": "invalid_problem", "error": str(exc)}
    # The knowledge base and its embedding model take seconds to load in a fresh process: load them while
    # the first evaluation runs in the sandbox instead of after it (retrieve waits on the same locks). Not a
    # daemon: a run that ends first must not leave a first-time seeding of the store half written.
    threading.Thread(target=_warm_up, args=(config.kb_path,), name="kmedic-kb-warmup").start()
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


def _warm_up(kb_path: str | None) -> None:
    try:
        open_knowledge_base(kb_path)
        model()
    except Exception:  # noqa: BLE001 - retrieve opens the store again and reports what is wrong there
        pass
