"""Session files on disk: the data-dir layout, append-only JSONL, locking, recovery, the tree.

One session is one file, `workspaces/<slug>-<hash>/sessions/<id>.jsonl`: a header line,
then one entry per line. Lines are only ever appended. A crash mid-write leaves at most a
torn last line, which loading sets aside in `<id>.jsonl.torn` before appending again.
`<id>.jsonl.counts` keeps its entries' token counts for the next load (session/counts.py).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import cast

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError

from contextd.model import (
    NON_NODE_TYPES,
    ColdMessageEntry,
    ColdRecord,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    SessionHeader,
    is_node,
    read_line,
)
from contextd.paths import default_data_dir as default_data_dir

log = logging.getLogger(__name__)

ENTRY_ADAPTER: TypeAdapter[Entry] = TypeAdapter(Entry)
HEADER_ADAPTER: TypeAdapter[SessionHeader] = TypeAdapter(SessionHeader)
SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
WORKSPACE_FILE = "workspace.json"
LOCK_FILE = "sessions.lock"


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


class SessionDamaged(StoreError):
    """A session file that cannot be opened: it is listed as damaged, the others serve."""

    def __init__(self, session_id: str, why: str) -> None:
        super().__init__(f"session {session_id!r} is damaged: {why}")
        self.session_id = session_id
        self.why = why


SYMLINK_REFUSED = "its file is a symbolic link, which contextd does not follow in its data directory"


STORAGE_REASONS = {
    errno.ENOSPC: ("diskFull", "the disk holding the data directory is full"),
    errno.EDQUOT: ("diskFull", "the disk quota of the data directory is used up"),
    errno.EROFS: ("readOnly", "the data directory is read-only"),
    errno.EACCES: ("permissionDenied", "the data directory cannot be written by this user"),
    errno.EPERM: ("permissionDenied", "the data directory cannot be written by this user"),
}


class StorageFailed(StoreError):
    """The data directory refused a write; nothing of the request was stored. `reason` is
    `diskFull`, `readOnly`, `permissionDenied` or `ioError`."""

    def __init__(self, reason: str, why: str) -> None:
        super().__init__(f"nothing was stored: {why}")
        self.reason = reason

    @classmethod
    def of(cls, error: OSError) -> StorageFailed:
        reason, why = STORAGE_REASONS.get(error.errno or 0, ("ioError", error.strerror or str(error)))
        return cls(reason, why)


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
    children: dict[str | None, tuple[str, ...]] = field(default_factory=dict)
    """Each node's children, in file order (tuples: most nodes have one, and a tuple of one
    weighs half a list of one)."""
    labels: dict[str, str] = field(default_factory=dict)
    leaf_id: str | None = None
    lines: dict[str, bytes] = field(default_factory=dict)
    """The file lines of message entries just loaded, until `keep_cold` sorts them (and
    shares the field names of those that stay parsed: `MessageEntry.share_field_names`)."""
    cold: bool = False
    """Whether some entries are cold."""
    node_count: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    """How many nodes of each type: a walk looking for a type the tree lacks is spared."""
    latest_model_change: ModelChangeEntry | None = None
    """The last `model_change` node in file order."""
    glance: bool = False
    """A tree read to be looked at once and let go (a listing's row): its entries are neither
    kept cold nor made to share their field names, work that pays only for a tree kept."""

    def add(self, entry: Entry, line: bytes | None = None, *, unwritten: bool = False) -> None:
        """`line`: the file's line of a message entry just loaded; `unwritten`: an entry not
        in the file yet (a mirror's, announced first), whose line `lines` gets once written."""
        # Type tags, not isinstance (slow on a pydantic model when the answer is no), and each
        # field read once (slow too): every entry of every load and mirror's write passes here.
        entry_id, kind = entry.id, entry.type
        self.entries[entry_id] = entry
        if kind == "message":
            if type(entry) is ColdMessageEntry:
                self.cold = True
            elif line is not None:
                self.lines[entry_id] = line  # its fields' names shared by keep_cold, if it stays parsed
            elif not unwritten and not self.glance:
                cast(MessageEntry, entry).share_field_names()
        if kind in NON_NODE_TYPES:
            if entry.type == "label":
                if entry.label is None:
                    self.labels.pop(entry.targetId, None)
                else:
                    self.labels[entry.targetId] = entry.label
            elif entry.type == "leaf":
                self.leaf_id = entry.targetId
        else:
            parent_id = entry.parentId
            siblings = self.children.get(parent_id)
            self.children[parent_id] = (entry_id,) if siblings is None else (*siblings, entry_id)  # most: the first child
            self.leaf_id = entry_id
            self.node_count += 1
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            if kind == "model_change":
                self.latest_model_change = cast(ModelChangeEntry, entry)

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
        return (entry for entry in self.entries.values() if entry.type not in NON_NODE_TYPES)  # is_node, inline: every load walks them

    def keep_cold(self, path: list[Entry], live_from: int) -> None:
        """Message entries that are not in `path[live_from:]` (the live context: what came
        before its latest compaction kept nothing of, and other branches) are kept as their
        lines (`ColdMessageEntry`): those just loaded as the line they were read from, those
        appended since (a compaction in this daemon) as the line `encode_line` wrote for
        them. Cold entries in it are parsed again (a navigation to another branch); `path`
        is brought up to date in place."""
        if self.glance:
            return
        if live_from > 0 or len(path) < self.node_count:  # else every node is live
            live = {entry.id for entry in path[live_from:]}
            leaving = [entry_id for entry_id, entry in self.entries.items() if type(entry) is MessageEntry and entry_id not in live]
            for entry_id in leaving:
                parsed = cast(MessageEntry, self.entries[entry_id])
                line = self.lines.pop(entry_id, None)
                self.entries[entry_id] = cast(Entry, ColdMessageEntry(parsed, encode_line(parsed)[:-1] if line is None else line))
            self.cold = self.cold or bool(leaving)
        for entry_id in self.lines:  # loaded, and stays parsed
            cast(MessageEntry, self.entries[entry_id]).share_field_names()
        self.lines.clear()
        if not self.cold:
            return
        for index, entry in enumerate(path):
            current = self.entries[entry.id]
            if index >= live_from and type(current) is ColdMessageEntry:
                parsed = current.parsed()
                parsed.share_field_names()
                current = self.entries[entry.id] = parsed
            path[index] = current


# --- reading ------------------------------------------------------------------


@dataclass(frozen=True)
class KnownLines:
    """The records of a file's cold message entries by their position among its entries,
    kept from its last load (session/counts.py): valid only for the very file they were
    taken from (`stamp`: its size and modification time)."""

    stamp: tuple[int, int]
    cold: Mapping[int, ColdRecord]


@dataclass
class LoadedFile:
    header: SessionHeader | None
    entries: list[Entry]
    lines: list[bytes]
    """Each entry's line of the file (without its newline)."""
    valid_bytes: int
    """Length of the prefix that ends with the last complete, parsed line."""
    torn_tail: bytes
    """Bytes after the last newline that do not parse: a write cut short."""
    bad_lines: list[int]
    """Line numbers (1-based) of complete lines that did not parse; kept in the file."""
    stamp: tuple[int, int] | None = None
    """The size and modification time of the file as it was read."""


def parse_session_bytes(data: bytes, known: Mapping[int, ColdRecord] | None = None) -> LoadedFile:
    """The file's lines parsed; a message entry whose record is `known` by its position among
    the entries, and whose line starts with its id, is taken as it is (`ColdMessageEntry`)."""
    header: SessionHeader | None = None
    entries: list[Entry] = []
    lines: list[bytes] = []
    bad_lines: list[int] = []
    valid_bytes = 0
    offset = 0
    line_number = 0
    while offset < len(data):
        newline = data.find(b"\n", offset)
        complete = newline != -1
        end = newline + 1 if complete else len(data)
        raw = data[offset:newline] if complete else data[offset:]
        line_number += 1
        record = known.get(len(entries)) if known else None
        if record is not None and raw.startswith(b'{"id":"%s",' % record[0].encode()):
            parsed: SessionHeader | Entry | None = cast(Entry, ColdMessageEntry.of_record(record, raw))
        else:
            parsed = _parse_line(raw, want_header=header is None and line_number == 1)
        if parsed is None:
            if not complete:
                return LoadedFile(header, entries, lines, valid_bytes, raw, bad_lines)
            bad_lines.append(line_number)
        elif isinstance(parsed, SessionHeader):
            header = parsed
        else:
            entries.append(parsed)
            lines.append(raw)
        if complete or parsed is not None:
            valid_bytes = end
        offset = end
    return LoadedFile(header, entries, lines, valid_bytes, b"", bad_lines)


def _parse_line(raw: bytes, want_header: bool) -> SessionHeader | Entry | None:
    if raw.isspace() or not raw:
        return None
    try:
        if want_header:
            return read_line(raw, HEADER_ADAPTER)
        return read_line(raw, ENTRY_ADAPTER)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        return None


HEADER_START = b'{"type":"session"'


def _torn_header(tail: bytes) -> bool:
    """Whether bytes without a newline can be a header that a crash cut short (nothing, or
    the start every header line is written with), rather than something else entirely."""
    return HEADER_START.startswith(tail[: len(HEADER_START)])


def read_session_file(session_id: str, path: Path, known: KnownLines | None = None) -> LoadedFile:
    """A session file parsed, refusing links (they could lead out of the data directory)
    and whatever cannot be read (SessionDamaged); the `known` records are taken when they
    were kept for the file as it is."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SessionDamaged(session_id, SYMLINK_REFUSED) from None
        raise SessionDamaged(session_id, f"it cannot be read ({error.strerror})") from None
    try:
        with open(fd, "rb") as handle:
            data = handle.read()
            info = os.fstat(handle.fileno())
    except OSError as error:  # a directory, an I/O error
        raise SessionDamaged(session_id, f"it cannot be read ({error.strerror})") from None
    stamp = (len(data), info.st_mtime_ns)
    loaded = parse_session_bytes(data, known.cold if known is not None and known.stamp == stamp else None)
    loaded.stamp = stamp
    return loaded


# --- writing ------------------------------------------------------------------


def encode_line(line: SessionHeader | Entry) -> bytes:
    """One JSON line; optional fields left out when empty, required ones (parentId, label...)
    written even when null."""
    if type(line) is ColdMessageEntry:
        return line.line + b"\n"  # the very line it was loaded from
    nulls = [name for name in _required_fields(type(line)) if getattr(line, name) is None]
    try:
        # pydantic's own JSON, as bytes: half the time of model_dump and json.dumps (a
        # mirror's first read writes every entry of the transcript).
        body = type(line).__pydantic_serializer__.to_json(line, exclude_none=True)
    except PydanticSerializationError:  # a lone surrogate in free-form data (tool arguments)
        data = line.model_dump(mode="json", exclude_none=True)
        # ASCII escapes keep any string a client sent (even a lone surrogate) loadable.
        return (json.dumps({**dict.fromkeys(nulls), **data}, separators=(",", ":")) + "\n").encode()
    if nulls:  # required fields left out as None are written as null
        fields = [b'"%s":null' % name.encode() for name in nulls] + ([body[1:-1]] if body != b"{}" else [])
        body = b"{" + b",".join(fields) + b"}"
    return body + b"\n"


@cache
def _required_fields(kind: type[SessionHeader | Entry]) -> tuple[str, ...]:
    return tuple(name for name, info in kind.model_fields.items() if info.is_required())


WritableAgain = Callable[[], "tuple[AppendHandles, Callable[[], None]]"]
"""Tries again to make a read-only session writable: its handles and how to let go of its
lock, or StorageFailed saying why not yet."""


class SessionFile:
    """A session file that only grows, open for writing while its lock is held."""

    def __init__(
        self,
        path: Path,
        header: SessionHeader,
        handles: AppendHandles | None,
        release: Callable[[], None] | None = None,
        *,
        read_only_because: StoreError | None = None,
        writable_again: WritableAgain | None = None,
    ) -> None:
        self.path = path
        self.header = header
        self._handles = handles
        self._release = release
        self._read_only_because = read_only_because
        self._writable_again = writable_again
        self.unmade = False
        """Not on disk yet: made at its first append (`Store.create_at_first_write`)."""

    @property
    def session_id(self) -> str:
        return self.header.id

    @classmethod
    def read_only(cls, path: Path, header: SessionHeader, because: StoreError | None = None) -> SessionFile:
        """A view of a session that may be open elsewhere, or of a data directory that
        cannot be written (`because`): it reads, it never appends."""
        return cls(path, header, handles=None, read_only_because=because)

    @property
    def writable(self) -> bool:
        return self._handles is not None

    def append(self, entry: Entry) -> None:
        self.append_all([entry])

    def append_all(self, entries: Sequence[Entry]) -> list[bytes]:
        """Every entry or none: one write, cut back whole when it fails (StorageFailed);
        returns the lines written."""
        handles = self._handles or self._become_writable()
        lines = [encode_line(entry) for entry in entries]
        handles.write(self.path, b"".join(lines))
        return lines

    def _become_writable(self) -> AppendHandles:
        """A session opened read-only because its data directory could not be written is
        tried again at each write: a directory writable again (remounted, its permissions
        fixed) takes writes without the session being closed first."""
        if self._writable_again is None:
            raise self._read_only_because or StoreError(f"session {self.session_id!r} was opened read-only")
        try:
            self._handles, release = self._writable_again()
        except StorageFailed as error:
            self._read_only_because = error
            raise
        self._release = self._release or release
        self._read_only_because = self._writable_again = None
        self.unmade = False
        return self._handles

    def unload(self) -> None:
        """Let go of the descriptor, keep the lock: the session is still ours to reload."""
        if self._handles is not None:
            self._handles.forget(self.path)
            self._handles = None

    def close(self) -> None:
        """Done with the session: the descriptor and the lock go."""
        self.unload()
        release, self._release = self._release, None
        if release is not None:
            release()


class AppendHandles:
    """O_APPEND descriptors of the session files being written; only the `limit` most
    recently used stay open, so a daemon with thousands of open sessions holds a bounded
    number of descriptors, and a busy session does not pay an open(2) per line."""

    def __init__(self, limit: int = 16) -> None:
        self.limit = limit
        self._fds: OrderedDict[Path, int] = OrderedDict()
        self._mutex = threading.Lock()
        self._cut_back: dict[Path, int] = {}
        """Files whose failed write could not be cut back yet, with the size to cut them to."""

    def write(self, path: Path, data: bytes) -> None:
        """Whole lines appended, all of them or none: the session's lock makes this daemon
        the file's only writer, so a write that fails part way (a full disk) is cut back to
        the size before it, and the next line starts on a clean line, never glued onto a
        fragment. The bytes are in the OS before the request is answered."""
        with self._mutex:
            try:
                fd = self._descriptor(path)
                self._finish_cut_back(path, fd)
                size = os.fstat(fd).st_size
            except OSError as error:
                raise StorageFailed.of(error) from None
            try:
                _write_all(fd, data)
            except OSError as error:
                self._cut_back[path] = size
                self._finish_cut_back(path, fd, quiet=True)
                raise StorageFailed.of(error) from None

    def _descriptor(self, path: Path) -> int:
        fd = self._fds.pop(path, None)
        if fd is None:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
            while len(self._fds) >= self.limit:
                os.close(self._fds.popitem(last=False)[1])
        self._fds[path] = fd
        return fd

    def _finish_cut_back(self, path: Path, fd: int, *, quiet: bool = False) -> None:
        """Truncate a file a failed write left a fragment in; until that works, nothing
        more is written to it (OSError; `quiet`: logged, tried again at the next write)."""
        size = self._cut_back.get(path)
        if size is None:
            return
        try:
            os.ftruncate(fd, size)
        except OSError as error:
            log.error("%s: a failed write could not be cut back yet (%s); tried again before the next", path, error)
            if not quiet:
                raise
            return
        del self._cut_back[path]

    def forget(self, path: Path) -> None:
        with self._mutex:
            fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """write(2) until every byte is written: a short write is followed by one that fails
    with the reason (ENOSPC) or writes the rest."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# --- locks --------------------------------------------------------------------


class SessionLocks:
    """The sessions this process has open for writing, so that no other contextd writes them.

    One POSIX record lock (fcntl F_SETLK) per session, each on its own byte (at a hash of the
    session id) of one `sessions.lock` file in the data directory. So a daemon holds the locks
    of any number of sessions, evicted from memory or not, with one descriptor; the kernel
    drops a dead daemon's locks; and F_GETLK names the holder. Record locks belong to the
    process, and closing ANY descriptor of the file drops them all: so there is one instance
    per lock file per process (see `locks_for`), the file is opened nowhere else, and the
    instance itself tells the sessions held in this process apart, which the kernel does not.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        self._held: set[str] = set()
        self._mutex = threading.Lock()

    def acquire(self, session_id: str) -> None:
        with self._mutex:
            if session_id in self._held:
                raise SessionLocked(session_id, os.getpid())
            if self._fd < 0:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            offset = _lock_offset(session_id)
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
            except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another holds it
                raise SessionLocked(session_id, _lock_holder(self._fd, offset)) from None
            self._held.add(session_id)

    def release(self, session_id: str) -> None:
        with self._mutex:
            if session_id not in self._held:
                return
            self._held.discard(session_id)
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, _lock_offset(session_id))
            if not self._held:
                os.close(self._fd)
                self._fd = -1

    def holds(self, session_id: str) -> bool:
        return session_id in self._held


_LOCKS: dict[Path, SessionLocks] = {}
_LOCKS_MUTEX = threading.Lock()


def locks_for(data_dir: Path) -> SessionLocks:
    """The one `SessionLocks` of this process for a data directory."""
    path = data_dir / LOCK_FILE
    with _LOCKS_MUTEX:
        return _LOCKS.setdefault(path, SessionLocks(path))


def _lock_offset(session_id: str) -> int:
    digest = hashlib.blake2b(session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2  # below 2**62: a valid off_t, far from overflow


# struct flock as Linux lays it out: short l_type, l_whence; off_t l_start, l_len; pid_t l_pid.
_FLOCK = "hhqqi4x"


def _lock_holder(fd: int, offset: int) -> int | None:
    """The pid of the process holding the lock at `offset`, where the platform says it."""
    if not sys.platform.startswith("linux"):
        return None
    query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
    try:
        kind, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
    except OSError:
        return None
    return pid if kind != fcntl.F_UNLCK and pid > 0 else None


# --- the data directory -------------------------------------------------------


@dataclass
class SessionListing:
    session_id: str
    path: Path
    workspace: str


class Store:
    """Where sessions live on disk and how they are opened, created and found.

    A session created or opened here stays locked until its `SessionFile` is closed or
    `release` is called, even when the daemon has unloaded it from memory."""

    def __init__(self, data_dir: Path, *, open_files: int = 16) -> None:
        self.data_dir = data_dir.resolve()
        self.locks = locks_for(self.data_dir)
        self.handles = AppendHandles(open_files)
        self._held: set[str] = set()
        keep_private(self.data_dir)

    def workspace_dir(self, workspace: str) -> Path:
        """The workspace's directory, made (with its `sessions` folder) where it is not yet."""
        directory = self._workspace_path(workspace)
        sessions = directory / "sessions"
        if not sessions.is_dir():
            try:
                make_private_dirs(sessions)
                write_private(directory / WORKSPACE_FILE, json.dumps({"workspace": workspace}).encode())
            except OSError as error:
                raise StorageFailed.of(error) from None
        return directory

    def session_path(self, workspace: str, session_id: str) -> Path:
        """Where the session's file goes, its directories made."""
        self.workspace_dir(workspace)
        return self._session_path(workspace, session_id)

    def _session_path(self, workspace: str, session_id: str) -> Path:
        return self._workspace_path(workspace) / "sessions" / f"{check_session_id(session_id)}.jsonl"

    def _workspace_path(self, workspace: str) -> Path:
        return self.data_dir / "workspaces" / workspace_slug(workspace)

    def find_session(self, session_id: str) -> SessionListing:
        name = f"{check_session_id(session_id)}.jsonl"
        for directory in self.workspace_dirs():
            path = directory / "sessions" / name
            if path.is_symlink():
                raise SessionDamaged(session_id, SYMLINK_REFUSED)
            if path.is_file():
                return SessionListing(session_id, path, recorded_workspace(directory))
        raise SessionNotFound(session_id)

    def workspace_dirs(self, workspace: str | None = None) -> list[Path]:
        """The directories of `workspace`, or of every workspace; each holds `sessions/`."""
        root = self.data_dir / "workspaces"
        if workspace is not None:
            directory = root / workspace_slug(workspace)
            return [directory] if directory.is_dir() else []
        return sorted(root.iterdir()) if root.is_dir() else []

    def listings(self, workspace: str | None = None) -> Iterator[SessionListing]:
        for directory in self.workspace_dirs(workspace):
            recorded = recorded_workspace(directory)
            for path in sorted((directory / "sessions").glob("*.jsonl")):
                if SESSION_ID_PATTERN.fullmatch(path.stem):
                    yield SessionListing(path.stem, path, recorded)

    # --- locks held by this store ---------------------------------------------------------

    def _lock(self, session_id: str) -> None:
        make_private_dirs(self.data_dir)
        self.locks.acquire(session_id)
        self._held.add(session_id)

    def holds(self, session_id: str) -> bool:
        return session_id in self._held

    def release(self, session_id: str) -> None:
        if session_id in self._held:
            self._held.discard(session_id)
            self.locks.release(session_id)

    def release_all(self) -> None:
        for session_id in list(self._held):
            self.release(session_id)

    def _held_file(self, path: Path, header: SessionHeader) -> SessionFile:
        """A session whose lock this store holds, written through its handles."""
        return SessionFile(path, header, self.handles, release=lambda: self.release(header.id))

    def _unwritable_file(
        self,
        listing: SessionListing,
        header: SessionHeader,
        loaded: LoadedFile,
        because: StorageFailed,
        read_as: tuple[int, int] | None = None,
    ) -> SessionFile:
        """A session the data directory would not let us lock or clean up (`because`): it
        reads, and each write tries again to lock it and clean up what a crash left, as
        loading does. Read without the lock, the file must still be as it was before it was
        read (`read_as`; another daemon may have written it meanwhile), else it stays read-only."""
        held = self.holds(listing.session_id)
        repair = LoadedFile(loaded.header, [], [], loaded.valid_bytes, loaded.torn_tail, [])  # not its entries

        def writable_again() -> tuple[AppendHandles, Callable[[], None]]:
            try:
                if not self.holds(listing.session_id):
                    self._lock(listing.session_id)
                    if file_stamp(listing.path) != read_as:
                        self.release(listing.session_id)
                        raise StorageFailed("readOnly", "the session changed on disk since it was opened read-only: close and open it again")
                self._repair(listing, repair, header)
            except OSError as error:
                raise StorageFailed.of(error) from None
            log.info("session %s is writable again", listing.session_id)
            return self.handles, lambda: self.release(header.id)

        release = (lambda: self.release(header.id)) if held else None
        return SessionFile(
            listing.path, header, None, release=release, read_only_because=because, writable_again=writable_again
        )

    # --- creating and loading -------------------------------------------------------------

    def create(self, header: SessionHeader) -> SessionFile:
        """A new session file holding its header; on a failure (StorageFailed) no file stays."""
        path = self.session_path(header.workspace, header.id)
        try:
            self._lock(header.id)
        except OSError as error:
            raise StorageFailed.of(error) from None
        try:
            write_private(path, encode_line(header), exclusive=True)
        except BaseException as error:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)  # a header cut short is no session
            self.release(header.id)
            if isinstance(error, OSError):
                raise StorageFailed.of(error) from None
            raise
        return self._held_file(path, header)

    def create_at_first_write(self, header: SessionHeader) -> SessionFile:
        """`create`'s session file, its directories made, locked and written with its header
        at its first append (a mirror's, once its first read is announced: 0.7-1.7 ms of CPU
        the figure does not wait for, a new workspace's directories 0.5-1.5 ms more); a
        failure (StorageFailed) comes from that append."""
        path = self._session_path(header.workspace, header.id)

        def created() -> tuple[AppendHandles, Callable[[], None]]:
            self.create(header)
            return self.handles, lambda: self.release(header.id)

        file = SessionFile(path, header, handles=None, writable_again=created)
        file.unmade = True
        return file

    def open(self, listing: SessionListing, known: KnownLines | None = None) -> tuple[SessionFile, LoadedFile]:
        """Lock and load a session; a torn tail is moved aside so appends start on a clean line.
        Where the data directory cannot be written (its lock file cannot be opened) the
        session is read as it is, and every write to it answers why (StorageFailed).
        `known`: records of cold entries kept from the file's last load (`read_session_file`)."""
        try:
            self._lock(listing.session_id)
        except OSError as error:
            return self._read_only(listing, StorageFailed.of(error), known)
        try:
            return self._load(listing, known)
        except BaseException:
            self.release(listing.session_id)
            raise

    def _read_only(
        self, listing: SessionListing, because: StorageFailed, known: KnownLines | None
    ) -> tuple[SessionFile, LoadedFile]:
        log.warning("session %s opened read-only: %s", listing.session_id, because)
        try:
            read_as = file_stamp(listing.path)
        except OSError:
            read_as = None  # reading it says why
        header, loaded = self._read(listing, known)
        return self._unwritable_file(listing, header, loaded, because, read_as), loaded

    @staticmethod
    def _read(listing: SessionListing, known: KnownLines | None = None) -> tuple[SessionHeader, LoadedFile]:
        """The file parsed; SessionDamaged when it cannot be opened as a session. A file
        that is empty or holds the start of a header only (a crash tore it) can: its header
        stands as the one loading writes again."""
        loaded = read_session_file(listing.session_id, listing.path, known)
        if loaded.header is None and (loaded.valid_bytes > 0 or not _torn_header(loaded.torn_tail)):
            raise SessionDamaged(listing.session_id, "its first line is not a session header")
        return loaded.header or SessionHeader(id=listing.session_id, workspace=listing.workspace), loaded

    def reload(self, listing: SessionListing, known: KnownLines | None = None) -> tuple[SessionFile, LoadedFile]:
        """Load again a session this store still holds the lock of (it was unloaded from
        memory, never let go): nobody else can have written it since."""
        if not self.holds(listing.session_id):
            raise StoreError(f"session {listing.session_id!r} is not held by this daemon")
        return self._load(listing, known)

    def _load(self, listing: SessionListing, known: KnownLines | None) -> tuple[SessionFile, LoadedFile]:
        header, loaded = self._read(listing, known)
        if loaded.bad_lines:
            log.error(
                "session %s: lines %s could not be read; they stay in the file and are skipped",
                listing.session_id, loaded.bad_lines,
            )
        try:
            self._repair(listing, loaded, header)
        except (OSError, StorageFailed) as error:
            because = error if isinstance(error, StorageFailed) else StorageFailed.of(error)
            log.warning("session %s opened read-only: a crash's traces cannot be cleaned up (%s)", listing.session_id, because)
            return self._unwritable_file(listing, header, loaded, because), loaded
        return self._held_file(listing.path, header), loaded

    def _repair(self, listing: SessionListing, loaded: LoadedFile, header: SessionHeader) -> None:
        """What a crash left is cleaned up, so that appends start on a clean line (once: a
        repair tried again after a failure finds the torn tail already cut off)."""
        if loaded.torn_tail and listing.path.stat().st_size > loaded.valid_bytes:
            self._set_aside_torn_tail(listing, loaded)
        if loaded.header is None:
            # A crash tore the header itself, so the file is empty now: write it again.
            self.handles.write(listing.path, encode_line(header))
        elif not _ends_with_newline(listing.path):
            self.handles.write(listing.path, b"\n")  # the last line parsed but lost its newline

    def peek(self, listing: SessionListing) -> tuple[SessionFile, LoadedFile]:
        """Read a session without locking or repairing it (for listings); SessionDamaged
        when it cannot be opened."""
        header, loaded = self._read(listing)
        return SessionFile.read_only(listing.path, header), loaded

    def remove(self, listing: SessionListing) -> None:
        """Delete a session's files; SessionLocked while another contextd process has it open.

        Under the session's lock, this store's own or one taken first, so no daemon can open
        the session while it goes away; the lock is let go once the files are gone (a
        failure keeps the lock this store held).
        """
        if listing.path.is_symlink():
            raise SessionDamaged(listing.session_id, SYMLINK_REFUSED)
        if not listing.path.resolve().is_relative_to(self.data_dir):
            raise InvalidSessionId(listing.session_id)
        held = self.holds(listing.session_id)
        if not held:
            self._lock(listing.session_id)
        try:
            for path in (*(listing.path.with_name(listing.path.name + tail) for tail in (".torn", ".counts")), listing.path):
                path.unlink(missing_ok=True)
        except BaseException:
            if not held:
                self.release(listing.session_id)
            raise
        self.handles.forget(listing.path)
        self.release(listing.session_id)

    def _set_aside_torn_tail(self, listing: SessionListing, loaded: LoadedFile) -> None:
        aside = listing.path.with_name(listing.path.name + ".torn")
        write_private(aside, loaded.torn_tail + b"\n", append=True)
        os.truncate(listing.path, loaded.valid_bytes)
        log.warning(
            "session %s: a torn last line (%d bytes, from an interrupted write) was moved to %s",
            listing.session_id, len(loaded.torn_tail), aside,
        )


def file_stamp(path: Path) -> tuple[int, int]:
    """Size and modification time: a file that changed since it was read differs in one."""
    info = path.stat()
    return info.st_size, info.st_mtime_ns


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def recorded_workspace(directory: Path) -> str:
    try:
        return str(json.loads((directory / WORKSPACE_FILE).read_text())["workspace"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


# --- permissions: the data directory is its owner's only ----------------------------------

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dirs(directory: Path) -> None:
    """`directory` and its missing parents, readable by the owner only (whatever the umask)."""
    if directory.is_dir():
        return
    make_private_dirs(directory.parent)
    try:
        directory.mkdir(mode=PRIVATE_DIR_MODE)
    except FileExistsError:
        return
    os.chmod(directory, PRIVATE_DIR_MODE)


def write_private(path: Path, data: bytes, *, exclusive: bool = False, append: bool = False) -> None:
    """Write a file only its owner can read, never through a link; `exclusive`: a new file
    only; `append`: add to it, else replace its content."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW
    flags |= os.O_EXCL if exclusive else (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def keep_private(data_dir: Path) -> None:
    """Take from other users what a data directory made before 0700/0600 gave them: every
    folder and file under it is made its owner's only, links left alone (never followed).
    A data directory this user cannot change (read-only, another's) is said once in the log."""
    refused: OSError | None = None
    for directory, _, files in os.walk(data_dir):  # links to folders are not walked into
        for name, mode in [(".", PRIVATE_DIR_MODE)] + [(name, PRIVATE_FILE_MODE) for name in files]:
            try:
                _tighten(os.path.join(directory, name), mode)
            except OSError as error:
                refused = refused or error
    if refused is not None:
        log.warning("data directory %s: permissions not tightened (%s)", data_dir, refused.strerror)


def _tighten(path: str, mode: int) -> None:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) & ~mode == 0:
        return
    os.chmod(path, stat.S_IMODE(info.st_mode) & mode)
