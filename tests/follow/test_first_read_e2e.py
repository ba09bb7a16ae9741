"""The first read through a real daemon: a transcript that grows while its mirror's entries
are still being counted ends counted as a fresh load counts it, the transcript is never
written, and a daemon killed right after a first read, or as it is announced (before its
entries are in the mirror's file), leaves a mirror that loads and catches up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

from contextd.follow.mirror import mirror_session_id
from contextd.model import MirrorSource, Settings, is_node
from contextd.session import SessionManager, SilentEvents
from contextd.session.counts import counts_path, read_counts
from contextd.store import Store
from contextd.tokens import resolve_model
from contextd_client import ContextdClient

from tests.follow.support import WAIT, append_lines, corpus_lines, expected_after, mirror_id, spawn, wait_for_mirror

NAME = "codex-knearme-two-compactions.jsonl.gz"
"""The largest Codex transcript (3.5 MB): reports anchor its figure, so its counts come after."""
RELATIVE = ".codex/sessions/2025/10/05/rollout-2025-10-05T10-00-00-abc.jsonl"


def counted_afresh(data_dir: Path, session_id: str) -> tuple[dict[str, int], dict[str, Any], dict[str, Any]]:
    """The mirror loaded from its file by a new manager, every entry counted anew: each
    node's tokens, its stats and its usage."""
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    session = sessions.get(session_id)
    counts_path(session.file.path).unlink(missing_ok=True)  # what the daemon kept is checked apart
    sessions.close_all()
    session = SessionManager(Store(data_dir), Settings(), SilentEvents()).get(session_id)
    try:
        return {node["id"]: node["tokens"] for node in session.tree_nodes()}, session.stats().model_dump(), comparable(session.usage_body())
    finally:
        session.close()


def comparable(usage: dict[str, Any]) -> dict[str, Any]:
    """A usage body less the agent's compaction point (the agent's configuration under the
    daemon's HOME gives it)."""
    return {key: value for key, value in usage.items() if key != "agentCompaction"}


async def wait_for_usage(client: ContextdClient, session_id: str, nodes: int, usage: dict[str, Any]) -> None:
    """Until the mirror holds `nodes` nodes and shows `usage`, asked through `session/state`,
    which waits for no count (the tree and stats would count what is left themselves)."""
    async with asyncio.timeout(WAIT):
        while True:
            state = await client.state(session_id)
            if state["entries"] == nodes and comparable(state["usage"]) == usage:
                return
            await asyncio.sleep(0.05)


def fully_counted_usage(data_dir: Path, session_id: str, path: Path, lines: list[bytes]) -> dict[str, Any]:
    """The usage of a mirror of the whole transcript, written at once and counted."""
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    session = sessions.create_mirror(session_id, str(path.parent), MirrorSource(agent="codex", path=str(path)))
    entries, leaf = expected_after("codex", lines)
    session.mirror(entries, leaf, None)
    session.settle_counts()
    try:
        return comparable(session.usage_body())
    finally:
        sessions.close_all()


async def test_a_transcript_appended_while_its_first_read_is_counted_ends_with_right_counts(tmp_path: Path) -> None:
    lines = corpus_lines(NAME)
    path = tmp_path / "home" / RELATIVE
    path.parent.mkdir(parents=True)
    most = len(lines) * 4 // 5
    append_lines(path, lines[:most])
    data_dir = tmp_path / "data"
    settled, _ = expected_after("codex", lines)
    async with await spawn(tmp_path / "home", data_dir) as client:
        session_id = await mirror_id(client, path)  # its first read answered: counting goes on
        append_lines(path, lines[most:])
        usage = fully_counted_usage(tmp_path / "expected", session_id, path, lines)
        # Nothing asks for counts: the worker thread's counts alone bring the mirror there.
        await wait_for_usage(client, session_id, sum(1 for entry in settled if is_node(entry)), usage)
        state = await client.state(session_id)
        # The figure can be reached while entries before the agent's report are still being
        # counted, and a close keeps only the counts known (the next load counts the rest):
        # stats counts what is left, so every count is kept.
        await client.stats(session_id)
        await client.close_session(session_id)  # its counts are kept beside its file
    kept = read_counts(Path(state["path"]), resolve_model(state["model"], {}).counting)
    assert path.read_bytes() == b"".join(lines)  # the mirror never writes its transcript
    fresh_tokens, fresh_stats, fresh_usage = counted_afresh(data_dir, session_id)
    assert fresh_usage == usage
    assert {entry_id: kept[entry_id] for entry_id in fresh_tokens} == fresh_tokens
    async with await spawn(tmp_path / "home", data_dir) as client:
        assert await client.stats(session_id) == fresh_stats


