"""What the follow tests share: the corpus transcripts they write line by line under a
temporary HOME, what a mirror of them should hold, a daemon that follows them, and waiting
for a mirror to catch up."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from contextd.importers import STREAMING_IMPORTERS
from contextd.importers.feed import LineFeed
from contextd_client import ContextdClient
from contextd_client.rpc import ContextdError

from tests import corpus

WAIT = 60.0

TRANSCRIPTS = {
    # agent: (corpus file, where the agent keeps it under HOME)
    "claude-code": ("claude-code-atlas-sonnet45.jsonl.gz", ".claude/projects/-work-atlas/7d1c.jsonl"),
    "codex": ("codex-knearme-compacted.jsonl.gz", ".codex/sessions/2025/10/05/rollout-2025-10-05T10-00-00-abc.jsonl"),
    "pi": ("pi-coffee-model-switches.jsonl.gz", ".pi/agent/sessions/--work-coffee--/2025-10-05_abc.jsonl"),
}


def corpus_lines(name: str) -> list[bytes]:
    return corpus.read_bytes(name).splitlines(keepends=True)


def expected_after(agent: str, lines: list[bytes]) -> tuple[list[Any], str | None]:
    """What a mirror of these lines holds: the importer's settled entries, and its leaf."""
    importer = fed(agent, lines)
    return importer.take_settled(), importer.leaf_id


def fed(agent: str, lines: list[bytes]) -> Any:
    importer = STREAMING_IMPORTERS[agent]()
    LineFeed(importer).feed(b"".join(lines))
    return importer


def daemon_settings(**follow: Any) -> dict[str, Any]:
    return {"follow": {"enabled": True, "allWorkspaces": True, "intervalSeconds": 0.1, **follow}}


async def spawn(home: Path, data_dir: Path, **follow: Any) -> ContextdClient:
    return await ContextdClient.spawn(
        data_dir=data_dir, settings=daemon_settings(**follow), env={**os.environ, "HOME": str(home)}, shared=False
    )


async def wait_for_mirror(client: ContextdClient, session_id: str, entries: list[Any]) -> dict[str, Any]:
    """The mirror's tree once it holds every entry expected."""
    wanted = {entry.id for entry in entries}
    async with asyncio.timeout(WAIT):
        while True:
            try:
                tree = await client.tree(session_id)
            except ContextdError:
                tree = {"nodes": []}
            if wanted <= {node["id"] for node in tree["nodes"]}:
                return tree
            await asyncio.sleep(0.05)


async def mirror_id(client: ContextdClient, path: Path) -> str:
    async with asyncio.timeout(WAIT):
        while True:
            listed = await client.session_list()
            for row in listed["sessions"]:
                if row.get("source", {}).get("path") == str(path):
                    return row["sessionId"]
            await asyncio.sleep(0.05)


def append_lines(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as handle:
        for line in lines:
            handle.write(line)
            handle.flush()
