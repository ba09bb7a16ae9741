"""Session files on disk: the data-dir layout, append-only JSONL, locking, recovery, the tree.

One session is one file, `workspaces/<slug>-<hash>/sessions/<id>.jsonl`: a header line,
then one entry per line. Lines are only ever appended. A crash mid-write leaves at most a
torn last line, which loading sets aside in `<id>.jsonl.torn` before appending again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from contextd.model import (
    Entry,
    LabelEntry,
    LeafEntry,
    SessionHeader,
    is_node,
)

log = logging.getLogger(__name__)

ENTRY_ADAPTER: TypeAdapter[Entry] = TypeAdapter(Entry)
SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
WORKSPACE_FILE = "workspace.json"


class StoreError(Exception):
    """Base of the errors a client can cause; the server maps each to a JSON-RPC code."""


class SessionNotFound(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} not found")
        self.session_id = session_id


class SessionLocked(StoreError):
    def __init__(self, session_id: str, pid: int | None) -> None:
        holder = f"process {pid}" if pid else "another process"
        super().__init__(f"session {session_id!r} is open in another contextd ({holder})")
        self.session_id = session_id
        self.pid = pid


class InvalidSessionId(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__(
            "session ids are 1-128 letters, digits, '-' or '_', starting with a letter or digit"
        )
        self.session_id = session_id


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "contextd"


def check_session_id(session_id: str) -> str:
    """Ids become file names, so only a safe alphabet passes: no '/', '..' or NUL."""
    if not SESSION_ID_PATTERN.fullmatch(session_id):
        raise InvalidSessionId(session_id)
    return session_id


def new_session_id() -> str:
    """Sortable by creation time, unique without coordination."""
    return f"{int(time.time() * 1000):012x}-{secrets.token_hex(4)}"


def new_entry_id(taken: Container[str]) -> str:
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate


def workspace_slug(workspace: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "-", os.path.basename(workspace.rstrip("/\\"))).strip("-")
    digest = hashlib.sha256(workspace.encode()).hexdigest()[:12]
    return f"{(name or 'root')[:40]}-{digest}"


# --- the tree -----------------------------------------------------------------


@dataclass
class EntryTree:
    """Every entry of a session, the parent/child links of its nodes, labels and the leaf."""

    entries: dict[str, Entry] = field(default_factory=dict)
    children: dict[str | None, list[str]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    leaf_id: str | None = None

    def add(self, entry: Entry) -> None:
        self.entries[entry.id] = entry
        if isinstance(entry, LabelEntry):
            if entry.label is None:
                self.labels.pop(entry.targetId, None)
            else:
                self.labels[entry.targetId] = entry.label
        elif isinstance(entry, LeafEntry):
            self.leaf_id = entry.targetId
        else:
            self.children.setdefault(entry.parentId, []).append(entry.id)
            self.leaf_id = entry.id

    def is_node_id(self, entry_id: str) -> bool:
        entry = self.entries.get(entry_id)
        return entry is not None and is_node(entry)

    def path_to(self, entry_id: str | None) -> list[Entry]:
        """The nodes from the root to `entry_id`, inclusive."""
        path: list[Entry] = []
        seen: set[str] = set()
        while entry_id is not None and entry_id not in seen:
            seen.add(entry_id)
            entry = self.entries.get(entry_id)
            if entry is None:
                break
            path.append(entry)
            entry_id = entry.parentId
        path.reverse()
        return path

    def nodes(self) -> Iterator[Entry]:
        return (entry for entry in self.entries.values() if is_node(entry))


# --- reading ------------------------------------------------------------------


@dataclass
class LoadedFile:
    header: SessionHeader | None
    entries: list[Entry]
    valid_bytes: int
    """Length of the prefix that ends with the last complete, parsed line."""
    torn_tail: bytes
    """Bytes after the last newline that do not parse: a write cut short."""
    bad_lines: list[int]
    """Line numbers (1-based) of complete lines that did not parse; kept in the file."""


def parse_session_bytes(data: bytes) -> LoadedFile:
    header: SessionHeader | None = None
    entries: list[Entry] = []
    bad_lines: list[int] = []
    valid_bytes = 0
    offset = 0
    line_number = 0
    while offset < len(data):
        newline = data.find(b"\n", offset)
        complete = newline != -1
        end = newline + 1 if complete else len(data)
        raw = data[offset:end]
        line_number += 1
        parsed = _parse_line(raw, want_header=header is None and line_number == 1)
        if parsed is None:
            if not complete:
                return LoadedFile(header, entries, valid_bytes, raw, bad_lines)
            bad_lines.append(line_number)
        elif isinstance(parsed, SessionHeader):
            header = parsed
        else:
            entries.append(parsed)
        if complete or parsed is not None:
            valid_bytes = end
        offset = end
    return LoadedFile(header, entries, valid_bytes, b"", bad_lines)


def _parse_line(raw: bytes, want_header: bool) -> SessionHeader | Entry | None:
    text = raw.strip()
    if not text:
        return None
    try:
        data = json.loads(text)
        if want_header:
            return SessionHeader.model_validate(data)
        return ENTRY_ADAPTER.validate_python(data)
    except (ValueError, ValidationError):
        return None


# --- writing ------------------------------------------------------------------


def encode_line(line: SessionHeader | Entry) -> bytes:
    """One JSON line; optional fields left out when empty, required ones (parentId, label...)
    written even when null."""
    data = line.model_dump(mode="json", exclude_none=True)
    for name, info in type(line).model_fields.items():
        if info.is_required() and name not in data:
            data[name] = None
    # ASCII escapes keep any string a client sent (even a lone surrogate) loadable.
    return (json.dumps(data, separators=(",", ":")) + "\n").encode()


class SessionFile:
    """An open, locked session file that only grows."""

    def __init__(self, path: Path, header: SessionHeader, fd: int, lock_fd: int) -> None:
        self.path = path
        self.header = header
        self._fd = fd
        self._lock_fd = lock_fd

    @property
    def session_id(self) -> str:
        return self.header.id

    @classmethod
    def read_only(cls, path: Path, header: SessionHeader) -> SessionFile:
        """A view of a session that may be open elsewhere: it reads, it never appends."""
        return cls(path, header, fd=-1, lock_fd=-1)

    def append(self, entry: Entry) -> None:
        """Written with one write(2) call on an O_APPEND descriptor: the line lands whole or torn
        at the end, never interleaved, and it is in the OS before the request is answered."""
        if self._fd < 0:
            raise StoreError(f"session {self.session_id!r} was opened read-only")
        data = encode_line(entry)
        written = os.write(self._fd, data)
        if written != len(data):
            raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")

    def close(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd >= 0:
                os.close(fd)
        self._fd = self._lock_fd = -1


def acquire_lock(lock_path: Path, session_id: str) -> int:
    """An advisory lock held for as long as the session is open; it names the holder's pid."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        raise SessionLocked(session_id, int(holder) if holder.isdigit() else None) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