async def test_a_daemon_killed_right_after_a_first_read_leaves_a_mirror_that_loads(tmp_path: Path) -> None:
    lines = corpus_lines(NAME)
    path = tmp_path / "home" / RELATIVE
    path.parent.mkdir(parents=True)
    append_lines(path, lines)
    data_dir = tmp_path / "data"
    client = await spawn(tmp_path / "home", data_dir)
    try:
        session_id = await mirror_id(client, path)
        pid = (await client.daemon_status())["pid"]
        os.kill(pid, signal.SIGKILL)  # its counts may still be coming: none was kept
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(WAIT):
                await client.close()
    tokens, stats, _ = counted_afresh(data_dir, session_id)
    settled, _ = expected_after("codex", lines)
    assert {entry.id for entry in settled} <= set(tokens)
    assert stats["treeNodes"] >= len(settled)
    assert path.read_bytes() == b"".join(lines)
    async with await spawn(tmp_path / "home", data_dir) as client:  # a new daemon goes on from it
        tree = await wait_for_mirror(client, session_id, settled)
        assert {node["id"]: node["tokens"] for node in tree["nodes"]} == tokens


async def test_a_daemon_killed_as_its_first_read_is_announced_leaves_a_mirror_that_catches_up(tmp_path: Path) -> None:
    """The figure is announced before the entries are in the mirror's file: a kill the
    moment the announcement arrives lands before, during or just after that write. Whatever
    it left loads, and a new daemon catches up to every entry, each written once."""
    lines = corpus_lines(NAME)
    path = tmp_path / "home" / RELATIVE
    path.parent.mkdir(parents=True)
    data_dir = tmp_path / "data"
    killed = asyncio.Event()
    client = await spawn(tmp_path / "home", data_dir)
    try:
        pid = (await client.daemon_status())["pid"]

        def kill_when_announced(_method: str, params: dict[str, Any]) -> None:
            if params.get("cause") == "open" and not killed.is_set():
                os.kill(pid, signal.SIGKILL)
                killed.set()

        client.on("contextd/workspace/activity", kill_when_announced)
        await client.watch_workspace(all_workspaces=True)
        staged = path.with_name("staged.part")  # the whole transcript appears at once
        staged.write_bytes(b"".join(lines))
        os.replace(staged, path)
        async with asyncio.timeout(WAIT):
            await killed.wait()
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(WAIT):
                await client.close()
    session_id = mirror_session_id("codex", str(path))
    SessionManager(Store(data_dir), Settings(), SilentEvents()).get(session_id).close()  # what was left loads
    settled, _ = expected_after("codex", lines)
    async with await spawn(tmp_path / "home", data_dir) as client:
        tree = await wait_for_mirror(client, session_id, settled)
        mirror_file = Path((await client.state(session_id))["path"])
    written = [json.loads(line)["id"] for line in mirror_file.read_bytes().splitlines()[1:]]
    assert len(written) == len(set(written))  # nothing written twice
    assert {entry.id for entry in settled} <= set(written)
    tokens, _, _ = counted_afresh(data_dir, session_id)
    assert {node["id"]: node["tokens"] for node in tree["nodes"]} == tokens
    assert path.read_bytes() == b"".join(lines)
