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

