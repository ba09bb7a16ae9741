"""mypy over the daemon and the client: the type tags the hot walks compare (`entry.type ==
"message"`) narrow the entry types as isinstance would, and a change that loses that (or
any other typing slip) fails the run instead of waiting for someone to run mypy by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_daemon_and_the_client_type_check() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "server", "clients"],
        cwd=ROOT, capture_output=True, text=True, timeout=280,
    )
    assert run.returncode == 0, run.stdout + run.stderr
