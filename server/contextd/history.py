"""The full-text index of every session's history: SQLite FTS5 (stdlib `sqlite3`), one per
data dir (`<data dir>/history.sqlite3`).

A session's entries are indexed in the order they were written, from the session's tree
in memory: each search first adds the entries appended since the last one (a count and the
last indexed id per session say where it stopped), so a query never reads a session file.
A missing or unreadable index is made again, a session at a time, as sessions are searched;
a session whose entries no longer match what was indexed (a mirror imported again) is
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
from collections.abc import Sequence
from dataclasses import dataclass
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
            self.path.unlink(missing_ok=True)
            self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        # Made the owner's only before SQLite makes it: its -wal and -shm files take its mode.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE))
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
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

    def sync(self, session_id: str, created_at: str, entries: Sequence[Entry]) -> int:
        """Index the entries written since the last sync (`entries` in written order);
        returns how many were added."""
        with self._lock:
            db = self._connection()
            row = db.execute(
                "SELECT created_at, indexed, last_id FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            start = 0
            if row is not None and _still_matches(row, created_at, entries):
                start = row[1]
            elif row is not None:
                db.execute("DELETE FROM entries WHERE session_id = ?", (session_id,))
            new = entries[start:]
            if not new and row is not None:
                return 0
            db.execute("BEGIN")
            try:
                db.executemany(
                    "INSERT INTO entries (text, session_id, entry_id, kind, role, tool) VALUES (?,?,?,?,?,?)",
                    [
                        (found.text, session_id, entry.id, found.kind, found.role, found.tool)
                        for entry in new
                        if (found := entry_text(entry)) is not None and found.text
                    ],
                )
                db.execute(
                    "INSERT OR REPLACE INTO sessions VALUES (?,?,?,?)",
                    (session_id, created_at, len(entries), entries[-1].id if entries else None),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return len(new)

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

    def forget(self, session_id: str) -> None:
        with self._lock:
            db = self._connection()
            db.execute("DELETE FROM entries WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _still_matches(row: tuple[str, int, str | None], created_at: str, entries: Sequence[Entry]) -> bool:
    """Whether the indexed rows are a prefix of `entries`: the same file, and the entry the
    last sync ended on is where it was."""
    recorded_created, indexed, last_id = row
    if recorded_created != created_at or indexed > len(entries):
        return False
    return indexed == 0 or entries[indexed - 1].id == last_id


_INDEXES: dict[Path, HistoryIndex] = {}
_INDEXES_LOCK = threading.Lock()


def history_index_for(data_dir: Path) -> HistoryIndex:
    """The one index of a data dir in this process."""
    key = data_dir.resolve()
    with _INDEXES_LOCK:
        if key not in _INDEXES:
            _INDEXES[key] = HistoryIndex(key)
        return _INDEXES[key]
