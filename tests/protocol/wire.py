"""A real `contextd serve` over real stdio, spoken to byte by byte: what a fuzzer or a
broken client would send, with every reply collected. `open_wire("shared", ...)` speaks
the same bytes through `contextd serve --shared` to the shared daemon's socket."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from contextd.rpc.framing import FrameReader
from contextd.rpc.messages import read_values

from tests.shared_daemon import shared_environment, stop_daemon

TRANSPORTS = ["stdio", "shared"]


def frame(message: Any) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class WireDaemon:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.address: str | None = None
        """The shared daemon's socket, when the wire goes through one."""
        self.replies: list[Any] = []
        self.notifications: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls, data_dir: Path, *args: str, env: dict[str, str] | None = None,
        capabilities: dict[str, Any] | None = None, settings: dict[str, Any] | None = None,
    ) -> WireDaemon:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "serve", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env, limit=2**24,
        )
        daemon = cls(process)
        initialize = {"capabilities": capabilities or {}, "initializationOptions": settings}
        await daemon.call("initialize", initialize, request_id="init")
        daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return daemon

    async def _read(self) -> None:
        assert self.process.stdout is not None
        frames = FrameReader(self.process.stdout)
        async for message in read_values(frames):
            if isinstance(message, dict) and "method" in message and "id" not in message:
                self.notifications.append(message)
            else:
                self.replies.append(message)
            self._arrived.set()

    def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    def send(self, message: Any) -> None:
        self.send_bytes(frame(message))

    async def drain(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.drain()

    def replies_to(self, request_id: Any) -> list[dict[str, Any]]:
        return [r for r in self.replies if isinstance(r, dict) and r.get("id") == request_id]

    async def wait_until(self, done: Any, timeout: float = 30) -> None:
        """Until `done()` holds; a daemon that never gets there fails the test after `timeout`."""
        async def waiting() -> None:
            while not done():
                self._arrived.clear()
                await self._arrived.wait()

        await asyncio.wait_for(waiting(), timeout)

    async def wait_until_true(self, done: Any, timeout: float = 60) -> None:
        """Until `done()` holds, for what no message announces (a line in the daemon's log)."""
        async def polling() -> None:
            while not done():
                await asyncio.sleep(0.05)

        await asyncio.wait_for(polling(), timeout)

    async def reply_to(self, request_id: Any, timeout: float = 30) -> dict[str, Any]:
        await self.wait_until(lambda: self.replies_to(request_id), timeout)
        return self.replies_to(request_id)[0]

    async def call(self, method: Any, params: Any = None, request_id: Any = None) -> dict[str, Any]:
        """Send one request (params left out when None) and return its whole reply."""
        request_id = request_id if request_id is not None else f"r{len(self.replies)}-{id(params)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        await self.drain()
        return await self.reply_to(request_id)

    async def result(self, method: str, params: Any = None) -> Any:
        reply = await self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
            self.send({"jsonrpc": "2.0", "method": "exit"})
            try:
                await self.drain()
            except ConnectionError:
                pass
        try:
            code = await asyncio.wait_for(self.process.wait(), 30)
        finally:
            if self.process.returncode is None:
                self.process.kill()
        self._reader.cancel()
        return code

    def daemon_log(self) -> str:
        """What the daemon logged so far: the shared daemon's log file (stdio: call stderr())."""
        assert self.address is not None
        return Path(self.address).with_suffix(".log").read_text(errors="replace")

    async def stderr(self) -> str:
        assert self.process.stderr is not None
        return (await self.process.stderr.read()).decode(errors="replace")


@asynccontextmanager
async def open_wire(
    transport: str, data_dir: Path, *args: str, capabilities: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
) -> AsyncIterator[WireDaemon]:
    """A daemon on stdio of its own, or the shared daemon (started for the test, on a runtime
    dir of its own, ended after it) through its forwarder; `args` are the daemon's options,
    `settings` its settings (the client's on stdio, the `--settings` file of a shared one)."""
    if transport == "stdio":
        wire = await WireDaemon.start(data_dir, *args, capabilities=capabilities, settings=settings)
        try:
            yield wire
        finally:
            await wire.stop()
        return
    with shared_environment() as env:
        if settings is not None:
            settings_file = Path(env["XDG_RUNTIME_DIR"]) / "settings.json"
            settings_file.write_text(json.dumps(settings))
            args = (*args, "--settings", str(settings_file))
        wire = await WireDaemon.start(data_dir, "--shared", *args, env=env, capabilities=capabilities)
        status = await wire.result("contextd/daemon/status", {})
        wire.address = status["address"]
        try:
            yield wire
        finally:
            await wire.stop()
            stop_daemon(status["pid"])
