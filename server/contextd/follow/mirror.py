"""One followed transcript: its importer, fed as the file grows, and how far it was read.

Everything here runs in a worker thread (it reads files); the follower writes what it
returns into the mirror session on the event loop. What was read is kept beside the data,
written only once the entries are in the mirror: `<data dir>/follow/<session id>.json` (the
offset after the last complete line, the file's stamp, a hash of its first bytes, and a hash
of the importer's state) and `<session id>.importer.json` (that state: what the importer
needs to go on from that offset; it keeps none of the entries it handed over; a file
longer than READ_BUDGET, read in parts, has it saved once read to its end). After a
restart, or once the file has been quiet for a while (its importer is then let go, to keep
memory small), the importer is restored from it and reads on from the offset. Where the
state is missing, unreadable or of another version, the file is read again from the start
instead; entries the mirror already holds are recognised by their ids and not written
twice. A file that shrank, or whose first bytes changed, was rewritten: it is imported
again, once, from the start, into a fresh mirror.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic_core import to_json

from contextd.collector import collector_paused
from contextd.follow.transcripts import FileStamp
from contextd.importers import STREAMING_IMPORTERS
from contextd.importers.common import Problem, StreamingImporter, restore_importer
from contextd.importers.feed import LineFeed
from contextd.model import Entry, FollowedAgent, Usage
from contextd.store import make_private_dirs, write_private

log = logging.getLogger(__name__)

HEAD_BYTES = 4096
"""How much of a file's start is hashed to notice that it was rewritten."""
PEEK_BYTES = 1 << 20
"""How much of a new file is read at most to learn its working directory (Codex's first
line holds its instructions, so it can be long), in chunks of PEEK_CHUNK."""
PEEK_CHUNK = 1 << 16
QUIET_SECONDS = 60.0
"""A file unchanged this long lets its importer go (it is restored when the file grows)."""
READ_BUDGET = 8 << 20
"""How many bytes are read at a time, at most (stretched to the end of a longer line): the
entries they make are written before more is read, so what a cold start of many (or long)
transcripts holds at once stays small; Python keeps memory it once held."""


def mirror_session_id(agent: FollowedAgent, path: str) -> str:
    """Stable for a file: the agent, the file's name (the agent's session id is in it) and
    a hash of its path; only letters, digits, `-` and `_`."""
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", Path(path).stem)[:80]
    digest = hashlib.sha256(path.encode()).hexdigest()[:8]
    return f"{agent}-{stem}-{digest}"


def follower_importer(agent: FollowedAgent) -> StreamingImporter:
    """A new importer as a follower uses it: its report names only the lines it cannot read
    (the log says those), not every line left out as `contextd import` shows it."""
    return STREAMING_IMPORTERS[agent](reports_every_line=False)


