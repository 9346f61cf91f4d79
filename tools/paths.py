"""Where kernel-medic keeps its files by default (checkpoints, traces, the knowledge base)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """Where checkpoints and traces live by default: $KMEDIC_HOME, else the XDG data directory."""
    if os.environ.get("KMEDIC_HOME"):
        return Path(os.environ["KMEDIC_HOME"])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "kernel-medic"
