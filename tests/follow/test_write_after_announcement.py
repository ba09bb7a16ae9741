"""A mirror's entries are announced from memory, then appended to its file: a write that
fails there (a full disk) leaves nothing in memory the file does not hold, and the next
round reads that part of the transcript again and writes each entry once."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

from contextd.follow.follower import Follower
from contextd.follow.mirror import mirror_session_id, peek_workspace
from contextd.model import FollowSettings, MirrorSource, Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store

from tests.follow.support import TRANSCRIPTS, append_lines, corpus_lines, expected_after

REAL_WRITE = os.write


async def nothing_deleted(_session_id: str) -> None:
    return None


async def test_a_mirror_write_that_fails_after_the_announcement_is_made_again_from_the_transcript(
    tmp_path: Path, monkeypatch
) -> None:
    name, relative = TRANSCRIPTS["codex"]
    lines = corpus_lines(name)
    path = tmp_path / "home" / relative
    path.parent.mkdir(parents=True)
    append_lines(path, lines)
    data_dir = tmp_path / "data"
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    follower = Follower(lambda: data_dir, lambda: sessions, lambda: None, nothing_deleted)
    follower.settings = FollowSettings(agents=["codex"], roots={"codex": str(tmp_path / "home" / ".codex" / "sessions")}, allWorkspaces=True)
    session_id = mirror_session_id("codex", str(path))
    workspace = peek_workspace("codex", str(path))
    assert workspace is not None
    made = sessions.create_mirror(session_id, workspace, MirrorSource(agent="codex", path=str(path)))
    made.write_mirrored()  # its file made, with no entries
    made.close()
    disk_full = True

    def write(fd: int, data: bytes) -> int:
        if disk_full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return REAL_WRITE(fd, data)

    monkeypatch.setattr("contextd.store.os.write", write)
    await follower.round()
    assert sessions.loaded_session(session_id) is None  # what only memory held is gone
    [row] = await sessions.listing(workspace)
    assert (row["sessionId"], row["entries"], row["tokens"]) == (session_id, 0, 0)  # listed as the file is
    assert len(sessions.get(session_id).tree.entries) == 0  # and the file holds none of it
    disk_full = False
    await follower.round()
    settled, _ = expected_after("codex", lines)
    session = sessions.get(session_id)
    assert {entry.id for entry in settled} <= set(session.tree.entries)
    written = [line for line in session.file.path.read_bytes().splitlines()[1:]]
    assert len(written) == len(session.tree.entries)  # each entry written once
    sessions.close_all()


def test_a_new_mirrors_file_is_made_with_its_first_entries_after_the_announcement(tmp_path: Path) -> None:
    sessions = SessionManager(Store(tmp_path / "data"), Settings(), SilentEvents())
    source = MirrorSource(agent="codex", path=str(tmp_path / "transcript.jsonl"))
    unwritten = sessions.create_mirror("mirror-never-written", "/work", source)
    assert not unwritten.file.path.exists()
    unwritten.close()  # stopped before its write: nothing on disk, the transcript is read again
    assert not unwritten.file.path.exists()
    session = sessions.create_mirror("mirror-written", "/work", source)
    session.write_mirrored()
    assert [json.loads(line)["id"] for line in session.file.path.read_bytes().splitlines()] == ["mirror-written"]
    sessions.close_all()
