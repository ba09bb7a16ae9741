"""Who may reach a daemon: only the user who runs it.

- A Unix socket lives in a folder of that user's own (a real directory, mode 0700, not a
  symlink), is created 0600, and both ends check the other's uid (SO_PEERCRED): a socket
  another user planted, or a peer of another user, is refused with a message that says so.
- Files next to it (the shared daemon's log, its start lock) are opened without following
  symlinks, so a planted link cannot make the daemon write to another file.
- TCP has no peer uid: a daemon on TCP writes a random token to a file only its user can
  read (`tcp-<port>.token`, as Jupyter does) and serves a connection only after its
  `initialize` carried that token (`authToken`). It listens on loopback unless asked
  explicitly (`--allow-remote`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import secrets
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextd.paths import default_data_dir
from contextd.rpc.messages import UNAUTHORIZED, RpcError

log = logging.getLogger(__name__)

TOKEN_FIELD = "authToken"
"""The `initialize` param that carries the TCP token."""


class AccessRefused(Exception):
    """Something another user could have planted or could reach; the message says what."""


def private_folder(folder: Path) -> Path:
    """`folder`, made if missing, once it is certain to be this user's alone."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    found = os.lstat(folder)
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
        raise AccessRefused(f"{folder} is not a directory of its own (a symlink or a file); remove it")
    if found.st_uid != os.getuid():
        raise AccessRefused(
            f"{folder} belongs to uid {found.st_uid}, not to you (uid {os.getuid()}): another "
            "user may be waiting for your connection there; remove it, or set XDG_RUNTIME_DIR"
        )
    if found.st_mode & 0o077:
        raise AccessRefused(
            f"{folder} is open to other users (mode {stat.S_IMODE(found.st_mode):o}); "
            f"make it 0700 (chmod 700 {folder}) or remove it"
        )
    return folder


def open_private_file(path: Path, flags: int) -> int:
    """A file descriptor for `path` (created 0600), never through a symlink."""
    try:
        return os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        if os.path.islink(path):
            raise AccessRefused(f"{path} is a symlink; remove it") from None
        raise AccessRefused(f"cannot open {path}: {error.strerror}") from None


def peer_uid(connected: Any) -> int | None:
    """The uid of the process at the other end of a Unix socket (None where the system
    cannot tell, or for another kind of socket)."""
    if not hasattr(socket, "SO_PEERCRED") or connected is None or connected.family != socket.AF_UNIX:
        return None
    credentials = connected.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", credentials)[1])


def check_same_user(connected: Any, what: str) -> None:
    uid = peer_uid(connected)
    if uid is not None and uid != os.getuid():
        raise AccessRefused(f"{what} runs as uid {uid}, not as you (uid {os.getuid()})")


# --- TCP --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TcpToken:
    """The secret a TCP connection's `initialize` must carry, and the file that holds it."""

    secret: str
    path: Path

    def check(self, initialize_params: Any) -> None:
        given = initialize_params.get(TOKEN_FIELD) if isinstance(initialize_params, dict) else None
        if isinstance(given, str) and hmac.compare_digest(given.encode(), self.secret.encode()):
            return
        raise RpcError(
            UNAUTHORIZED,
            f"this daemon serves TCP connections of its own user only: initialize needs "
            f"{TOKEN_FIELD}, the token in {self.path}",
        )


def tcp_token_path(port: int) -> Path:
    """Where the daemon on TCP `port` keeps its token: in the user's runtime folder."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime) / "contextd" if runtime else default_data_dir() / "run"
    return folder / f"tcp-{port}.token"


def write_tcp_token(port: int) -> TcpToken:
    """A fresh token for the daemon on `port`, written where only this user can read it."""
    path = tcp_token_path(port)
    private_folder(path.parent)
    path.unlink(missing_ok=True)  # a dead daemon's: the port is ours now, so is the name
    token = secrets.token_urlsafe(32)
    fd = open_private_file(path, os.O_WRONLY | os.O_EXCL)
    with os.fdopen(fd, "w") as file:
        file.write(token + "\n")
    return TcpToken(token, path)


def read_tcp_token(port: int) -> str | None:
    """The token of the daemon on TCP `port` of this user; None when there is none to read."""
    try:
        return tcp_token_path(port).read_text().strip() or None
    except OSError:
        return None


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (127.0.0.0/8, ::1)."""
    host = host.removeprefix("[").removesuffix("]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(item[4][0]).is_loopback for item in found)
