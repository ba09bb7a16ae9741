"""One followed transcript: its importer, fed as the file grows, and how far it was read.

Everything here runs in a worker thread (it reads files); the follower writes what it
returns into the mirror session on the event loop. What was read is kept beside the data
(`<data dir>/follow/<session id>.json`: the offset after the last complete line, the file's
stamp, a hash of its first bytes), written only once the entries are in the mirror. After a
restart, or once the file has been quiet for a while (its importer is then let go, to keep
memory small), the importer is rebuilt by reading the file again from the start; entries
the mirror already holds are recognised by their ids and not written twice. A file that
shrank, or whose first bytes changed, was rewritten: it is imported again, once, from the
start, into a fresh mirror.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from contextd.follow.transcripts import FileStamp
from contextd.importers import STREAMING_IMPORTERS
from contextd.importers.feed import LineFeed
from contextd.model import Entry, FollowedAgent, Usage

HEAD_BYTES = 4096
"""How much of a file's start is hashed to notice that it was rewritten."""
PEEK_BYTES = 1 << 20
"""How much of a new file is read at most to learn its working directory (Codex's first
line holds its instructions, so it can be long), in chunks of PEEK_CHUNK."""
PEEK_CHUNK = 1 << 16
QUIET_SECONDS = 60.0
"""A file unchanged this long lets its importer go (it is rebuilt when the file grows)."""


def mirror_session_id(agent: FollowedAgent, path: str) -> str:
    """Stable for a file: the agent, the file's name (the agent's session id is in it) and
    a hash of its path; only letters, digits, `-` and `_`."""
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", Path(path).stem)[:80]
    digest = hashlib.sha256(path.encode()).hexdigest()[:8]
    return f"{agent}-{stem}-{digest}"


def peek_workspace(agent: FollowedAgent, path: str) -> str | None:
    """The working directory a transcript names near its start, if it names one yet: its
    whole lines are fed to the importer one by one until one names it."""
    importer = STREAMING_IMPORTERS[agent]()
    pending, read, number = b"", 0, 0
    try:
        with open(path, "rb") as handle:
            while read < PEEK_BYTES and (chunk := handle.read(PEEK_CHUNK)):
                read += len(chunk)
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    number += 1
                    importer.feed(number, line.decode("utf-8", errors="replace"))
                    if importer.workspace:
                        return importer.workspace
    except OSError:
        return None
    return None


@dataclass(frozen=True)
class Change:
    """What a file's growth brings to its mirror."""

    mirror: Mirror
    entries: list[Entry]
    leaf_id: str | None
    reset: bool
    """The file was rewritten: the mirror starts over."""
    from_start: bool
    """The entries run from the transcript's first: a mirror missing can be made from them."""
    pending_usage: Usage | None
    """The usage the agent reported for an answer not settled yet (see LiveState.mirror)."""


@dataclass
class ReadState:
    offset: int
    stamp: FileStamp
    head: str

    @classmethod
    def load(cls, path: Path) -> ReadState | None:
        try:
            raw = json.loads(path.read_text())
            return cls(int(raw["offset"]), (int(raw["size"]), int(raw["mtimeNs"])), str(raw["head"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        body = {"offset": self.offset, "size": self.stamp[0], "mtimeNs": self.stamp[1], "head": self.head}
        temporary.write_text(json.dumps(body))
        os.replace(temporary, path)


class Mirror:
    def __init__(self, agent: FollowedAgent, path: str, workspace: str, state_dir: Path) -> None:
        self.agent = agent
        self.path = path
        self.workspace = workspace
        self.session_id = mirror_session_id(agent, path)
        self.state_path = state_dir / f"{self.session_id}.json"
        self.stored = ReadState.load(self.state_path)
        """What the mirror holds for certain: saved once entries are written."""
        self._feed: LineFeed | None = None
        self._handed = 0
        self._read: ReadState | None = None
        self._changed_at = time.monotonic()

    @property
    def seen(self) -> FileStamp | None:
        current = self._read or self.stored
        return current.stamp if current is not None else None

    def catch_up(self, stamp: FileStamp) -> Change | None:
        """Read what was appended since the last look (worker thread)."""
        if stamp == self.seen:
            if self._feed is not None and time.monotonic() - self._changed_at > QUIET_SECONDS:
                self._feed = None  # let the importer go; it is rebuilt when the file grows
            return None
        self._changed_at = time.monotonic()
        size = stamp[0]
        known = self._read or self.stored
        with open(self.path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
            rewritten = known is not None and (size < known.offset or not self._same_head(head, known))
            if rewritten or self._feed is None:
                self._feed = LineFeed(STREAMING_IMPORTERS[self.agent]())
                self._handed = 0
            handle.seek(self._feed.offset)
            data = handle.read(max(size - self._feed.offset, 0))
        self._feed.feed(data)
        self._read = ReadState(self._feed.offset, stamp, _head_hash(head, self._feed.offset))
        importer = self._feed.importer
        settled = importer.settled_entries()
        from_start = self._handed == 0
        entries, self._handed = settled[self._handed :], len(settled)
        return Change(
            self, entries, importer.leaf_id, reset=rewritten, from_start=from_start, pending_usage=importer.pending_usage()
        )

    @staticmethod
    def _same_head(head: bytes, known: ReadState) -> bool:
        return _head_hash(head, known.offset) == known.head

    def written(self) -> None:
        """The entries of the last change are in the mirror: remember how far it is read."""
        if self._read is not None:
            self._read.save(self.state_path)
            self.stored = self._read

    def start_over(self) -> None:
        """Read the file again from the start at the next look (its mirror was deleted, or
        could not be written)."""
        self._feed = None
        self._read = None
        self.stored = None
        self.state_path.unlink(missing_ok=True)


def _head_hash(head: bytes, offset: int) -> str:
    """A hash of the file's first bytes that were read (never past `offset`)."""
    return hashlib.sha256(head[: min(len(head), offset)]).hexdigest()
