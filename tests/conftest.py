from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# Checkpoints and traces of runs that name no path go to a throw-away data directory, never the user's.
os.environ.setdefault("KMEDIC_HOME", tempfile.mkdtemp(prefix="kmedic-test-home-"))

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def evaluator() -> Iterator[object]:
    """One warm cpu worker pool for the whole session: workers cost seconds to start, jobs milliseconds."""
    from kernel_medic.tools.evaluation.evaluate import Evaluator

    with Evaluator(device="cpu", workers=2) as ev:
        yield ev


# Files that take minutes go first. xdist's loadfile hands whole files to the two workers in collection
# order, so a long file collected late keeps one worker busy alone while the other has nothing left.
SLOW_FIRST = (
    "test_integrity.py",
    "test_batch.py",
    "test_resume.py",
    "test_search.py",
    "test_graph.py",
    "test_bench.py",
    "test_crash_repair.py",
    "test_import_kernelbench.py",
    "test_kb_graph.py",
    "test_integrity_gate.py",
    "test_notebook.py",
    "test_ray.py",
    "test_rewrites.py",
    "test_studio.py",
    "test_html_report.py",
    "test_sandbox_attacks.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file keeps its order
