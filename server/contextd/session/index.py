"""The listing index: per workspace, what `session/list` shows of each session, cached.

Listing must not re-read and re-count every session file. Each workspace directory keeps
`index.json`: for every session file, its size and mtime and the row it was listed with. The
index is a cache, never the truth: a row is used only while its file still has the size and
mtime the row recorded, and was counted with the same token settings; a stale row is made
again from the file, and a missing or unreadable index is rebuilt from the session files.
The file is replaced whole (write, then rename), so a crash leaves the old index or the new.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import threading
from collections.abc import Callable, Container
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from contextd import results
from contextd.model import MirrorSource, ParentSession, Settings
from contextd.store import (
    SESSION_ID_PATTERN,
    SessionDamaged,
    SessionListing,
    Store,
    StoreError,
    recorded_workspace,
    write_private,
)

log = logging.getLogger(__name__)

INDEX_FILE = "index.json"
INDEX_VERSION = 3
"""Raise it when what a row holds, or how its figures are made, changes."""


class SessionSummary(BaseModel):
    """The figures of one session that a listing shows."""

    name: str | None = None
    workspace: str
    entries: int
    tokens: int
    parentSession: dict[str, Any] | None = None
    source: dict[str, str] | None = None
    damaged: str | None = None
    """Why the session cannot be opened (then it has no entries and no tokens)."""


class IndexedSession(BaseModel):
    """A summary and the state of the file it was made from."""

    size: int
    mtimeNs: int
    updatedAt: str
    summary: SessionSummary

    @classmethod
    def made(cls, stamp: FileStamp, summary: SessionSummary) -> IndexedSession:
        return cls(size=stamp.size, mtimeNs=stamp.mtime_ns, updatedAt=timestamp(stamp.mtime_ns), summary=summary)


class IndexFile(BaseModel):
    """`index.json`: the token settings its rows were counted with, and a row per session."""

    counting: str
    sessions: dict[str, IndexedSession]


@dataclass(frozen=True)
class FileStamp:
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileStamp:
        return cls(stat.st_size, stat.st_mtime_ns)

    def matches(self, indexed: IndexedSession) -> bool:
        return indexed.size == self.size and indexed.mtimeNs == self.mtime_ns


def counting_key(settings: Settings) -> str:
    """What a session's token figure depends on beyond its file: a change re-counts every row."""
    relevant = {
        "version": INDEX_VERSION,
        "defaultModel": settings.defaultModel,
        "models": settings.model_dump(mode="json")["models"],
    }
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def listing_row(session_id: str, summary: SessionSummary, updated_at: str) -> results.SessionSummary:
    row: results.SessionSummary = {
        "sessionId": session_id,
        "name": summary.name,
        "workspace": summary.workspace,
        "entries": summary.entries,
        "tokens": summary.tokens,
        "updatedAt": updated_at,
    }
    if summary.parentSession is not None:
        row["parentSession"] = ParentSession.model_validate(summary.parentSession)
    if summary.source is not None:
        row["source"] = MirrorSource.model_validate(summary.source)
    if summary.damaged is not None:
        row["damaged"] = summary.damaged
    return row


