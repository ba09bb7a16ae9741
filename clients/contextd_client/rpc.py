"""JSON-RPC 2.0 over the LSP base protocol (Content-Length framing) on asyncio streams.

Kept deliberately small and free of pygls: results stay plain dicts with the keys the
daemon sent, and a cancelled awaiting task tells the daemon with `$/cancelRequest`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

SESSION_LOCKED = -32003
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

NotificationHandler = Callable[[str, Any], None]
RequestHandler = Callable[[str, Any], Awaitable[Any]]


class ContextdError(Exception):
    """An error response from the daemon: `code`, `message` and the optional `data`."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class ConnectionLost(ConnectionError):
    """The daemon went away before it answered (it exited or the socket closed)."""


def encode_message(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next framed message, or None at a clean end of stream."""
    length: int | None = None
    while True:
        line = await reader.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None:
        raise ConnectionLost("a message arrived without a Content-Length header")
    body = await reader.readexactly(length)
    return json.loads(body)


class JsonRpcConnection:
    """One JSON-RPC peer: sends requests and notifications, dispatches what arrives."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_notification: NotificationHandler,
        on_request: RequestHandler,
        on_close: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_notification = on_notification
        self._on_request = on_request
        self._on_close = on_close
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._reader_task: asyncio.Task[None] | None = None
        self._closed_reason: str | None = None

    def start(self) -> None:
        self._reader_task = asyncio.create_task(self._read_loop(), name="contextd-rpc-reader")

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    @property
    def closed_reason(self) -> str | None:
        return self._closed_reason

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result; raises ContextdError on an error reply."""
        if self._closed_reason is not None:
            raise ConnectionLost(self._closed_reason)
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
            return await future
        except asyncio.CancelledError:
            # Cancelling the awaiting task also cancels `future`: only a result means answered.
            answered = future.done() and not future.cancelled()
            if not answered and self._closed_reason is None:
                await self._send_quietly(
                    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": request_id}}
                )
            raise
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def close(self) -> None:
        self._fail_pending("the connection was closed")
        if not self._writer.is_closing():
            self._writer.close()
        if self._reader_task is not None:
            self._reader_task.cancel()
            await asyncio.gather(self._reader_task, return_exceptions=True)

    async def wait_closed(self) -> None:
        if self._reader_task is not None:
            await asyncio.gather(self._reader_task, return_exceptions=True)

    async def _send(self, message: dict[str, Any]) -> None:
        if self._writer.is_closing():
            raise ConnectionLost(self._closed_reason or "the connection is closed")
        self._writer.write(encode_message(message))
        try:
            await self._writer.drain()
        except (ConnectionError, BrokenPipeError) as error:
            raise ConnectionLost(f"could not write to the daemon: {error}") from error

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        try:
            await self._send(message)
        except ConnectionLost:
            pass

    async def _read_loop(self) -> None:
        reason = "the daemon closed the connection"
        try:
            while (message := await read_message(self._reader)) is not None:
                self._dispatch(message)
        except asyncio.CancelledError:
            reason = "the connection was closed"
            raise
        except (asyncio.IncompleteReadError, ConnectionError, ValueError) as error:
            reason = f"the connection to the daemon broke: {error}"
        finally:
            self._fail_pending(reason)

    def _fail_pending(self, reason: str) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
            self._on_close(reason)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost(reason))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self._resolve(message)
        elif "id" in message:
            asyncio.create_task(self._answer(message["id"], message["method"], message.get("params")))
        else:
            try:
                self._on_notification(message["method"], message.get("params"))
            except Exception:  # a faulty handler must not kill the reader
                log.exception("notification handler for %s failed", message["method"])

    def _resolve(self, message: dict[str, Any]) -> None:
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        error = message.get("error")
        if error is not None:
            future.set_exception(
                ContextdError(error.get("code", INTERNAL_ERROR), error.get("message", ""), error.get("data"))
            )
        else:
            future.set_result(message.get("result"))

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        try:
            reply["result"] = await self._on_request(method, params)
        except ContextdError as error:
            reply["error"] = {"code": error.code, "message": error.message, "data": error.data}
        except Exception as error:  # the daemon must always get an answer
            log.exception("handling server request %s failed", method)
            reply["error"] = {"code": INTERNAL_ERROR, "message": str(error)}
        await self._send_quietly(reply)
