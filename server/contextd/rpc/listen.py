"""Where a daemon listens: stdio (one client), or TCP / a Unix socket (many clients).

A daemon that listens on a socket serves every connection as its own peer, and stops on
its own once no connection has been attached for its grace period (when it has one).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from contextd.rpc.access import AccessRefused, check_same_user, write_tcp_token
from contextd.rpc.daemon import Daemon

log = logging.getLogger(__name__)

STREAM_LIMIT = 2**20


async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin and stdout as asyncio streams; from now on `print` writes to stderr, because
    nothing else may write to the protocol channel."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout = sys.stderr
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop), stdout  # type: ignore[attr-defined]
    )
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def serve_stdio(daemon: Daemon) -> int:
    """One client on stdin/stdout; the process ends with it (0 after a shutdown, else 1)."""
    reader, writer = await stdio_streams()
    connection = daemon.attach(reader, writer)
    try:
        with stop_on_signals():
            await connection.run()
    except asyncio.CancelledError:
        pass
    daemon.close_sessions()
    return 0 if connection.shut_down else 1


@contextlib.contextmanager
def stop_on_signals():  # type: ignore[no-untyped-def]
    """SIGTERM/SIGINT end the serving task, so sessions are closed in order."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, task.cancel)
    try:
        yield
    finally:
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(number)


async def serve_sockets(
    daemon: Daemon,
    *,
    tcp: tuple[str, int] | None = None,
    unix_path: Path | None = None,
    grace_seconds: float | None = None,
) -> int:
    """Serve every connection on a TCP port or a Unix socket until a signal, or until no
    client has been connected for `grace_seconds`."""
    grace = GracePeriod(daemon, grace_seconds)
    on_connect = functools.partial(serve_client, daemon, grace)
    daemon.on_idle = grace.arm
    daemon.build_tokenizer()  # before the first client can be kept waiting by it
    if unix_path is not None:
        server = await listen_on_unix_socket(daemon, on_connect, unix_path)
    else:
        assert tcp is not None
        server = await listen_on_tcp(daemon, on_connect, tcp)
    log.info("contextd listening on %s (pid %d)", daemon.address, os.getpid())
    grace.arm()
    try:
        with stop_on_signals():
            await grace.over.wait()
    except asyncio.CancelledError:
        pass
    finally:
        stop_serving(daemon, server, unix_path)
    return 0


class GracePeriod:
    """How long a socket daemon waits for a client once none is connected (forever when
    `seconds` is None); `over` is set when that time passed with no client."""

    def __init__(self, daemon: Daemon, seconds: float | None) -> None:
        self.over = asyncio.Event()
        self._daemon = daemon
        self._seconds = seconds
        self._timer: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        if self._seconds is not None and not self._daemon.connections:
            self.disarm()
            self._timer = asyncio.get_running_loop().call_later(self._seconds, self._end_if_idle)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _end_if_idle(self) -> None:
        if not self._daemon.connections:
            log.info("no client for %gs: stopping", self._seconds)
            self.over.set()


async def serve_client(
    daemon: Daemon, grace: GracePeriod, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """One connection, served until it ends; a process of another user is refused."""
    try:
        check_same_user(writer.get_extra_info("socket"), "a client")
    except AccessRefused as refused:
        log.warning("connection refused: %s", refused)
        writer.transport.abort()
        return
    grace.disarm()
    await daemon.attach(reader, writer).run()


ClientHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def listen_on_unix_socket(daemon: Daemon, on_connect: ClientHandler, path: Path) -> asyncio.Server:
    previous = os.umask(0o177)  # the socket is 0600 from the start, not after a chmod
    try:
        server = await asyncio.start_unix_server(on_connect, path=str(path), limit=STREAM_LIMIT)
    finally:
        os.umask(previous)
    daemon.address = str(path)
    return server


async def listen_on_tcp(daemon: Daemon, on_connect: ClientHandler, tcp: tuple[str, int]) -> asyncio.Server:
    # Bound first (the port is then ours, and so is its token file), serving only once the
    # token is set: no connection is ever attached without it.
    server = await asyncio.start_server(on_connect, tcp[0], tcp[1], limit=STREAM_LIMIT, start_serving=False)
    daemon.token = write_tcp_token(tcp[1])
    await server.start_serving()
    host, port = server.sockets[0].getsockname()[:2]
    daemon.address = f"{host}:{port}"
    log.info("the token for TCP clients is in %s", daemon.token.path)
    return server


def stop_serving(daemon: Daemon, server: asyncio.Server, unix_path: Path | None) -> None:
    """No new connections, every client let go, sessions closed, and the socket and token
    files removed."""
    server.close()
    for connection in list(daemon.connections):
        connection.close()
    daemon.close_sessions()
    for left in (unix_path, daemon.token.path if daemon.token else None):
        if left is not None:
            with contextlib.suppress(FileNotFoundError):
                left.unlink()


def socket_in_use(path: Path) -> bool:
    """True when a daemon answers on `path` (a leftover file of a dead one does not)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()
