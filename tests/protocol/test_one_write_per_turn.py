"""The messages a connection sends in one turn of the event loop (an append's reply and its
notifications) go out in one write, in the order they were sent, and what was sent before
the connection closed still reaches the peer."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from contextd.rpc.connection import Connection


@asynccontextmanager
async def connection_and_peer() -> AsyncIterator[tuple[Connection, list[bytes], socket.socket]]:
    """A connection over one end of a socket pair, the writes it makes, and the peer's end."""
    ours, peer = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    writes: list[bytes] = []
    write = writer.write

    def recording(data: bytes) -> None:
        writes.append(data)
        write(data)

    writer.write = recording  # type: ignore[method-assign]
    connection = Connection(reader, writer, {}, {})
    try:
        yield connection, writes, peer
    finally:
        connection.close()
        peer.close()


def frames(data: bytes) -> list[Any]:
    """The messages in `data`, a run of Content-Length frames."""
    found = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        found.append(json.loads(rest[:length]))
        data = rest[length:]
    return found


def received(peer: socket.socket) -> bytes:
    peer.settimeout(30)
    data = b""
    while chunk := peer.recv(65536):
        data += chunk
    return data


async def test_a_reply_and_its_notifications_go_in_one_write_in_order():
    async with connection_and_peer() as (connection, writes, _):
        connection.notify("contextd/sessionChanged", {"n": 1})
        connection.notify("contextd/tokenUsage", {"n": 2})
        connection.send({"jsonrpc": "2.0", "id": 7, "result": {"n": 3}})
        await asyncio.sleep(0)  # the end of this turn of the loop
        connection.notify("contextd/workspace/activity", {"n": 4})
        await asyncio.sleep(0)
    assert [[message.get("params", message.get("result")) for message in frames(data)] for data in writes] == [
        [{"n": 1}, {"n": 2}, {"n": 3}],
        [{"n": 4}],
    ]


async def test_what_was_sent_before_the_connection_closed_reaches_the_peer():
    async with connection_and_peer() as (connection, _, peer):
        connection.send({"jsonrpc": "2.0", "id": 1, "result": None})
        connection.notify("contextd/sessionChanged", {"cause": "deleted"})
        connection.close()
        connection.notify("contextd/tokenUsage", {"after": "close"})  # dropped: it has closed
        data = await asyncio.get_running_loop().run_in_executor(None, received, peer)
    assert frames(data) == [
        {"jsonrpc": "2.0", "id": 1, "result": None},
        {"jsonrpc": "2.0", "method": "contextd/sessionChanged", "params": {"cause": "deleted"}},
    ]
