"""The store under write failures and damaged files (issue 23, items 4, 6, 11): an append
is all or nothing, on disk and in memory, whatever write fails and wherever it stops; a
reload holds exactly what was acknowledged. Write failures are injected at the write call
(ENOSPC after some bytes), as a full disk makes them."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from contextd.history import HistoryIndex
from contextd.model import MessageEntry, Settings, UserMessage
from contextd.session import SessionManager, SilentEvents
from contextd.store import (
    SessionDamaged,
    StorageFailed,
    Store,
    parse_session_bytes,
)
from contextd.summarizers.errors import REDACTED, redact, remember_secret
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


REAL_WRITE = os.write


class FullDisk:
    """os.write as on a disk with `room` bytes left: it writes what fits, then ENOSPC."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.room: int | None = None

        def write(fd: int, data: bytes) -> int:
            if self.room is None:
                return REAL_WRITE(fd, data)
            if self.room == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            written = REAL_WRITE(fd, bytes(data[: self.room]))
            self.room -= written
            return written

        monkeypatch.setattr("contextd.store.os.write", write)


def message_texts(session) -> list[str]:
    return [message.content for message in session.context_messages() if isinstance(message, UserMessage)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(
        st.tuples(st.integers(1, 4), st.one_of(st.none(), st.integers(0, 3000))), min_size=1, max_size=8
    )
)
def test_an_append_is_all_or_nothing_and_nothing_acknowledged_is_lost(tmp_path_factory, monkeypatch, batches):
    """Each batch: how many messages, and the room left on the disk while it is written
    (None: room enough). A batch that fails changes nothing; the others are all there,
    in memory and after a reload, in order."""
    data = tmp_path_factory.mktemp("data")
    disk = FullDisk(monkeypatch)
    manager = SessionManager(Store(data), Settings(), SilentEvents())
    session = manager.create("/w", name="fuzzed")
    acknowledged: list[str] = []
    for number, (count, room) in enumerate(batches):
        texts = [f"batch {number} message {index} " + "x" * 300 for index in range(count)]
        size = session.file.path.stat().st_size
        disk.room = room
        try:
            session.append_messages([UserMessage(content=text) for text in texts])
        except StorageFailed as error:
            assert error.reason == "diskFull"
            assert session.file.path.stat().st_size == size
        else:
            acknowledged += texts
        disk.room = None
        assert message_texts(session) == acknowledged
    session_id = session.session_id
    manager.close_all()
    assert parse_session_bytes(session.file.path.read_bytes()).bad_lines == []
    reloaded = SessionManager(Store(data), Settings(), SilentEvents()).get(session_id)
    assert message_texts(reloaded) == acknowledged


def test_a_session_whose_first_entries_cannot_be_stored_is_not_left_behind(tmp_path, monkeypatch):
    disk = FullDisk(monkeypatch)
    manager = SessionManager(Store(tmp_path), Settings(), SilentEvents())
    disk.room = 200  # the header fits, its name entry does not
    with pytest.raises(StorageFailed):
        manager.create("/w", name="named " + "n" * 200)
    disk.room = None
    assert list(manager.store.listings()) == []
    assert manager.create("/w", name="later").name == "later"


@pytest.mark.parametrize(
    "content, why",
    [
        (b"[" * 200_000 + b"\n", "header"),
        (b"\x00\xff\xfe" * 1000, "header"),
        (b'{"type":"message","id":"a","parentId":null}\n', "header"),
    ],
)
def test_a_damaged_file_is_refused_as_damaged_not_as_an_internal_error(tmp_path, content, why):
    store = Store(tmp_path)
    store.workspace_dir("/w")
    manager = SessionManager(store, Settings(), SilentEvents())
    good = manager.create("/w").session_id
    [directory] = tmp_path.glob("workspaces/*/sessions")
    (directory / "bad.jsonl").write_bytes(content)
    with pytest.raises(SessionDamaged, match=why):
        manager.get("bad")
    rows = {row["sessionId"]: row for row in manager.index.rows(None)}
    assert why in rows["bad"]["damaged"]
    assert "damaged" not in rows[good]


def test_a_line_nested_too_deeply_to_parse_is_a_bad_line_not_a_crash():
    header = b'{"type":"session","version":1,"id":"s","workspace":"w","createdAt":"x"}\n'
    loaded = parse_session_bytes(header + b"[" * 200_000 + b"\n")
    assert loaded.header is not None and loaded.bad_lines == [2]


def test_new_files_and_folders_are_the_owners_only_whatever_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        manager = SessionManager(Store(tmp_path / "data"), Settings(), SilentEvents())
        session = manager.create("/w", name="private")
        path: Path = session.file.path
        assert path.stat().st_mode & 0o777 == 0o600
        for folder in (path.parent, path.parent.parent, tmp_path / "data"):
            assert folder.stat().st_mode & 0o777 == 0o700
        assert (path.parent.parent / "workspace.json").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(previous)


def test_the_history_index_and_its_wal_are_the_owners_only(tmp_path):
    previous = os.umask(0o022)
    try:
        index = HistoryIndex(tmp_path / "data")
        index.sync("s", "2026-01-01T00:00:00Z", {"a": MessageEntry(id="a", parentId=None, message=UserMessage(content="hello"))})
        assert [hit.entry_id for hit in index.search("s", "hello", 5)] == ["a"]
        files = list((tmp_path / "data").iterdir())
        assert len(files) >= 2  # the database and its write-ahead log
        assert {path.name: path.stat().st_mode & 0o777 for path in files} == {path.name: 0o600 for path in files}
        assert (tmp_path / "data").stat().st_mode & 0o777 == 0o700
        index.close()
    finally:
        os.umask(previous)


KEY = "sk-ant-api03-Zx9+/Qw8=Lm7Tk2Pp"


@pytest.mark.parametrize(
    "form",
    [
        KEY,
        KEY.upper(),
        KEY.encode().hex(),
        KEY.encode().hex().upper(),
        KEY.replace("+", "%2b").replace("/", "%2f").replace("=", "%3d"),
        KEY.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
        KEY[5:20],
    ],
)
def test_a_known_key_is_redacted_in_any_case_hex_and_escape(form):
    remember_secret(KEY)
    text = f"The summary mentions {form} in passing."
    redacted = redact(text)
    assert REDACTED in redacted
    assert redacted.startswith("The summary mentions ")
    for size in (8, 12):
        for start in range(0, len(form) - size + 1):
            assert form[start : start + size].lower() not in redacted.lower()