def peek_workspace(agent: FollowedAgent, path: str) -> str | None:
    """The working directory a transcript names near its start, if it names one yet: its
    whole lines are fed to the importer one by one until one names it."""
    importer = follower_importer(agent)
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
    importer: str | None = None
    """A hash of the importer's state at `offset` (None: none was saved)."""
    unsaved_importer: StreamingImporter | None = None
    """The importer whose state goes with `offset`, until it is saved: its state is taken
    then, after the mirror is announced (nothing feeds it in between)."""

    @classmethod
    def load(cls, path: Path) -> ReadState | None:
        try:
            raw = json.loads(path.read_text())
            importer = raw.get("importer")
            return cls(
                int(raw["offset"]),
                (int(raw["size"]), int(raw["mtimeNs"])),
                str(raw["head"]),
                importer if isinstance(importer, str) else None,
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def save(self, path: Path, importer_path: Path, transcript: str) -> None:
        """The importer's state first, then the offset naming it: a crash between the two
        leaves an offset whose state does not match, and the file is read from the start."""
        make_private_dirs(path.parent)
        if self.unsaved_importer is not None:
            # pydantic's encoder: a long transcript's state is most of a megabyte, saved at
            # every round it grows (json.dumps took 2-3 times as long).
            text = to_json(self.unsaved_importer.snapshot(), inf_nan_mode="constants")
            self.importer = _text_hash(text)
            _write_atomically(importer_path, text)
            self.unsaved_importer = None
        body = {
            "path": transcript,
            "offset": self.offset,
            "size": self.stamp[0],
            "mtimeNs": self.stamp[1],
            "head": self.head,
            "importer": self.importer,
        }
        _write_atomically(path, json.dumps(body).encode())

    def restored_feed(self, agent: FollowedAgent, importer_path: Path) -> LineFeed | None:
        """The importer saved at `offset`, going on from there; None when there is no state
        that matches (missing, damaged, of another version or agent)."""
        if self.importer is None:
            return None
        try:
            text = importer_path.read_bytes()
        except OSError:
            return None
        if _text_hash(text) != self.importer:
            return None
        try:
            importer = restore_importer(STREAMING_IMPORTERS[agent], json.loads(text), reports_every_line=False)
        except ValueError:  # json's errors are ValueErrors too
            return None
        return LineFeed(importer, offset=self.offset, lines=importer.last_line)


def forget_state(state_dir: Path, session_id: str) -> None:
    """Remove what was saved of the transcript mirrored as `session_id`."""
    for path in (state_dir / f"{session_id}.json", state_dir / f"{session_id}.importer.json"):
        path.unlink(missing_ok=True)


def forget_vanished(state_dir: Path) -> None:
    """Remove what was saved of transcripts that no longer exist (deleted while no daemon
    followed them)."""
    for state in state_dir.glob("*.json"):
        if state.name.endswith(".importer.json"):
            continue
        try:
            transcript = json.loads(state.read_text()).get("path")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(transcript, str) and not os.path.exists(transcript):
            forget_state(state_dir, state.stem)


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    write_private(temporary, data)
    os.replace(temporary, path)


def _text_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Mirror:
    def __init__(self, agent: FollowedAgent, path: str, workspace: str, state_dir: Path) -> None:
        self.agent = agent
        self.path = path
        self.workspace = workspace
        self.session_id = mirror_session_id(agent, path)
        self.state_path = state_dir / f"{self.session_id}.json"
        self.importer_path = state_dir / f"{self.session_id}.importer.json"
        self.stored = ReadState.load(self.state_path)
        """What the mirror holds for certain: saved once entries are written."""
        self._feed: LineFeed | None = None
        self._read: ReadState | None = None
        self._changed_at = time.monotonic()

    @property
    def seen(self) -> FileStamp | None:
        current = self._read or self.stored
        return current.stamp if current is not None else None

    @property
    def quiet(self) -> bool:
        """The file has not changed for a while: its importer was let go."""
        return self._feed is None and self.seen is not None

    def unchanged(self, stamp: FileStamp) -> bool:
        """Whether the file is as it was at the last look; one quiet for QUIET_SECONDS lets
        its importer go (it is restored from the saved state when the file grows)."""
        if stamp != self.seen:
            return False
        if self._feed is not None and time.monotonic() - self._changed_at > QUIET_SECONDS:
            self._feed = None
        return True

    def unread_bytes(self, stamp: FileStamp) -> int:
        known = self._feed.offset if self._feed is not None else (self._read or self.stored or ReadState(0, (0, 0), "")).offset
        return max(stamp[0] - known, 0)

    def catch_up(self, stamp: FileStamp) -> Change | None:
        """Read what was appended since the last look, READ_BUDGET bytes at most (worker
        thread); what is left is read at the next call."""
        if self.unchanged(stamp):
            return None
        self._changed_at = time.monotonic()
        size = stamp[0]
        known = self._read or self.stored
        with open(self.path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
            rewritten = known is not None and (size < known.offset or not self._same_head(head, known))
            if self._feed is None and known is not None and not rewritten:
                self._feed = known.restored_feed(self.agent, self.importer_path)
            if rewritten or self._feed is None:
                self._feed = LineFeed(follower_importer(self.agent))
            handle.seek(self._feed.offset)
            unread = max(size - self._feed.offset, 0)
            data = handle.read(min(unread, READ_BUDGET))
            while b"\n" not in data and len(data) < unread:  # one line longer than the budget
                data += handle.read(min(unread - len(data), READ_BUDGET))
        with collector_paused():  # what an import makes survives (entries): nothing to collect
            self._feed.feed(data)
        if len(data) < unread:
            stamp = (size, -1)  # a stamp no file has: the next look reads on
        importer = self._feed.importer
        self._report_corrupt_lines(importer.problems)
        from_start = importer.builder.taken == 0
        entries = importer.take_settled()
        self._read = ReadState(self._feed.offset, stamp, _head_hash(head, self._feed.offset))
        if len(data) == unread:  # a file read in parts is read again from its start after a restart
            self._read.unsaved_importer = importer
        return Change(
            self, entries, importer.leaf_id, reset=rewritten, from_start=from_start, pending_usage=importer.pending_usage()
        )

    def _report_corrupt_lines(self, problems: list[Problem]) -> None:
        """Lines that cannot be read are skipped, and said in the log: following goes on."""
        for problem in problems:
            if problem.kind == "corrupt":
                log.warning("following %s: line %d skipped: %s", self.path, problem.line, problem.message)

    @staticmethod
    def _same_head(head: bytes, known: ReadState) -> bool:
        return _head_hash(head, known.offset) == known.head

    def written(self) -> None:
        """The entries of the last change are in the mirror: remember how far it is read."""
        if self._read is not None:
            self._read.save(self.state_path, self.importer_path, self.path)
            self.stored = self._read

    def start_over(self) -> None:
        """Read the file again from the start at the next look (its mirror was deleted, or
        could not be written)."""
        self._feed = None
        self._read = None
        self.stored = None
        self.forget()

    def forget(self) -> None:
        """Remove what was saved of this file (it, or its mirror, is gone)."""
        forget_state(self.state_path.parent, self.session_id)


def _head_hash(head: bytes, offset: int) -> str:
    """A hash of the file's first bytes that were read (never past `offset`)."""
    return hashlib.sha256(head[: min(len(head), offset)]).hexdigest()
