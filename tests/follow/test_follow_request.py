"""`contextd/follow` turns following on and off for the whole daemon at run time, and the
workspace activity of a mirror names the agent and the transcript."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from pathlib import Path

import pytest
from contextd_client import ContextdClient
from contextd_client.rpc import ContextdError

REAL = Path(__file__).parents[1] / "fixtures" / "real"


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


async def test_following_is_off_by_default_and_switched_at_run_time(tmp_path: Path) -> None:
    lines = gzip.decompress((REAL / "codex-lotto.jsonl.gz").read_bytes()).splitlines(keepends=True)
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