# --- the data directory -------------------------------------------------------


@dataclass
class SessionListing:
    session_id: str
    path: Path
    header: SessionHeader | None
    workspace: str


class Store:
    """Where sessions live on disk and how they are opened, created and found."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.resolve()

    def workspace_dir(self, workspace: str) -> Path:
        directory = self.data_dir / "workspaces" / workspace_slug(workspace)
        sessions = directory / "sessions"
        if not sessions.is_dir():
            sessions.mkdir(parents=True, exist_ok=True)
            (directory / WORKSPACE_FILE).write_text(json.dumps({"workspace": workspace}))
        return directory

    def session_path(self, workspace: str, session_id: str) -> Path:
        return self.workspace_dir(workspace) / "sessions" / f"{check_session_id(session_id)}.jsonl"

    def find_session(self, session_id: str) -> SessionListing:
        check_session_id(session_id)
        for listing in self.listings():
            if listing.session_id == session_id:
                return listing
        raise SessionNotFound(session_id)

    def listings(self, workspace: str | None = None) -> Iterator[SessionListing]:
        root = self.data_dir / "workspaces"
        if workspace is not None:
            directories = [root / workspace_slug(workspace)]
        else:
            directories = sorted(root.iterdir()) if root.is_dir() else []
        for directory in directories:
            recorded = _recorded_workspace(directory)
            for path in sorted((directory / "sessions").glob("*.jsonl")):
                if SESSION_ID_PATTERN.fullmatch(path.stem):
                    yield SessionListing(path.stem, path, read_header(path), recorded)

    def create(self, header: SessionHeader) -> SessionFile:
        path = self.session_path(header.workspace, header.id)
        lock_fd = acquire_lock(path.with_suffix(".lock"), header.id)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        except BaseException:
            os.close(lock_fd)
            raise
        session_file = SessionFile(path, header, fd, lock_fd)
        os.write(fd, encode_line(header))
        return session_file

    def open(self, listing: SessionListing) -> tuple[SessionFile, LoadedFile]:
        """Lock and load a session; a torn tail is moved aside so appends start on a clean line."""
        lock_fd = acquire_lock(listing.path.with_suffix(".lock"), listing.session_id)
        try:
            loaded = parse_session_bytes(listing.path.read_bytes())
            if loaded.bad_lines:
                log.error(
                    "session %s: lines %s could not be read; they stay in the file and are skipped",
                    listing.session_id, loaded.bad_lines,
                )
            if loaded.torn_tail:
                self._set_aside_torn_tail(listing, loaded)
            header = loaded.header
            if header is None and loaded.valid_bytes > 0:
                raise StoreError(f"session {listing.session_id!r} has no readable header line")
            fd = os.open(listing.path, os.O_WRONLY | os.O_APPEND)
            if header is None:
                # A crash tore the header itself, so the file is empty now: write it again.
                header = SessionHeader(id=listing.session_id, workspace=listing.workspace)
                os.write(fd, encode_line(header))
            elif not _ends_with_newline(listing.path):
                os.write(fd, b"\n")  # the last line parsed but lost its newline
            return SessionFile(listing.path, header, fd, lock_fd), loaded
        except BaseException:
            os.close(lock_fd)
            raise

    def peek(self, listing: SessionListing) -> tuple[SessionFile, LoadedFile]:
        """Read a session without locking or repairing it (for listings)."""
        loaded = parse_session_bytes(listing.path.read_bytes())
        header = loaded.header or SessionHeader(id=listing.session_id, workspace=listing.workspace)
        return SessionFile.read_only(listing.path, header), loaded

    def _set_aside_torn_tail(self, listing: SessionListing, loaded: LoadedFile) -> None:
        aside = listing.path.with_name(listing.path.name + ".torn")
        with open(aside, "ab") as out:
            out.write(loaded.torn_tail + b"\n")
        os.truncate(listing.path, loaded.valid_bytes)
        log.warning(
            "session %s: a torn last line (%d bytes, from an interrupted write) was moved to %s",
            listing.session_id, len(loaded.torn_tail), aside,
        )


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def read_header(path: Path) -> SessionHeader | None:
    with open(path, "rb") as handle:
        first = handle.readline()
    parsed = _parse_line(first, want_header=True)
    return parsed if isinstance(parsed, SessionHeader) else None


def _recorded_workspace(directory: Path) -> str:
    try:
        return str(json.loads((directory / WORKSPACE_FILE).read_text())["workspace"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""
