"""`contextd/follow` turns following on and off for the whole daemon at run time, and the
workspace activity of a mirror names the agent and the transcript."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from contextd_client import ContextdClient
from contextd_client.rpc import ContextdError

from tests.follow.support import corpus_lines


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


async def test_following_is_off_by_default_and_switched_at_run_time(tmp_path: Path) -> None:
    lines = corpus_lines("codex-lotto.jsonl.gz")
    workspace = json.loads(lines[0])["payload"]["cwd"]
    home = tmp_path / "home"
    rollout = home / ".codex/sessions/2025/10/05/rollout-2025-10-05T10-00-00-lotto.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_bytes(b"".join(lines[:200]))
    async with await ContextdClient.spawn(
        data_dir=tmp_path / "data", settings={"follow": {"intervalSeconds": 0.1}},
        env={**os.environ, "HOME": str(home)}, shared=False,
    ) as client:
        assert await client.follow() == {
            "enabled": False, "agents": ["claude-code", "codex", "pi"], "roots": {}, "allWorkspaces": False, "mirrors": 0,
        }
        with pytest.raises(ContextdError) as refused:
            await client.request("contextd/follow", {"agents": ["cursor"]})
        assert refused.value.code == -32602 and refused.value.data["errors"][0]["field"] == "agents.0"
        activity = client.activity()
        await client.watch_workspace(workspace)
        assert (await client.follow(enabled=True))["enabled"] is True
        async with asyncio.timeout(60):
            first = (await activity.get()).params
        assert first["source"] == {"agent": "codex", "path": str(rollout)} and first["workspace"] == workspace
        assert first["cause"] == "open" and first["usage"]["source"] == "usage"
        first_request = next(
            record["payload"]["content"][0]["text"] for line in lines for record in [json.loads(line)]
            if record["type"] == "response_item" and record["payload"].get("role") == "user"
            and not record["payload"]["content"][0]["text"].lstrip().startswith(("<", "# AGENTS.md"))
        )
        assert first["name"] and first["name"].rstrip("…") in first_request
        assert not first["name"].startswith("#")  # named by its first request, not its heading  # named by its first request
        recorded = next(
            info["model_context_window"] for info in (json.loads(line)["payload"].get("info") for line in lines[:200])
            if isinstance(info, dict) and info.get("model_context_window")
        )
        assert first["usage"]["contextWindow"] == recorded  # the window Codex recorded, not the registry's
        assert (await client.follow())["mirrors"] == 1

        assert (await client.follow(enabled=False))["enabled"] is False
        append(rollout, b"".join(lines[200:400]))
        await asyncio.sleep(1.0)  # ten rounds' worth: none runs while following is off
        assert activity.drain() == []
        await client.follow(enabled=True)
        async with asyncio.timeout(60):
            grown = (await activity.get()).params
        assert grown["cause"] == "append" and grown["usage"]["tokens"] > first["usage"]["tokens"]
        assert (await client.follow(agents=["pi"]))["mirrors"] == 0  # Codex is no longer followed
        append(rollout, b"".join(lines[400:500]))
        await asyncio.sleep(1.0)
        assert activity.drain() == []


def pi_transcript(home: Path, name: str, cwd: str) -> Path:
    lines = corpus_lines("pi-coffee-single-task.jsonl.gz")
    header = {**json.loads(lines[0]), "cwd": cwd}
    path = home / ".pi/agent/sessions" / f"--{name}--" / f"2025-10-05_{name}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    return path


async def test_only_the_workspaces_clients_have_open_or_watch_are_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine = pi_transcript(home, "mine", str(tmp_path / "app"))
    inside = pi_transcript(home, "inside", str(tmp_path / "app" / "backend"))
    other = pi_transcript(home, "other", str(tmp_path / "elsewhere"))
    (tmp_path / "app").mkdir()
    async with await ContextdClient.spawn(
        data_dir=tmp_path / "data", settings={"follow": {"enabled": True, "intervalSeconds": 0.1}},
        workspace=tmp_path / "app", env={**os.environ, "HOME": str(home)}, shared=False,
    ) as client:
        async def followed() -> set[str]:
            rows = (await client.session_list())["sessions"]
            return {row["source"]["path"] for row in rows if "source" in row}

        async with asyncio.timeout(60):
            while await followed() != {str(mine), str(inside)}:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # five more rounds: the other workspace's transcript stays out
        assert await followed() == {str(mine), str(inside)}
        await client.watch_workspace(tmp_path / "elsewhere")
        async with asyncio.timeout(60):
            while str(other) not in await followed():
                await asyncio.sleep(0.05)
        inside.unlink()  # the agent's file is gone: no longer followed, its mirror stays
        async with asyncio.timeout(60):
            while (await client.follow())["mirrors"] != 2:
                await asyncio.sleep(0.05)
        assert str(inside) in await followed()
