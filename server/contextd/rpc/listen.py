"""Where a daemon listens: stdio (one client), or TCP / a Unix socket (many clients).

A daemon that listens on a socket serves every connection as its own peer, and stops on
its own once no connection has been attached for its grace period (when it has one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
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
    stopped = asyncio.Event()
    grace: asyncio.TimerHandle | None = None
    loop = asyncio.get_running_loop()

    def arm_grace() -> None:
        nonlocal grace
        if grace_seconds is not None and not daemon.connections:
            if grace is not None:
                grace.cancel()
            grace = loop.call_later(grace_seconds, stop_if_idle)

    def stop_if_idle() -> None:
        if not daemon.connections:
            log.info("no client for %gs: stopping", grace_seconds)
            stopped.set()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal grace
        try:
            check_same_user(writer.get_extra_info("socket"), "a client")
        except AccessRefused as refused:
            log.warning("connection refused: %s", refused)
            writer.transport.abort()
            return
        if grace is not None:
            grace.cancel()
            grace = None
        await daemon.attach(reader, writer).run()

    daemon.on_idle = arm_grace
    daemon.build_tokenizer()  # before the first client can be kept waiting by it
    if unix_path is not None:
        previous = os.umask(0o177)  # the socket is 0600 from the start, not after a chmod
        try:
            server = await asyncio.start_unix_server(on_connect, path=str(unix_path), limit=STREAM_LIMIT)
        finally:
            os.umask(previous)
        daemon.address = str(unix_path)
    else:
        assert tcp is not None
        # Bound first (the port is then ours, and so is its token file), serving only once
        # the token is set: no connection is ever attached without it.
        server = await asyncio.start_server(on_connect, tcp[0], tcp[1], limit=STREAM_LIMIT, start_serving=False)
        daemon.token = write_tcp_token(tcp[1])
        await server.start_serving()
        host, port = server.sockets[0].getsockname()[:2]
        daemon.address = f"{host}:{port}"
        log.info("the token for TCP clients is in %s", daemon.token.path)
    log.info("contextd listening on %s (pid %d)", daemon.address, os.getpid())
    arm_grace()
    try:
        with stop_on_signals():
            await stopped.wait()
    except asyncio.CancelledError:
        pass
    finally:
        server.close()
        for connection in list(daemon.connections):
            connection.close()
        daemon.close_sessions()
        for left in (unix_path, daemon.token.path if daemon.token else None):
            if left is not None:
                with contextlib.suppress(FileNotFoundError):
                    left.unlink()
    return 0


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
