"""The history index follows the sessions as they change, through a real daemon: what an
append (or a followed transcript's new line) writes is in `history.sqlite3` without any
search asking for it, a lost or damaged index is made again, and a kill mid-write loses
nothing. The index file is read directly with sqlite, as another process would."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from contextd.history import INDEX_FILE, entry_text
from contextd_client import ContextdClient

from tests.client.helpers import SETTINGS, user
from tests.follow.support import (
    TRANSCRIPTS,
    append_lines,
    corpus_lines,
    expected_after,
    mirror_id,
    spawn,
    wait_for_mirror,
)

WAIT = 60.0


def indexed(index: Path, session_id: str) -> dict[str, str]:
    """What the index file holds of a session: entry id -> its text (empty when the file is
    not there yet, or not yet made again where it was damaged)."""
    if not index.exists():
        return {}
    with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as db:
        try:
            rows = db.execute("SELECT entry_id, text FROM entries WHERE session_id = ?", (session_id,)).fetchall()
        except sqlite3.DatabaseError:  # made, its tables not yet; or the damaged file the daemon is about to replace
            return {}
    return dict(rows)


async def until_indexed(index: Path, session_id: str, entry_ids: set[str]) -> dict[str, str]:
    """The session's rows in the index file once they hold every one of `entry_ids`."""
    async with asyncio.timeout(WAIT):
        while not entry_ids <= (rows := indexed(index, session_id)).keys():
            await asyncio.sleep(0.05)
    return rows


async def append_until_indexed(
    client: ContextdClient, index: Path, session_id: str, message: dict[str, object], *, earlier: Iterable[str] = ()
) -> tuple[list[str], dict[str, str]]:
    """Append `message`: its entry ids, and the session's rows in the index file once they
    hold those and `earlier` too."""
    entry_ids = (await client.append(session_id, [message]))["entryIds"]
    return entry_ids, await until_indexed(index, session_id, {*entry_ids, *earlier})


def said(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


async def test_an_appended_entry_is_in_the_index_without_a_search(client: ContextdClient, tmp_path: Path) -> None:
    index = tmp_path / "data" / INDEX_FILE
    session = (await client.session_open())["sessionId"]
    first, rows = await append_until_indexed(client, index, session, user("the pelican test fails"))
    assert "pelican" in rows[first[0]]
    later = await client.append(session, [said("fixed the pelican fixture"), user("now the heron one")])
    rows = await until_indexed(index, session, set(later["entryIds"]))
    assert "heron" in rows[later["entryIds"][1]]
    hits = (await client.request("contextd/history/search", {"sessionId": session, "query": "heron"}))["hits"]
    assert [hit["entryId"] for hit in hits] == [later["entryIds"][1]]


async def test_a_followed_transcripts_new_entries_are_indexed_as_they_are_mirrored(tmp_path: Path) -> None:
    name, relative = TRANSCRIPTS["claude-code"]
    lines = corpus_lines(name)
    path = tmp_path / "home" / relative
    path.parent.mkdir(parents=True)
    data_dir = tmp_path / "data"
    async with await spawn(tmp_path / "home", data_dir) as client:
        append_lines(path, lines[:20])
        session_id = await mirror_id(client, path)
        settled, _ = expected_after("claude-code", lines[:20])
        await wait_for_mirror(client, session_id, settled)
        append_lines(path, lines[20:60])
        later, _ = expected_after("claude-code", lines[:60])
        await wait_for_mirror(client, session_id, later)
        new_with_words = {
            entry.id for entry in later[len(settled):] if (found := entry_text(entry)) is not None and found.text
        }
        assert new_with_words, "the lines appended hold words to index"
        await until_indexed(data_dir / INDEX_FILE, session_id, new_with_words)


async def test_an_index_deleted_while_the_daemon_runs_is_made_again_whole(client: ContextdClient, tmp_path: Path) -> None:
    index = tmp_path / "data" / INDEX_FILE
    session = (await client.session_open())["sessionId"]
    before, _ = await append_until_indexed(client, index, session, user("the albatross migration"))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    _, rows = await append_until_indexed(client, index, session, said("the cormorant schema"), earlier=before)
    assert "albatross" in rows[before[0]]


async def test_a_damaged_index_is_made_again_when_the_daemon_starts_on_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    index = data_dir / INDEX_FILE
    async with await ContextdClient.spawn(data_dir=data_dir, workspace=tmp_path, settings=SETTINGS, shared=False) as client:
        session = (await client.session_open())["sessionId"]
        before, _ = await append_until_indexed(client, index, session, user("the puffin release"))
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"\x00damaged" * 4096)
    async with await ContextdClient.spawn(data_dir=data_dir, workspace=tmp_path, settings=SETTINGS, shared=False) as client:
        await client.session_open(session_id=session)
        _, rows = await append_until_indexed(client, index, session, said("the gannet release"), earlier=before)
    assert "puffin" in rows[before[0]]


async def test_a_kill_mid_write_loses_nothing_the_index_is_made_from_the_sessions(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    index = data_dir / INDEX_FILE
    burst = 400
    client = await ContextdClient.spawn(data_dir=data_dir, workspace=tmp_path, settings=SETTINGS, shared=False)
    session = (await client.session_open())["sessionId"]
    acknowledged: dict[str, str] = {}  # entry id -> the word only its message holds
    enough = asyncio.Event()

    async def append(turn: int) -> None:
        result = await client.append(session, [user(f"turn{turn}word " + "filler text " * 200)])
        acknowledged[result["entryIds"][0]] = f"turn{turn}word"
        if len(acknowledged) >= burst // 4:
            enough.set()

    appends = [asyncio.ensure_future(append(turn)) for turn in range(burst)]
    async with asyncio.timeout(WAIT):
        await enough.wait()  # killed with appends in flight and the writer busy
    assert client.daemon is not None
    client.daemon.process.send_signal(signal.SIGKILL)
    await client.daemon.process.wait()
    for pending in appends:
        pending.cancel()
    await asyncio.gather(*appends, return_exceptions=True)
    with contextlib.suppress(Exception):
        await client.close()

    with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    async with await ContextdClient.spawn(data_dir=data_dir, workspace=tmp_path, settings=SETTINGS, shared=False) as again:
        await again.session_open(session_id=session)
        for entry_id, word in acknowledged.items():
            hits = (await again.request("contextd/history/search", {"sessionId": session, "query": word}))["hits"]
            assert [hit["entryId"] for hit in hits] == [entry_id]
    assert acknowledged.keys() <= indexed(index, session).keys()
