"""The real pi (pinned, offline against the scripted server) with contextd's extension
(clients/pi/contextd.ts) installed the way pi installs extensions: its compaction, and the
branch summary written when it goes back in its session tree, hold contextd's summary of
the same span; without a daemon pi summarizes as usual."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agents.fake_llm import FakeLLM
from tests.agents.real_agents import PI_OFFLINE, STEP_SECONDS, agent_command, offline_environment, stop_shared_daemon

EXTENSION = Path(__file__).parents[2] / "clients" / "pi" / "contextd.ts"
TREE_COMMAND = Path(__file__).parent / "pi_tree_command.ts"
CONSTRAINT = "Never force-push to the release branch."
FAILING_CHECK = "pytest -q tests/test_wombat.py"
CHECK_TURN = f"{CONSTRAINT} Run the check. CALL bash {json.dumps({'command': FAILING_CHECK})}"
BRANCH_SUMMARY_PROMPT = "summary of this conversation branch"  # pi's own summarizer's request


def pi_home(home: Path, fake: FakeLLM) -> None:
    agent = home / ".pi" / "agent"
    (agent / "extensions").mkdir(parents=True)
    shutil.copy(EXTENSION, agent / "extensions" / "contextd.ts")
    shutil.copy(TREE_COMMAND, agent / "extensions" / "tree_command.ts")  # `/tree-to <entryId>`
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


def session_entries(session_file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in session_file.read_text().splitlines()]


def pi_session(
    env: dict[str, str], tmp_path: Path, prompts: list[str], then: Callable[[PiRpc, Path], None]
) -> list[dict[str, Any]]:
    """Run pi: each of `prompts` as a turn, then `then(pi, its session file)`; the entries pi wrote."""
    workspace = tmp_path / "work"
    workspace.mkdir()
    pi = PiRpc(agent_command("pi", "pi"), env, workspace)
    try:
        for prompt in prompts:
            pi.prompt(prompt)
        session_file = Path(pi.respond({"type": "get_state"})["data"]["sessionFile"])
        then(pi, session_file)
    finally:
        pi.close()
    return session_entries(session_file)


def compaction_of(env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    """pi's compaction entry after the turn with the failing check and a plain one (the kept
    tail is small: the first turn is summarized)."""

    def compact(pi: PiRpc, session_file: Path) -> None:
        compacted = pi.respond({"type": "compact"})
        assert compacted["success"], compacted

    entries = pi_session(env, tmp_path, [CHECK_TURN, "NOTOOL what now?"], compact)
    return next(entry for entry in entries if entry.get("type") == "compaction")


def branch_summary_of(env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    """pi's branch summary entry after a plain turn and the turn with the failing check, then
    going back in the session tree to the first request: the branch left is everything after
    it (the request itself goes back to the editor, as in pi's `/tree`)."""

    def back_to_the_first_request(pi: PiRpc, session_file: Path) -> None:
        first = next(
            entry["id"] for entry in session_entries(session_file)
            if entry.get("type") == "message" and entry["message"]["role"] == "user"
        )
        navigated = pi.respond({"type": "prompt", "message": f"/tree-to {first}"})
        assert navigated["success"], navigated

    entries = pi_session(env, tmp_path, ["NOTOOL let us begin.", CHECK_TURN], back_to_the_first_request)
    return next(entry for entry in entries if entry.get("type") == "branch_summary")


def with_daemon(
    tmp_path: Path, shared_env: dict[str, str], run: Callable[[dict[str, str], Path], dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`run(env, tmp_path)` with the extension reaching a shared daemon of the test's own;
    what it returned and the requests the scripted server had."""
    home, data_dir = tmp_path / "home", tmp_path / "data"
    with FakeLLM() as fake:
        pi_home(home, fake)
        env = {**offline_environment(home, shared_env), **PI_OFFLINE, "CONTEXTD_PI_TIMEOUT_MS": str(STEP_SECONDS * 1000),
               "CONTEXTD_PI_COMMAND": json.dumps([sys.executable, "-m", "contextd", "--data-dir", str(data_dir)])}
        try:
            return run(env, tmp_path), fake.requests
        finally:
            stop_shared_daemon(env, data_dir)


def without_daemon(
    tmp_path: Path, run: Callable[[dict[str, str], Path], dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`run(env, tmp_path)` with the extension's daemon command failing at once."""
    home = tmp_path / "home"
    with FakeLLM() as fake:
        pi_home(home, fake)
        env = {**offline_environment(home, {}), **PI_OFFLINE,
               "CONTEXTD_PI_COMMAND": json.dumps([sys.executable, "-c", "import sys; sys.exit(1)"])}
        return run(env, tmp_path), fake.requests


def asked_for_a_branch_summary(requests: list[dict[str, Any]]) -> bool:
    return any(BRANCH_SUMMARY_PROMPT in json.dumps(request["body"]) for request in requests)


def test_pi_compacts_with_contextds_summary(tmp_path: Path, shared_env: dict[str, str]) -> None:
    compaction, _ = with_daemon(tmp_path, shared_env, compaction_of)
    assert compaction["details"]["by"] == "contextd"
    assert "FAKE-SUMMARY" not in compaction["summary"]
    assert CONSTRAINT in compaction["summary"] and f"`{FAILING_CHECK}` failed" in compaction["summary"]


def test_without_a_daemon_pi_compacts_as_usual(tmp_path: Path) -> None:
    compaction, _ = without_daemon(tmp_path, compaction_of)
    assert "FAKE-SUMMARY" in compaction["summary"]
    assert compaction.get("details", {}).get("by") != "contextd"


def test_going_back_in_pis_tree_summarizes_the_branch_left_with_contextd(
    tmp_path: Path, shared_env: dict[str, str]
) -> None:
    summary, requests = with_daemon(tmp_path, shared_env, branch_summary_of)
    assert not asked_for_a_branch_summary(requests)
    assert summary["fromHook"] is True and summary["details"]["by"] == "contextd"
    assert "FAKE-SUMMARY" not in summary["summary"]
    assert CONSTRAINT in summary["summary"] and f"`{FAILING_CHECK}` failed" in summary["summary"]


def test_without_a_daemon_pi_summarizes_the_branch_as_usual(tmp_path: Path) -> None:
    summary, requests = without_daemon(tmp_path, branch_summary_of)
    assert asked_for_a_branch_summary(requests)
    assert "FAKE-SUMMARY" in summary["summary"]
    assert summary.get("details", {}).get("by") != "contextd"
