from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# Checkpoints and traces of runs that name no path go to a throw-away data directory, never the user's,
# removed when this process ends.
if "KMEDIC_HOME" not in os.environ:
    os.environ["KMEDIC_HOME"] = tempfile.mkdtemp(prefix="kmedic-test-home-")
    atexit.register(shutil.rmtree, os.environ["KMEDIC_HOME"], True)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def evaluator() -> Iterator[object]:
    """One warm cpu worker pool for the whole session: workers cost seconds to start, jobs milliseconds."""
    from kernel_medic.tools.evaluation.evaluate import Evaluator

    with Evaluator(device="cpu", workers=2) as ev:
        yield ev


# The longest files by measured time (`--durations=0`, round 40), longest first. With `--dist loadfile`
# each file runs whole on one worker; xdist's default order (most tests first) put one-test files of 50-100 s
# last, the other worker idle until they ended. `make test` keeps this order (`--no-loadscope-reorder`): the
# long files start first and the short ones fill in behind them.
LONGEST_FIRST = (
    "test_corpus.py",
    "test_integrity.py",
    "test_resume.py",
    "test_crash_repair.py",
    "test_graph.py",
    "test_integrity_gate.py",
    "test_batch.py",
    "test_llm_strategy.py",
    "test_bench.py",
    "test_search.py",
    "test_correct_corpus.py",
    "test_kb_graph.py",
    "test_notebook.py",
    "test_verdicts.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its order
