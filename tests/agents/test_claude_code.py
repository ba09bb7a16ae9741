"""The real Claude Code (pinned, offline against the scripted server) with contextd
installed into its HOME: after a /compact, the SessionStart hook adds what Claude Code's
summary lost, and the MCP tools reach what the compaction folded away."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from contextd_client.agents.added_context import HEADER

from tests.agents.fake_llm import FakeLLM
from tests.agents.real_agents import agent_command, claude_environment, contextd, run_turns, stop_shared_daemon

MIRROR_SECONDS = 60
CONSTRAINT = "Never push to the main branch without asking me first."
FAILING_COMMAND = "pytest -q tests/test_quokka.py"
OPEN_ERROR = f"`{FAILING_COMMAND}` failed"
"""A check that fails: only the tool's output says so, and Claude Code's (scripted) summary
drops it."""


def wait_for_mirrored_compaction(env: dict[str, str], data_dir: Path) -> None:
    """Until the daemon's mirror holds Claude Code's compaction (settled at its summary
    record: Claude Code 2.1.328 writes the size after it in the boundary)."""
    deadline = time.monotonic() + MIRROR_SECONDS
    while time.monotonic() < deadline:
        rows = json.loads(contextd(env, data_dir, "sessions", "--stats", "--json"))["sessions"]
        if any(row.get("stats", {}).get("compactions", {}).get("count") for row in rows):
            return
        time.sleep(0.5)
    raise AssertionError("the mirror never showed Claude Code's compaction")


def added_by_contextd(request: dict[str, Any]) -> list[str]:
    """The texts of the request's messages that hold contextd's added context (Claude Code
    puts a hook's additional context in a message of its own)."""
    found = []
    for message in request["body"].get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        found += [b.get("text", "") for b in blocks if isinstance(b, dict) and HEADER in str(b.get("text"))]
    return found


def test_claude_code_gets_back_what_its_compaction_lost(tmp_path: Path, shared_env: dict[str, str]) -> None:
    claude = agent_command("claude-code", "claude")
    home, workspace, data_dir = tmp_path / "home", tmp_path / "work", tmp_path / "data"
    workspace.mkdir(parents=True)
    home.mkdir()
    with FakeLLM() as fake:
        env = claude_environment(home, shared_env, fake)
        installed = contextd(env, data_dir, "install", "claude-code")
        assert "changed:" in installed
        try:
            events = run_turns(claude, env, workspace, [
                f"{CONSTRAINT} Run the check. CALL Bash {json.dumps({'command': FAILING_COMMAND})}",
                "/compact",
                "NOTOOL what next?",
                "NOTOOL and then?",
                'CALL mcp__contextd__history_search {"query": "test_quokka"}',
            ], before={2: lambda: wait_for_mirrored_compaction(env, data_dir)})
        finally:
            stop_shared_daemon(env, data_dir)
    assert [e.get("subtype") for e in events if e.get("type") == "result"] == ["success"] * 5
    requests = fake.model_requests()
    # The hook's context reaches the model in the first request after the compaction.
    after = [r for r in requests if "what next?" in json.dumps(r["body"])]
    added = added_by_contextd(after[0])
    assert added and CONSTRAINT in added[0] and OPEN_ERROR in added[0], added
    assert "FAKE-SUMMARY" not in added[0]
    # The MCP tools are offered, and the search answers from before the compaction.
    assert "mcp__contextd__history_search" in [t["name"] for t in after[0]["body"]["tools"]]
    answer = [e for e in events if e.get("type") == "result"][-1]["result"]
    assert answer.startswith("FINAL-ANSWER:") and "test_quokka" in answer and "summarized away by compaction" in answer
