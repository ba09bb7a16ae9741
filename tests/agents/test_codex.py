"""The real Codex CLI (pinned, offline against the scripted server) with contextd installed
into its CODEX_HOME: after its automatic compaction the next request carries contextd's
added context, and its MCP call of history_search answers from before the compaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextd_client.agents.added_context import HEADER

from tests.agents.codex_runs import codex_config, run_codex
from tests.agents.fake_llm import FakeLLM
from tests.agents.real_agents import agent_command, contextd, offline_environment, stop_shared_daemon

CONSTRAINT = "Never deploy on a Friday."
FAILING_CHECK = "pytest -q tests/test_numbat.py"


def texts_of(request: dict[str, Any]) -> str:
    return json.dumps(request["body"].get("input"))


def test_codex_gets_back_what_its_compaction_lost(tmp_path: Path, shared_env: dict[str, str]) -> None:
    codex = agent_command("codex", "codex")
    home, workspace, data_dir = tmp_path / "home", tmp_path / "work", tmp_path / "data"
    codex_home = home / ".codex"  # where Codex keeps it by default, and contextd follows it
    workspace.mkdir(parents=True)
    codex_home.mkdir(parents=True)
    with FakeLLM() as fake:
        (codex_home / "config.toml").write_text(codex_config(fake))
        env = {**offline_environment(home, shared_env), "CODEX_HOME": str(codex_home), "FAKE_API_KEY": "dummy"}
        contextd(env, data_dir, "install", "codex")
        try:
            first = run_codex(codex, env, workspace,
                              f"{CONSTRAINT} Run the check. CALL exec_command {json.dumps({'cmd': FAILING_CHECK})}", None)
            thread = next(e["thread_id"] for e in first if e.get("type") == "thread.started")
            run_codex(codex, env, workspace, "NOTOOL USAGE=5000", thread)
            run_codex(codex, env, workspace, "NOTOOL what next?", thread)
            # Codex offers MCP tools once their servers have started: from a later request of the turn.
            last = run_codex(codex, env, workspace, f"CALL exec_command {json.dumps({'cmd': 'sleep 5'})} "
                             'THEN CALL mcp__contextd.history_search {"query": "test_numbat"}', thread)
        finally:
            stop_shared_daemon(env, data_dir)
    after = [r for r in fake.model_requests() if "what next?" in texts_of(r)]
    assert after and HEADER in texts_of(after[0]), texts_of(after[0])[-3000:]
    added = texts_of(after[0]).split(HEADER, 1)[1]
    assert CONSTRAINT in added and f"Commands, latest outcome\\n- `{FAILING_CHECK}`" in added, added[:2000]
    messages = [e["item"]["text"] for e in last if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"]
    # The search reaches the first run's command, from before the compaction. (contextd places
    # it "still in context": the mirror's Codex compaction keeps from the first user message.)
    assert messages and "entries of session codex-" in messages[-1] and "test_numbat" in messages[-1], messages
