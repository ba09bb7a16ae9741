"""The full-text index of every session's history: SQLite FTS5 (stdlib `sqlite3`), one per
data dir (`<data dir>/history.sqlite3`).

The index follows the sessions as they change: `IndexWriter.changed` (the daemon calls it on
every sessionChanged, its own appends and a followed mirror's alike) only notes the session
and returns, and one worker thread writes what every noted session gained since its last
pass, in one transaction. A count and the last indexed id per session say where indexing
stopped, so a pass reads the newest entries only, from the session's tree in memory: never
a session file. A search waits for the writes noted before it, then queries.

The index is a cache of the session files: a kill mid-write loses nothing (the transaction
is undone and the next change or search of the session writes it again), a missing or
unreadable index is made again, a session at a time, as sessions change or are searched,
and a session whose entries no longer match what was indexed (a mirror imported again) is
indexed again whole.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    HandoffEntry,
    InstructionsEntry,
    MessageEntry,
    ToolResultMessage,
    UserMessage,
)
from contextd.store import PRIVATE_FILE_MODE, make_private_dirs

log = logging.getLogger(__name__)

INDEX_FILE = "history.sqlite3"
SCHEMA_VERSION = 1
SNIPPET_TOKENS = 24
QUERY_WORD = re.compile(r"[\w][\w.\-/]*", re.UNICODE)
MAX_QUERY_WORDS = 32


@dataclass(frozen=True)
class IndexedText:
    """What the index holds of one entry: its kind, who spoke or which tool, and its words."""

    kind: str
    role: str | None
    tool: str | None
    text: str


@dataclass(frozen=True)
class Hit:
    entry_id: str
    kind: str
    role: str | None
    tool: str | None
    snippet: str
    rank: float


def entry_text(entry: Entry) -> IndexedText | None:
    """The searchable text of an entry (None for entries with no words: labels, leaf moves,
    prunes, model changes). Tool calls count with their name and arguments, tool results
    whole."""
    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, ToolResultMessage):
            return IndexedText("message", "toolResult", message.toolName, _content_text(message.content))
        if isinstance(message, AssistantMessage):
            parts, tools = [], []
            for block in message.content:
                if block.type == "text":
                    parts.append(block.text)
                elif block.type == "thinking":
                    parts.append(block.thinking)
                elif block.type == "toolCall":
                    tools.append(block.name)
                    parts.append(f"{block.name} {json.dumps(block.arguments, ensure_ascii=False)}")
            if message.errorMessage:
                parts.append(message.errorMessage)
            return IndexedText("message", "assistant", ",".join(tools) or None, "\n".join(parts))
        assert isinstance(message, UserMessage)
        return IndexedText("message", "user", None, _content_text(message.content))
    if isinstance(entry, CompactionEntry):
        return IndexedText("compaction", None, None, entry.summary)
    if isinstance(entry, BranchSummaryEntry):
        return IndexedText("branch_summary", None, None, entry.summary)
    if isinstance(entry, HandoffEntry):
        return IndexedText("handoff", None, None, entry.document)
    if isinstance(entry, InstructionsEntry):
        return IndexedText("instructions", None, entry.source, entry.text)
    return None


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(getattr(block, "text", "") for block in content)  # type: ignore[attr-defined]


def match_expression(query: str) -> str | None:
    """An FTS5 expression for a free-text query: each word quoted (so `a.b/c-d` and FTS
    syntax characters are searched as written), any of them matching, ranked by bm25 so
    entries holding more of them, and rarer ones, come first. None when it has no words."""
    words = QUERY_WORD.findall(query)[:MAX_QUERY_WORDS]
    if not words:
        return None
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in dict.fromkeys(words))


Entries = dict[str, Entry]
"""A session's entries by id, in the order they were written (its tree's `entries`)."""


class HistoryIndex:
    """One data dir's index; safe to use from worker threads (one connection, one lock)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / INDEX_FILE
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._db is not None and self.path.exists():
            return self._db
        if self._db is not None:
            self._db.close()  # the file went away: make it again
        make_private_dirs(self.path.parent)
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as error:
            log.warning("history index %s unreadable (%s): making it again", self.path, error)
            self._remove_files()
            self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        # Made the owner's only before SQLite makes it: its -wal and -shm files take its mode.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE))
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        # A cache of the session files: a commit need not wait for the disk (WAL keeps the
        # file whole through a crash; what the last commits held is written again).
        db.execute("PRAGMA synchronous=NORMAL")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            db.executescript(
                """
                DROP TABLE IF EXISTS sessions;
                DROP TABLE IF EXISTS entries;
                CREATE TABLE sessions (session_id TEXT PRIMARY KEY, created_at TEXT,
                                       indexed INTEGER, last_id TEXT);
                CREATE VIRTUAL TABLE entries USING fts5(
                    text, session_id UNINDEXED, entry_id UNINDEXED, kind UNINDEXED,
                    role UNINDEXED, tool UNINDEXED, tokenize = 'porter unicode61');
                """
            )
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        return db

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def reset(self, error: sqlite3.DatabaseError) -> None:
        """Throw a damaged index away; it is made again as sessions change or are searched."""
        log.warning("history index %s damaged (%s): making it again", self.path, error)
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
                self._db = None
            self._remove_files()

    def sync(self, session_id: str, created_at: str, entries: Entries) -> int:
        """Index the entries written since the last sync; returns how many were added."""
        return self.write({session_id: (created_at, entries)}, set())

    def write(self, changed: Mapping[str, tuple[str, Entries]], deleted: set[str]) -> int:
        """In one transaction: each changed session's new entries (`changed` maps its id to
        its file's creation time and its entries), and the deleted sessions' rows gone.
        Returns how many entries were added."""
        with self._lock:
            db = self._connection()
            db.execute("BEGIN")
            try:
                for session_id in deleted:
                    _delete_session(db, session_id)
                added = sum(_sync_session(db, session_id, *source) for session_id, source in changed.items())
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return added

    def search(self, session_id: str, query: str, limit: int) -> list[Hit]:
        expression = match_expression(query)
        if expression is None:
            return []
        with self._lock:
            rows = self._connection().execute(
                "SELECT entry_id, kind, role, tool, "
                f"snippet(entries, 0, '[', ']', '…', {SNIPPET_TOKENS}), bm25(entries) "
                "FROM entries WHERE entries MATCH ? AND session_id = ? ORDER BY bm25(entries) LIMIT ?",
                (expression, session_id, limit),
            ).fetchall()
        return [Hit(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _sync_session(db: sqlite3.Connection, session_id: str, created_at: str, entries: Entries) -> int:
    row = db.execute(
        "SELECT created_at, indexed, last_id FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    start, new = _unindexed(row, created_at, entries)
    if row is not None and start == 0:
        db.execute("DELETE FROM entries WHERE session_id = ?", (session_id,))
    elif not new:
        return 0
    db.executemany(
        "INSERT INTO entries (text, session_id, entry_id, kind, role, tool) VALUES (?,?,?,?,?,?)",
        [
            (found.text, session_id, entry.id, found.kind, found.role, found.tool)
            for entry in new
            if (found := entry_text(entry)) is not None and found.text
        ],
    )
    last_id = new[-1].id if new else None
    db.execute("INSERT OR REPLACE INTO sessions VALUES (?,?,?,?)", (session_id, created_at, start + len(new), last_id))
    return len(new)


def _delete_session(db: sqlite3.Connection, session_id: str) -> None:
    db.execute("DELETE FROM entries WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))


def _unindexed(row: tuple[str, int, str | None] | None, created_at: str, entries: Entries) -> tuple[int, list[Entry]]:
    """Where indexing resumes and the entries from there: after the indexed rows while they
    are a prefix of `entries` (the same file, the entry the last sync ended on where it
    was), else from the start."""
    if row is not None and row[0] == created_at and row[1] > 0:
        indexed, last_id = row[1], row[2]
        tail = _tail(entries, indexed - 1)
        if tail and tail[0].id == last_id:
            return indexed, tail[1:]
    return 0, _tail(entries, 0)


def _tail(entries: Entries, start: int) -> list[Entry]:
    """The entries from position `start` on, read from the newest back, so the older ones
    are never walked. The loop thread may append meanwhile: the reverse walk is one C-level
    pass (whole under the GIL), and a length that moved around it means reading again."""
    while True:
        size = len(entries)
        tail = list(islice(reversed(entries.values()), max(size - start, 0)))
        if len(entries) == size:
            return tail[::-1]


BATCH_SECONDS = 0.05
"""How long the writer lets changes gather before a pass, unless someone waits for it."""


class IndexWriter:
    """Keeps one index current off the caller's thread. `changed` notes a session (its
    entries by reference) and returns at once, so an append waits for no disk; one worker
    thread takes every session noted within BATCH_SECONDS of the first and writes them in
    one transaction, so a burst of appends costs one commit. `wait` hurries that pass and
    blocks until what was noted before it is written."""

    def __init__(self, index: HistoryIndex) -> None:
        self.index = index
        self._state = threading.Condition()
        self._changed: dict[str, tuple[str, Entries]] = {}
        self._deleted: set[str] = set()
        self._noted = 0
        """How many changes were noted; `_written` reaches it once they are all written."""
        self._written = 0
        self._waiting = 0
        self._thread: threading.Thread | None = None
        self._closing = False

    def changed(self, session_id: str, created_at: str, entries: Entries) -> int:
        """Note a session's change; returns the ticket `wait` takes."""
        with self._state:
            first = self._nothing_noted()
            self._deleted.discard(session_id)
            self._changed[session_id] = (created_at, entries)
            return self._note(first)

    def deleted(self, session_id: str) -> int:
        with self._state:
            first = self._nothing_noted()
            self._changed.pop(session_id, None)
            self._deleted.add(session_id)
            return self._note(first)

    def _nothing_noted(self) -> bool:
        return not (self._changed or self._deleted)

    def _note(self, first: bool) -> int:
        """Count a change, waking the thread for the first one of a pass only: waking it for
        every append (to find its batch time not up) cost more than writing the entries."""
        self._noted += 1
        if self._thread is None:
            self._closing = False
            self._thread = threading.Thread(target=self._run, name=f"history index {self.index.path}", daemon=True)
            self._thread.start()
        elif first:
            self._state.notify_all()
        return self._noted

    def wait(self, ticket: int) -> None:
        """Until the changes noted up to `ticket` are written (or failed: the log says why)."""
        with self._state:
            self._waiting += 1
            self._state.notify_all()
            try:
                self._state.wait_for(lambda: self._written >= ticket)
            finally:
                self._waiting -= 1

    def close(self) -> None:
        """Write what is noted, then stop the thread (a later change starts another)."""
        with self._state:
            thread, self._closing = self._thread, True
            self._state.notify_all()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._state:
                self._state.wait_for(lambda: not self._nothing_noted() or self._closing)
                self._state.wait_for(lambda: self._waiting or self._closing, BATCH_SECONDS)
                if self._nothing_noted():
                    self._thread = None
                    return
                changed, deleted, ticket = self._changed, self._deleted, self._noted
                self._changed, self._deleted = {}, set()
            self._write(changed, deleted)
            with self._state:
                self._written = ticket
                self._state.notify_all()

    def _write(self, changed: dict[str, tuple[str, Entries]], deleted: set[str]) -> None:
        for _ in range(2):
            try:
                self.index.write(changed, deleted)
                return
            except sqlite3.OperationalError as error:  # locked, disk full: written at the next change
                log.warning("history index %s not written (%s)", self.index.path, error)
                return
            except sqlite3.DatabaseError as error:
                self.index.reset(error)  # damaged: made again, these sessions written whole
            except Exception:  # never the end of the thread: the index is only a cache
                log.exception("history index %s not written", self.index.path)
                return


_INDEXES: dict[Path, IndexWriter] = {}
_INDEXES_LOCK = threading.Lock()


def history_writer_for(data_dir: Path) -> IndexWriter:
    """The one index of a data dir in this process, and its writer."""
    key = data_dir.resolve()
    with _INDEXES_LOCK:
        if key not in _INDEXES:
            _INDEXES[key] = IndexWriter(HistoryIndex(key))
        return _INDEXES[key]
