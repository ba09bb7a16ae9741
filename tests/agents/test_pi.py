"""The real pi (pinned, offline against the scripted server) with contextd's extension
(clients/pi/contextd.ts) installed the way pi installs extensions: its compaction holds
contextd's summary of the same span; without a daemon pi compacts as usual."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agents.fake_llm import FakeLLM
from tests.agents.real_agents import agent_command, offline_environment, stop_shared_daemon

EXTENSION = Path(__file__).parents[2] / "clients" / "pi" / "contextd.ts"
CONSTRAINT = "Never force-push to the release branch."
FAILING_CHECK = "pytest -q tests/test_wombat.py"
STEP_SECONDS = 120


def pi_home(home: Path, fake: FakeLLM) -> None:
    agent = home / ".pi" / "agent"
    (agent / "extensions").mkdir(parents=True)
    shutil.copy(EXTENSION, agent / "extensions" / "contextd.ts")
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": fake.url, "api": "anthropic-messages", "apiKey": "dummy",
        "models": [{"id": "fake-claude", "name": "Fake Claude", "contextWindow": 200000, "maxTokens": 8192}],
    }}}))
    # A small kept tail, so the first turn is what the compaction summarizes.
    (agent / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 50}}))


class PiRpc:
    """`pi --mode rpc`: commands on stdin, events and responses on stdout."""

    def __init__(self, pi: Path, env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [str(pi), "--mode", "rpc", "--provider", "fake", "--model", "fake-claude"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd,
        )

    def until(self, command: dict[str, Any], done: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            event = json.loads(line)
            if done(event):
                return event
        raise AssertionError(f"pi ended before answering {command}")

    def prompt(self, text: str) -> None:
        self.until({"type": "prompt", "message": text}, lambda e: e.get("type") == "agent_end")

    def respond(self, command: dict[str, Any]) -> dict[str, Any]:
        name = command["type"]
        return self.until({**command, "id": name}, lambda e: e.get("type") == "response" and e.get("id") == name)

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=STEP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()


def compaction_of(env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    """Run pi: a turn with a failing check, a plain turn, then compact; pi's compaction entry."""
    workspace = tmp_path / "work"
    workspace.mkdir()
    pi = PiRpc(agent_command("pi", "pi"), env, workspace)
    try:
        pi.prompt(f"{CONSTRAINT} Run the check. CALL bash {json.dumps({'command': FAILING_CHECK})}")
        pi.prompt("NOTOOL what now?")
        compacted = pi.respond({"type": "compact"})
        assert compacted["success"], compacted
        session_file = Path(pi.respond({"type": "get_state"})["data"]["sessionFile"])
    finally:
        pi.close()
    entries = [json.loads(line) for line in session_file.read_text().splitlines()]
    return next(entry for entry in entries if entry.get("type") == "compaction")


def test_pi_compacts_with_contextds_summary(tmp_path: Path, shared_env: dict[str, str]) -> None:
    home, data_dir = tmp_path / "home", tmp_path / "data"
    with FakeLLM() as fake:
        pi_home(home, fake)
        env = {**offline_environment(home, shared_env), "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1",
               "PI_TELEMETRY": "0",
               "CONTEXTD_PI_COMMAND": json.dumps([sys.executable, "-m", "contextd", "--data-dir", str(data_dir)])}
        try:
            compaction = compaction_of(env, tmp_path)
        finally:
            stop_shared_daemon(env, data_dir)
    assert compaction["details"]["by"] == "contextd"
    assert "FAKE-SUMMARY" not in compaction["summary"]
    assert CONSTRAINT in compaction["summary"] and f"`{FAILING_CHECK}` failed" in compaction["summary"]


def test_without_a_daemon_pi_compacts_as_usual(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeLLM() as fake:
        pi_home(home, fake)
        env = {**offline_environment(home, {}), "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0",
               "CONTEXTD_PI_COMMAND": json.dumps([sys.executable, "-c", "import sys; sys.exit(1)"])}
        compaction = compaction_of(env, tmp_path)
    assert "FAKE-SUMMARY" in compaction["summary"]
    assert compaction.get("details", {}).get("by") != "contextd"
