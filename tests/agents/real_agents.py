"""Where the real agents are (installed by tests/agents/install.sh) and the environment
that keeps each offline: its own HOME, the scripted server on 127.0.0.1, no telemetry,
update checks or other traffic, and a proxy that refuses anything else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_llm import FakeLLM

AGENTS_DIR = Path(os.environ.get("CONTEXTD_AGENTS_DIR") or Path.home() / ".cache" / "contextd" / "agents")
REFUSING_PROXY = "http://127.0.0.1:9"  # nothing listens there: any escape fails at once
NO_PROXY = "127.0.0.1,localhost"
PI_OFFLINE = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
STEP_SECONDS = 120  # one step of an agent against the scripted server, on a loaded machine
TURN_SECONDS = 120


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


def claude_environment(home: Path, shared: dict[str, str], fake: FakeLLM) -> dict[str, str]:
    return {
        **offline_environment(home, shared),
        "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1",
        "IS_SANDBOX": "1",  # as root, --dangerously-skip-permissions needs it
        "ENABLE_TOOL_SEARCH": "false",  # MCP tools in `tools`, not deferred behind a search tool
    }


def run_turns(
    claude: Path, env: dict[str, str], cwd: Path, turns: list[str], before: dict[int, Callable[[], None]]
) -> list[dict[str, Any]]:
    """One Claude Code process fed the turns over stream-json, each after the previous
    one's `result` (and `before[i]()` for turn i); every event it printed."""
    process = subprocess.Popen(
        [str(claude), "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
         "--dangerously-skip-permissions"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd,
    )
    assert process.stdin is not None and process.stdout is not None
    events: list[dict[str, Any]] = []
    try:
        for index, turn in enumerate(turns):
            before.get(index, lambda: None)()
            process.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": turn}}) + "\n")
            process.stdin.flush()
            for line in process.stdout:
                events.append(json.loads(line))
                if events[-1].get("type") == "result":
                    break
            else:
                raise AssertionError(f"Claude Code ended before answering {turn!r}")
        process.stdin.close()
        process.wait(timeout=TURN_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
    return events
