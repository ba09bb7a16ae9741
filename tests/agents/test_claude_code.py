"""The real Claude Code (pinned, offline against the scripted server) with contextd
installed into its HOME: after a /compact, the SessionStart hook adds what Claude Code's
summary lost, and the MCP tools reach what the compaction folded away."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextd_client.agents.added_context import HEADER

from tests.agents.fake_llm import FakeLLM
from tests.agents.real_agents import agent_command, contextd, offline_environment, stop_shared_daemon

TURN_SECONDS = 120
MIRROR_SECONDS = 60
CONSTRAINT = "Never push to the main branch without asking me first."
FAILING_COMMAND = "pytest -q tests/test_quokka.py"
OPEN_ERROR = f"`{FAILING_COMMAND}` failed"
"""A check that fails: only the tool's output says so, and Claude Code's (scripted) summary
drops it."""


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
