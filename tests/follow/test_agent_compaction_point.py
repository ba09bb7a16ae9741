"""A mirror's figure says where its agent compacts it, from the agent's own configuration
under the user's HOME: a real daemon follows real transcripts, and the point follows the
configuration as the user changes it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from contextd.results import TokenUsage
from contextd_client import ContextdClient

from tests.cli.commands import run
from tests.follow.support import TRANSCRIPTS, WAIT, append_lines, corpus_lines, daemon_settings, mirror_id

AGENT_VARIABLES = ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "CLAUDE_CODE_AUTO_COMPACT_WINDOW", "DISABLE_AUTO_COMPACT",
                   "DISABLE_COMPACT", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


CONFIGURED: dict[str, tuple[str, str, Any]] = {
    # agent: (its config file under HOME, what the user wrote, the point given the mirror's window)
    "claude-code": (".claude/settings.json", json.dumps({"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}}),
                    lambda window: (window - 20_000) // 2),
    "codex": (".codex/config.toml", "model_auto_compact_token_limit = 150000\n", lambda window: 150_000),
    "pi": (".pi/agent/settings.json", json.dumps({"compaction": {"reserveTokens": 30_000}}), lambda window: window - 30_000),
}
SWITCHED_OFF = {
    "claude-code": (".claude.json", json.dumps({"autoCompactEnabled": False})),
    "pi": (".pi/agent/settings.json", json.dumps({"compaction": {"enabled": False}})),
}


def agent_env(home: Path) -> dict[str, str]:
    """The tests' environment with HOME moved and none of the agents' own variables."""
    return {**{name: value for name, value in os.environ.items() if name not in AGENT_VARIABLES}, "HOME": str(home)}


async def spawn(home: Path, data_dir: Path) -> ContextdClient:
    return await ContextdClient.spawn(data_dir=data_dir, settings=daemon_settings(), env=agent_env(home), shared=False)


async def usage_where(client: ContextdClient, session_id: str, wanted: Any) -> dict[str, Any]:
    async with asyncio.timeout(WAIT):
        while not wanted(usage := (await client.state(session_id))["usage"]):
            await asyncio.sleep(0.05)
    TokenUsage.model_validate(usage)
    return usage


@pytest.mark.parametrize("agent", sorted(TRANSCRIPTS))
async def test_a_mirror_reports_its_agents_compaction_point_from_the_agents_configuration(tmp_path: Path, agent: str) -> None:
    name, relative = TRANSCRIPTS[agent]
    lines = corpus_lines(name)
    home = tmp_path / "home"
    path = home / relative
    path.parent.mkdir(parents=True)
    append_lines(path, lines[:30])
    async with await spawn(home, tmp_path / "data") as client:
        session_id = await mirror_id(client, path)
        default = await usage_where(client, session_id, lambda usage: "agentCompaction" in usage)
        assert default["agentCompaction"]["enabled"] and "default assumed" in default["agentCompaction"]["basis"]
        own = await client.session_open(name="contextd's own")
        assert "agentCompaction" not in own["usage"]  # contextd's own sessions compact at its threshold

        config, text, point = CONFIGURED[agent]
        write(home / config, text)
        configured = await usage_where(client, session_id, lambda usage: usage["agentCompaction"]["basis"] != default["agentCompaction"]["basis"])
        # The daemon reads the file when the figure is next reported: a state request is one.
        window = configured["contextWindow"]
        assert configured["agentCompaction"]["tokens"] == point(window)
        assert configured["agentCompaction"]["percent"] == round(100 * point(window) / window, 1)
        assert f"~/{config}" in configured["agentCompaction"]["basis"]
        shown = run(tmp_path / "data", "show", session_id, env=agent_env(home))
        assert shown.returncode == 0, shown.stderr
        assert f"agent compacts at ~{point(window):,} ({configured['agentCompaction']['percent']:g}%)" in shown.stdout

        if agent in SWITCHED_OFF:
            config, text = SWITCHED_OFF[agent]
            write(home / config, text)
            await client.session_open(session_id=session_id)  # its notifications come here
            heard = asyncio.create_task(client.wait_for(
                "contextd/tokenUsage", lambda body: body["sessionId"] == session_id and not body["agentCompaction"]["enabled"], WAIT
            ))
            await asyncio.sleep(0)  # listening before the transcript grows
            append_lines(path, lines[30:60])
            body = await heard  # the next change of the transcript reports it
            assert body["agentCompaction"]["tokens"] is None and f"~/{config}" in body["agentCompaction"]["basis"]

        write(home / config, "{ damaged")
        damaged = await usage_where(client, session_id, lambda usage: "could not be read" in usage["agentCompaction"]["basis"])
        assert damaged["agentCompaction"]["enabled"] and damaged["agentCompaction"]["tokens"] is not None
