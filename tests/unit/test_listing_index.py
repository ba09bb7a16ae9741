"""The listing index is a cache: whatever happened to the session files (and to the index
itself), a listing equals a fresh scan of the files."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from contextd.model import AssistantMessage, Settings, TextContent, UserMessage
from contextd.session import SessionManager, SilentEvents
from contextd.session.index import INDEX_FILE, listing_row, timestamp
from contextd.store import Store
from hypothesis import given, settings
from hypothesis import strategies as st

WORKSPACES = ("/ws/one", "/ws/two")

# Two managers on one data directory: two daemons, each with its own index in memory.
operation = st.one_of(
    st.tuples(st.just("create"), st.integers(0, 1), st.integers(0, 1), st.integers(0, 3)),
    st.tuples(st.just("append"), st.integers(0, 1), st.integers(0, 20), st.integers(1, 3)),
    st.tuples(st.just("delete"), st.integers(0, 20)),
    st.tuples(st.just("list"), st.integers(0, 1)),
    st.tuples(st.just("damage_index"), st.sampled_from([b"", b"{not json", b'{"sessions": 7}', b"[]"])),
)


def messages(count: int, seed: int) -> list[Any]:
    out: list[Any] = []
    for n in range(count):
        out.append(UserMessage(content=f"question {seed}.{n} " + "word " * (n + 1)))
        out.append(AssistantMessage(content=[TextContent(text=f"answer {seed}.{n}")], stopReason="stop"))
    return out


def fresh_scan(manager: SessionManager) -> list[dict[str, Any]]:
    """The listing made from the files alone, with no index."""
    return [
        listing_row(listing.session_id, manager.summarize_file(listing), timestamp(os.stat(listing.path).st_mtime_ns))
        for listing in manager.store.listings()
    ]


def by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["sessionId"]: row for row in rows}


@settings(max_examples=40, deadline=None)
@given(st.lists(operation, max_size=14))
def test_a_listing_equals_a_fresh_scan(operations):
    with tempfile.TemporaryDirectory() as directory:
        data = Path(directory)
        managers = [SessionManager(Store(data), Settings(), SilentEvents()) for _ in range(2)]
        created: list[str] = []
        for step, (kind, *args) in enumerate(operations):
            if kind == "create":
                manager, workspace, count = managers[args[0]], WORKSPACES[args[1]], args[2]
                session = manager.create(workspace, name=f"session {step}" if step % 2 else None)
                if count:
                    session.append_messages(messages(count, step))
                manager.close(session.session_id)
                created.append(session.session_id)
            elif kind == "append" and created:
                manager, session_id = managers[args[0]], created[args[1] % len(created)]
                if manager.store.find_session(session_id).path.exists():
                    manager.get(session_id).append_messages(messages(args[2], step))
                    manager.close(session_id)
            elif kind == "delete" and created:
                session_id = created.pop(args[0] % len(created))
                managers[0].store.find_session(session_id).path.unlink()
            elif kind == "list":
                manager = managers[args[0]]
                assert by_id(manager.index.rows(None)) == by_id(fresh_scan(manager))
            elif kind == "damage_index":
                for index in data.glob(f"workspaces/*/{INDEX_FILE}"):
                    index.write_bytes(args[0])
        for manager in managers:
            assert by_id(manager.index.rows(None)) == by_id(fresh_scan(manager))
            for workspace in WORKSPACES:
                rows = manager.index.rows(workspace)
                assert all(row["workspace"] == workspace for row in rows)


def test_a_listing_of_live_sessions_shows_them_as_they_are_in_memory(tmp_path):
    manager = SessionManager(Store(tmp_path), Settings(), SilentEvents())
    live = manager.create("/ws/one", name="live")
    closed = manager.create("/ws/one", name="closed")
    closed.append_messages(messages(2, 0))
    manager.close(closed.session_id)
    live.append_messages(messages(3, 1))

    rows = by_id(asyncio.run(manager.listing(None)))
    assert rows[live.session_id]["entries"] == 2 + 6  # model_change, session_info, six messages
    assert rows[live.session_id]["tokens"] == live.tokens
    assert rows[closed.session_id] == by_id(fresh_scan(manager))[closed.session_id]
    assert asyncio.run(manager.listing("/ws/other")) == []


def test_token_settings_that_change_the_count_recount_every_row(tmp_path):
    manager = SessionManager(Store(tmp_path), Settings(), SilentEvents())
    session = manager.create("/ws/one")
    session.append_messages([UserMessage(content="这是一个测试句子，用于比较两种编码。" * 20)])
    manager.close(session.session_id)
    before = by_id(manager.index.rows(None))[session.session_id]["tokens"]
    manager.apply_settings(Settings.model_validate({"models": {Settings().defaultModel: {"encoding": "cl100k_base"}}}))
    after = by_id(manager.index.rows(None))[session.session_id]["tokens"]
    assert after == by_id(fresh_scan(manager))[session.session_id]["tokens"]
    assert after != before