def timestamp(mtime_ns: int) -> str:
    stamp = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ListingIndex:
    """The index files of a data directory, read and brought up to date by each listing.

    `summarize` makes a summary from a session file (the slow part: a parse and a count);
    it runs only for files the index does not describe as they are now. Listings may run in
    worker threads; one at a time does the work, the others wait for it.
    """

    def __init__(self, store: Store, summarize: Callable[[SessionListing], SessionSummary]) -> None:
        self.store = store
        self.summarize = summarize
        self.counting = ""
        self._mutex = threading.Lock()
        self._remembered: dict[str, IndexedSession] = {}
        self._remembered_mutex = threading.Lock()

    def set_counting(self, key: str) -> None:
        with self._remembered_mutex:
            if key != self.counting:
                self.counting = key
                self._remembered.clear()

    def remember(self, path: Path, summary: SessionSummary) -> None:
        """The summary of a session leaving memory, as its file is right now: the next
        listing takes it instead of re-reading the file, if the file has not changed since."""
        try:
            stamp = FileStamp.of(os.stat(path))
        except OSError:
            return
        with self._remembered_mutex:
            self._remembered[str(path)] = IndexedSession.made(stamp, summary)

    def forget(self, path: Path) -> None:
        """A deleted session's row leaves its workspace's index now, not at the next listing.
        It waits for a listing under way: run it off the event loop."""
        with self._remembered_mutex:
            self._remembered.pop(str(path), None)
        directory = path.parent.parent
        with self._mutex:
            cached = self._read(directory)
            if cached.pop(path.stem, None) is not None:
                self._write(directory, cached)

    def rows(self, workspace: str | None, skip: Container[str] = ()) -> list[results.SessionSummary]:
        """A listing row of every session of `workspace` (or of all), but those in `skip`."""
        with self._mutex:
            rows: list[results.SessionSummary] = []
            for directory in self.store.workspace_dirs(workspace):
                rows.extend(self._directory_rows(directory, skip))
            return rows

    def _directory_rows(self, directory: Path, skip: Container[str]) -> list[results.SessionSummary]:
        cached = self._read(directory)
        current: dict[str, IndexedSession] = {}
        rows = []
        changed = False
        for session_id, path, stamp in _session_files(directory / "sessions"):
            indexed = self._indexed(session_id, path, stamp, cached, skip, directory)
            if indexed is None:
                continue
            changed = changed or cached.get(session_id) is not indexed
            current[session_id] = indexed
            if session_id not in skip:
                rows.append(listing_row(session_id, indexed.summary, indexed.updatedAt))
        if changed or current.keys() != cached.keys():
            self._write(directory, current)
        return rows

    def _indexed(
        self,
        session_id: str,
        path: str,
        stamp: FileStamp,
        cached: dict[str, IndexedSession],
        skip: Container[str],
        directory: Path,
    ) -> IndexedSession | None:
        """The entry of one file: the cached one while it is current, else made again.
        A session in `skip` (live in this daemon) keeps whatever entry it had."""
        known = cached.get(session_id)
        if known is not None and (session_id in skip or stamp.matches(known)):
            return known
        if session_id in skip:
            return None
        with self._remembered_mutex:
            remembered = self._remembered.pop(path, None)
        if remembered is not None and stamp.matches(remembered):
            return remembered
        listing = SessionListing(session_id, Path(path), recorded_workspace(directory))
        try:
            summary = self.summarize(listing)
        except (OSError, ValueError, RecursionError, StoreError) as error:
            # One damaged file costs only itself: it is listed as such, the others serve.
            why = error.why if isinstance(error, SessionDamaged) else f"it cannot be read ({type(error).__name__})"
            log.warning("session %s listed as damaged: %s", session_id, why)
            summary = SessionSummary(workspace=listing.workspace, entries=0, tokens=0, damaged=why)
        return IndexedSession.made(stamp, summary)

    def _read(self, directory: Path) -> dict[str, IndexedSession]:
        """The index as stored, or nothing when it is missing, unreadable or out of date."""
        try:
            raw = (directory / INDEX_FILE).read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as error:
            log.warning("listing index %s unreadable (%s); rebuilding it", directory / INDEX_FILE, error)
            return {}
        try:
            stored = IndexFile.model_validate_json(raw)
        except ValidationError:
            return self._readable_rows(directory, raw)
        return stored.sessions if stored.counting == self.counting else {}

    def _readable_rows(self, directory: Path, raw: bytes) -> dict[str, IndexedSession]:
        """What can be kept of a damaged index: its good rows; the others are made again."""
        try:
            data = json.loads(raw)
        except ValueError as error:
            log.warning("listing index %s unreadable (%s); rebuilding it", directory / INDEX_FILE, error)
            return {}
        if not isinstance(data, dict) or data.get("counting") != self.counting:
            return {}
        sessions = data.get("sessions")
        entries: dict[str, IndexedSession] = {}
        for session_id, row in (sessions.items() if isinstance(sessions, dict) else ()):
            try:
                entries[session_id] = IndexedSession.model_validate(row)
            except ValidationError:
                continue
        return entries

    def _write(self, directory: Path, entries: dict[str, IndexedSession]) -> None:
        data = IndexFile(counting=self.counting, sessions=entries).model_dump_json()
        temporary = directory / f"{INDEX_FILE}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            write_private(temporary, data.encode(), exclusive=True)
            os.replace(temporary, directory / INDEX_FILE)
        except OSError as error:
            log.warning("listing index %s not saved: %s", directory / INDEX_FILE, error)
            with contextlib.suppress(OSError):  # a read-only directory: it was never made
                temporary.unlink(missing_ok=True)


def _session_files(sessions: Path) -> list[tuple[str, str, FileStamp]]:
    try:
        scanned = list(os.scandir(sessions))
    except OSError:
        return []
    files = []
    for item in scanned:
        session_id, dot, suffix = item.name.rpartition(".")
        if dot and suffix == "jsonl" and SESSION_ID_PATTERN.fullmatch(session_id):
            try:
                files.append((session_id, item.path, FileStamp.of(item.stat(follow_symlinks=False))))
            except OSError:
                continue  # gone since the scan
    return files
