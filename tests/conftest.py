from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def evaluator() -> Iterator[object]:
    """One warm cpu worker pool for the whole session: workers cost seconds to start, jobs milliseconds."""
    from kernel_medic.tools.evaluate import Evaluator

    with Evaluator(device="cpu", workers=2) as ev:
        yield ev
