"""Where the real agents are (installed by tests/agents/install.sh) and the environment
that keeps each offline: its own HOME, the scripted server on 127.0.0.1, no telemetry,
update checks or other traffic, and a proxy that refuses anything else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENTS_DIR = Path(os.environ.get("CONTEXTD_AGENTS_DIR") or Path.home() / ".cache" / "contextd" / "agents")
REFUSING_PROXY = "http://127.0.0.1:9"  # nothing listens there: any escape fails at once
NO_PROXY = "127.0.0.1,localhost"
PI_OFFLINE = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
STEP_SECONDS = 120  # one step of an agent against the scripted server, on a loaded machine


def agent_command(folder: str, command: str) -> Path:
    """The agent's command, or the test is skipped (which fails under CI)."""
    path = AGENTS_DIR / folder / "node_modules" / ".bin" / command
    if not path.exists():
        pytest.skip(f"{command} is not installed in {AGENTS_DIR} (run tests/agents/install.sh)")
    return path


def offline_environment(home: Path, shared: dict[str, str]) -> dict[str, str]:
    """The agent's environment: the shared daemon of the test (`shared`), a HOME of its
    own, every proxy pointing at a closed port but for the loopback."""
    return {
        **shared,
        "HOME": str(home),
        "HTTPS_PROXY": REFUSING_PROXY, "HTTP_PROXY": REFUSING_PROXY,
        "https_proxy": REFUSING_PROXY, "http_proxy": REFUSING_PROXY,
        "NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY,
    }


def contextd(env: dict[str, str], data_dir: Path, *args: str, cwd: Path | None = None) -> str:
    """Run a contextd command as the user would; its output."""
    done = subprocess.run(
        [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), *args],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=True,
    )
    return done.stdout


def stop_shared_daemon(env: dict[str, str], data_dir: Path) -> None:
    """End the shared daemon the agent's contextd commands started, if one runs."""
    from tests.shared_daemon import stop_daemon

    status = subprocess.run(
        [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "status", "--json"],
        env=env, capture_output=True, text=True, check=False, timeout=60,
    )
    if status.returncode == 0:
        stop_daemon(json.loads(status.stdout)["pid"])
