"""JSON-RPC 2.0 over the LSP base protocol (Content-Length framing) on asyncio streams.

Kept deliberately small and free of pygls: results stay plain dicts with the keys the
daemon sent, and a cancelled awaiting task tells the daemon with `$/cancelRequest`. Frames
and envelopes are read and written by the daemon's own code (contextd.rpc), so both ends
agree on the wire and the client has the daemon's limits on what it reads.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from contextd.rpc.framing import DEFAULT_MAX_WRITE_BUFFER_BYTES, FrameReader
from contextd.rpc.messages import (
    INTERNAL_ERROR,
    Invalid,
    Request,
    Response,
    RpcError,
    classify,
    error_reply,
    framed,
    read_values,
    reply,
)

log = logging.getLogger(__name__)

SESSION_LOCKED = -32003
MAX_MESSAGE_BYTES = DEFAULT_MAX_WRITE_BUFFER_BYTES
"""The largest message read from the daemon: it drops a peer before leaving more unsent."""

NotificationHandler = Callable[[str, Any], None]
RequestHandler = Callable[[str, Any], Awaitable[Any]]


class ContextdError(RpcError):
    """An error response from the daemon: `code`, `message` and the optional `data`."""

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"


class ConnectionLost(ConnectionError):
    """The daemon went away before it answered (it exited or the socket closed)."""


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
        self._frames = FrameReader(reader, MAX_MESSAGE_BYTES)
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
        self._writer.write(framed(message))
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
            async for value in read_values(self._frames):
                self._dispatch(value)
        except asyncio.CancelledError:
            reason = "the connection was closed"
            raise
        except ConnectionError as error:
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

    def _dispatch(self, value: Any) -> None:
        """One message from the daemon; one that is not a message means the daemon (or the
        stream) is broken: the connection ends, failing what waits, rather than leave a
        request waiting for a reply it will never read."""
        message = value if isinstance(value, Invalid) else classify(value)
        if isinstance(message, Invalid):
            raise ConnectionLost(f"the daemon sent what is not a message: {message.error.message}")
        if isinstance(message, Response):
            self._resolve(message)
        elif isinstance(message, Request):
            asyncio.create_task(self._answer(message))
        else:
            try:
                self._on_notification(message.method, message.params)
            except Exception:  # a faulty handler must not kill the reader
                log.exception("notification handler for %s failed", message.method)

    def _resolve(self, response: Response) -> None:
        future = self._pending.get(response.id)  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if response.error is not None:
            error = response.error
            future.set_exception(ContextdError(error.code, error.message, error.data))
        else:
            future.set_result(response.result)

    async def _answer(self, request: Request) -> None:
        try:
            answer = reply(request.id, await self._on_request(request.method, request.params))
        except RpcError as error:
            answer = error_reply(request.id, error)
        except Exception as error:  # the daemon must always get an answer
            log.exception("handling server request %s failed", request.method)
            answer = error_reply(request.id, RpcError(INTERNAL_ERROR, str(error)))
        await self._send_quietly(answer)
