"""The per-user shared daemon, started on demand (the way `gopls -remote=auto` does it).

`contextd serve --shared` speaks stdio to its editor and forwards every byte to the daemon
on the user's Unix socket, starting that daemon first when none answers. Starting happens
under an exclusive lock next to the socket, so two editors starting at once get one
daemon. The daemon serves each connection as its own client and stops on its own after
`--grace` seconds (300 by default) without any.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from contextd.paths import default_data_dir
from contextd.rpc.access import check_same_user, open_private_file, private_folder
from contextd.rpc.messages import framed

SHARED_GRACE_SECONDS = 300.0
START_TIMEOUT_SECONDS = 30.0
MAX_SOCKET_PATH = 100
"""Unix socket paths longer than about 107 bytes cannot be bound."""


def socket_path(data_dir: Path) -> Path:
    """The shared daemon's socket for a data dir: under `$XDG_RUNTIME_DIR/contextd/`, else
    under the data dir; a path too long to bind moves to the temp dir."""
    resolved = data_dir.expanduser().resolve()
    name = f"daemon-{hashlib.sha256(str(resolved).encode()).hexdigest()[:12]}.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    path = Path(runtime) / "contextd" / name if runtime else resolved / "run" / name
    if len(str(path)) > MAX_SOCKET_PATH:
        path = Path(tempfile.gettempdir()) / f"contextd-{os.getuid()}" / name
    return path


@contextlib.contextmanager
def start_lock(path: Path) -> Iterator[None]:
    fd = open_private_file(path.with_suffix(".lock"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_daemon(data_dir: Path, *, log_level: str = "INFO", options: list[str] | None = None) -> Path:
    """The socket of a running shared daemon for `data_dir`, started when none answers;
    `options` are the `serve` options of the daemon it starts (`--grace`, `--settings`)."""
    from contextd.rpc.listen import (
        socket_in_use,  # the daemon's modules: not for socket_path's users
    )

    path = socket_path(data_dir)
    private_folder(path.parent)  # before anything is sent there
    if socket_in_use(path):
        return path
    with start_lock(path):
        if socket_in_use(path):  # another editor started it while we waited for the lock
            return path
        command = [
            sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "--log-level", log_level,
            "serve", "--socket", str(path), *(options or []),
        ]
        with os.fdopen(open_private_file(path.with_suffix(".log"), os.O_WRONLY | os.O_APPEND), "ab") as log_file:
            daemon = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file,
                start_new_session=True,  # it outlives the editor that started it
            )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not socket_in_use(path):
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(
                    f"contextd: the shared daemon did not start (see {path.with_suffix('.log')})"
                )
            time.sleep(0.05)
    return path


def daemon_options(args: argparse.Namespace) -> list[str]:
    """The options of `serve --shared` that the daemon it starts takes."""
    grace = args.grace if args.grace is not None else SHARED_GRACE_SECONDS
    options = ["--grace", str(grace)]
    options += ["--max-frame-bytes", str(args.max_frame_bytes)]
    options += ["--max-write-buffer-bytes", str(args.max_write_buffer_bytes)]
    options += ["--max-total-write-buffer-bytes", str(args.max_total_write_buffer_bytes)]
    if args.settings is not None:
        options += ["--settings", args.settings]
    return options


def forward_stdio(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    path = ensure_daemon(data_dir, log_level=args.log_level or "INFO", options=daemon_options(args))
    return asyncio.run(forward(path))


async def forward(path: Path) -> int:
    """Pump bytes both ways until the daemon closes our connection (after `exit`, or after
    stdin ended and the daemon saw it): 0 when it did so while still running, 1 when it
    went away (killed, crashed, stopped), so the editor shows the failure."""
    from contextd.rpc.listen import stdio_streams

    daemon_reader, daemon_writer = await asyncio.open_unix_connection(str(path))
    check_same_user(daemon_writer.get_extra_info("socket"), f"the daemon on {path}")
    editor_reader, editor_writer = await stdio_streams()

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, half_close: bool) -> None:
        while chunk := await reader.read(2**16):
            writer.write(chunk)
            await writer.drain()
        if half_close and writer.can_write_eof():
            writer.write_eof()

    upstream = asyncio.create_task(pump(editor_reader, daemon_writer, half_close=True))
    try:
        await pump(daemon_reader, editor_writer, half_close=False)
    except (ConnectionError, OSError):
        pass
    upstream.cancel()
    await asyncio.gather(upstream, return_exceptions=True)
    if await still_serving(path):
        return 0
    print(f"contextd: the shared daemon on {path} ended (see {path.with_suffix('.log')})", file=sys.stderr)
    return 1


PROBE = framed({"jsonrpc": "2.0", "id": 0, "method": "contextd/daemon/status"})


async def still_serving(path: Path) -> bool:
    """Whether the daemon on `path` still answers a request. A daemon being killed may still
    accept a connection (its listening socket is closed a moment after ours), but it never
    answers: the probe then reads the end of the stream, not a reply."""
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
    except OSError:
        return False
    try:
        writer.write(PROBE)
        return bool(await asyncio.wait_for(reader.read(1), START_TIMEOUT_SECONDS))
    except (OSError, TimeoutError):
        return False
    finally:
        writer.close()
