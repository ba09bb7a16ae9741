"""Where contextd keeps its data by default: a module of its own so that a client working
out the shared daemon's socket does not import the store (pydantic and the model tables)."""

from __future__ import annotations

import os
from pathlib import Path


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "contextd"
