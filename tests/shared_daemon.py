"""A real shared daemon for tests: a runtime dir of its own, the CLI run against it, and
ending the daemon a test started (by its pid, which `contextd/daemon/status` reports)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def shared_environment() -> Iterator[dict[str, str]]:
    """A runtime dir short enough for a socket path, and the shared daemon switched on."""
    runtime = tempfile.mkdtemp(prefix="ctd-", dir="/tmp")
    try:
        yield {**os.environ, "XDG_RUNTIME_DIR": runtime, "CONTEXTD_SHARED": "1"}
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def contextd(env: dict[str, str], data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `contextd` CLI, as a user runs it beside the shared daemon."""
    return subprocess.run(
        [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), *args],
        check=False, env=env, capture_output=True, text=True, timeout=120,
    )


def shared_command(data_dir: Path, *options: str) -> list[str]:
    """`contextd serve --shared` with options for the daemon it starts (`--settings FILE`)."""
    return [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "serve", "--shared", *options]


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_daemon(pid: int) -> None:
    """The daemon a test started (through a forwarder) is ended by its pid."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
