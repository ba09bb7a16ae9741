"""SIGKILL in the middle of a burst of appends loses no acknowledged entry."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

from contextd.model import Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from tests.factories import coding_turn


class RawConnection:
    """The bare wire: Content-Length frames to and from a daemon we are about to kill."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while True:
            line = await self.process.stdout.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(await self.process.stdout.readexactly(length))

    async def response(self, request_id: int) -> dict[str, Any]:
        while True:
            message = await self.receive()
            if message.get("id") == request_id:
                return message



async def test_sigkill_mid_burst_keeps_every_acknowledged_entry(tmp_path: Path):
    data_dir = tmp_path / "data"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "serve",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    wire = RawConnection(process)
    wire.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}})
    await wire.response(0)
    wire.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    wire.send({"jsonrpc": "2.0", "id": 1, "method": "contextd/session/open", "params": {"workspace": "/ws"}})
    session_id = (await wire.response(1))["result"]["sessionId"]

    burst = 600
    for turn in range(burst):
        wire.send({
            "jsonrpc": "2.0", "id": 100 + turn, "method": "contextd/session/append",
            "params": {"sessionId": session_id, "messages": coding_turn(turn, body_words=50)},
        })
    acknowledged: list[str] = []
    while len(acknowledged) < 6 * 40:  # kill once 40 turns are acknowledged, with more in flight
        message = await wire.receive()
        if "result" in message and "entryIds" in message["result"]:
            acknowledged += message["result"]["entryIds"]
    process.send_signal(signal.SIGKILL)
    await process.wait()

    reloaded = SessionManager(Store(data_dir), Settings(), SilentEvents()).get(session_id)
    assert set(acknowledged) <= set(reloaded.tree.entries)
    assert len(reloaded.tree.entries) < 6 * burst + 1, "the kill should land mid-burst"
    # What loads is a consistent session: every entry's parent is there.
    for entry in reloaded.tree.entries.values():
        assert entry.parentId is None or entry.parentId in reloaded.tree.entries
