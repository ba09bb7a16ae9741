"""One JSON-RPC peer: reads frames, checks envelopes, runs handlers, writes one reply per id.

The LSP lifecycle is enforced here for every connection alike: requests before
`initialize` get -32002, a second `initialize` and any request after `shutdown` get
-32600, `exit` (or the end of the stream) ends the connection. Every request is answered
exactly once, whatever it carried; a handler's unexpected failure is logged with its
traceback and answered -32603 without one.

Every task a connection starts is kept by it (the event loop holds tasks only weakly) and
cancelled when it closes. A peer that stops reading while replies and notifications pile
up is dropped once its unsent bytes pass `max_write_buffer_bytes`, so one stuck client
cannot grow a shared daemon's memory without limit; and the connections of one daemon share
a `WriteLimit`, so many stuck clients together cannot either.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from contextd.rpc.access import TcpToken
from contextd.rpc.framing import DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_WRITE_BUFFER_BYTES, FrameReader
from contextd.rpc.messages import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    SERVER_NOT_INITIALIZED,
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
    RpcError,
    classify,
    error_reply,
    framed,
    is_valid_id,
    read_values,
    reply,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

Handler = Callable[[Any, Any], Any]
"""`handler(connection, params)`: returns the result, or an awaitable of it. The connection
is typed Any because applications pass their own Connection subclass."""

current_connection: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "current_connection", default=None
)
"""The connection whose message is being handled (tasks and timers started there inherit it)."""


class ConnectionLost(Exception):
    """The peer went away before it answered our request."""


class WriteLimit:
    """The unsent bytes all connections of one daemon may leave behind together. Past it, the
    connection holding the most is dropped (a client that stopped reading, not one that is
    merely behind), then the next, until the rest fit: each within its own limit, twenty
    stuck clients would hold twenty times it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.connections: set[Connection] = set()

    def enforce(self) -> None:
        unsent = {connection: connection.unsent_bytes() for connection in self.connections}
        total = sum(unsent.values())
        while total > self.limit:
            largest = max(unsent, key=unsent.__getitem__)
            largest.drop(
                f"it held the most unread bytes, {unsent[largest]} of the {total} all connections "
                f"left (the daemon-wide limit is {self.limit})"
            )
            total -= unsent.pop(largest)


class Connection:
    """A JSON-RPC peer over a pair of streams."""

    _numbers = itertools.count(1)

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        requests: Mapping[str, Handler],
        notifications: Mapping[str, Handler],
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_write_buffer_bytes: int = DEFAULT_MAX_WRITE_BUFFER_BYTES,
        write_limit: WriteLimit | None = None,
        token: TcpToken | None = None,
        on_close: Callable[[Connection], None] = lambda connection: None,
    ) -> None:
        self.number = next(self._numbers)
        self._frames = FrameReader(reader, max_frame_bytes)
        self._writer = writer
        self._max_write_buffer_bytes = max_write_buffer_bytes
        self._write_limit = write_limit
        """Shared with the daemon's other connections; None: this one's own limit only."""
        if write_limit is not None:
            write_limit.connections.add(self)
        self._token = token
        self._refused = False
        """True once `initialize` came without the token: the connection ends after the reply."""
        self._requests = requests
        self._notifications = notifications
        self._on_close = on_close
        self._running: dict[RequestId, asyncio.Task[Any]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._request_ids = itertools.count(1)
        self._outgoing: list[bytes] = []
        """Messages sent in this turn of the loop, not written yet (`_flush`)."""
        self._reading: asyncio.Task[Any] | None = None
        self.initialized = False
        self.shut_down = False
        self.closed = False

    def __repr__(self) -> str:
        return f"<connection {self.number}>"

    # --- sending ----------------------------------------------------------------------

    def send(self, message: dict[str, Any] | list[dict[str, Any]]) -> None:
        """Send one message, in order, written with the others sent in the same turn of the
        event loop: an append's reply and its notifications go in one write, which wakes the
        peer once instead of once each. A message to a peer that left is dropped."""
        if self.closed or self._writer.is_closing():
            return
        if not self._outgoing:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outgoing.append(framed(message))

    def _flush(self) -> None:
        outgoing, self._outgoing = self._outgoing, []
        if not outgoing or self.closed or self._writer.is_closing():
            return
        self._writer.write(b"".join(outgoing))
        unsent = self.unsent_bytes()
        if unsent > self._max_write_buffer_bytes:
            self.drop(f"it left {unsent} bytes unread (the limit is {self._max_write_buffer_bytes})")
        elif unsent and self._write_limit is not None:
            # Only a write that leaves bytes behind can take the total past the limit.
            self._write_limit.enforce()

    def unsent_bytes(self) -> int:
        """What was written to the peer and is not sent yet: it is not reading."""
        return self._writer.transport.get_write_buffer_size()

    def drop(self, why: str) -> None:
        """End a connection that leaves too much unread, discarding what it left."""
        log.warning("%s: dropped: %s", self, why)
        self._writer.transport.abort()  # close() would wait to flush what it never reads
        self.close()

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> asyncio.Future[Any]:
        """Send a request to the peer; the future holds its result, RpcError or ConnectionLost."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.closed:
            future.set_exception(ConnectionLost(f"{self} is closed"))
            return future
        request_id = f"contextd-{next(self._request_ids)}"
        self._pending[request_id] = future
        future.add_done_callback(lambda _: self._pending.pop(request_id, None))
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return future

    def start_task(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run `coroutine` for this connection: kept until it ends, cancelled when it closes."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- reading ----------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the peer until `exit` or the end of its stream."""
        self._reading = asyncio.current_task()
        try:
            async for value in read_values(self._frames):
                self._take(value)
                await self._drain()
                if self.closed:
                    break
        except (ConnectionError, OSError) as error:
            log.debug("%s: the stream broke: %s", self, error)
        except asyncio.CancelledError:
            if not self.closed:  # cancelled from outside, not by our own close()
                raise
        finally:
            self.close()

    async def _drain(self) -> None:
        try:
            await self._writer.drain()
        except (ConnectionError, OSError):
            self.close()

    def _take(self, value: Any) -> None:
        if isinstance(value, Invalid):
            self._refuse(value)
        elif isinstance(value, list):
            self._take_batch(value)
        else:
            self._start(classify(value))

    def _take_batch(self, values: list[Any]) -> None:
        if not values:
            self._refuse(Invalid(None, RpcError(INVALID_REQUEST, "an empty batch")))
            return
        messages = [classify(value) for value in values]
        self.start_task(self._answer_batch(messages))

    async def _answer_batch(self, messages: list[Any]) -> None:
        """Members run one after the other, each a request of its own (it can be cancelled)."""
        replies = []
        for message in messages:
            if isinstance(message, Request):
                task = self._start_request(message, self._outcome(message))
                replies.append(await self._member_reply(message, task))
            else:
                replies.append(await self._outcome(message))
        answered = [item for item in replies if item is not None]
        if answered:
            self.send(answered)
        if self._refused:
            self.close()

    async def _member_reply(self, request: Request, task: asyncio.Task[Any] | None) -> Any:
        if task is None:
            return duplicate_reply(request.id)
        try:
            return await task
        except asyncio.CancelledError:
            if self.closed or not task.cancelled():
                raise  # the batch itself is being cancelled
            return cancelled_reply(request.id)  # cancelled before it began

    def _start(self, message: Any) -> None:
        """Each message runs as a task, started in arrival order: handlers that do not wait
        run to completion in that order, and a long one (a compaction) blocks nobody."""
        if isinstance(message, Invalid):
            self._refuse(message)
        elif isinstance(message, Response):
            self._resolve(message)
        elif isinstance(message, Notification):
            self.start_task(self._answer_one(message))
        else:
            task = self._start_request(message, self._answer_one(message))
            if task is None:
                self.send(duplicate_reply(message.id))
            else:
                task.add_done_callback(lambda _: self._answer_if_never_begun(message, task))

    def _answer_if_never_begun(self, request: Request, task: asyncio.Task[Any]) -> None:
        """A task cancelled before its first step never ran the code that answers it
        (`$/cancelRequest` can come that soon, for a member of a batch): answer it here."""
        if task.cancelled() and not self.closed:
            self.send(cancelled_reply(request.id))

    def _start_request(self, request: Request, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T] | None:
        """The task answering `request`, findable by its id while it runs; None (and the
        coroutine dropped) when a request with that id is still running: the peer could not
        tell the two replies apart, nor which one a `$/cancelRequest` meant."""
        if request.id in self._running:
            coroutine.close()
            return None
        task = self.start_task(coroutine)
        self._running[request.id] = task
        task.add_done_callback(lambda _: self._forget(request.id, task))
        return task

    def _forget(self, request_id: RequestId, task: asyncio.Task[Any]) -> None:
        if self._running.get(request_id) is task:
            del self._running[request_id]

    async def _answer_one(self, message: Request | Notification) -> None:
        outcome = await self._outcome(message)
        if outcome is not None:
            self.send(outcome)
        if self._refused:
            self.close()

    def _refuse(self, invalid: Invalid) -> None:
        log.debug("%s: refused: %s", self, invalid.error.message)
        self.send(error_reply(invalid.id, invalid.error))

    async def _outcome(self, message: Any) -> dict[str, Any] | None:
        """The reply to one message of a batch or not; None for notifications and responses."""
        if isinstance(message, Invalid):
            log.debug("%s: refused: %s", self, message.error.message)
            return error_reply(message.id, message.error)
        if isinstance(message, Response):
            self._resolve(message)
            return None
        if isinstance(message, Notification):
            await self._notified(message)
            return None
        try:
            result = await self._call(message)
        except RpcError as error:
            log.debug("%s: %s -> %d %s", self, message.method, error.code, error.message)
            return error_reply(message.id, error)
        except asyncio.CancelledError:
            if self.closed:
                raise
            return cancelled_reply(message.id)
        except Exception as error:
            log.exception("%s: %s failed", self, message.method)
            return error_reply(message.id, RpcError(INTERNAL_ERROR, f"internal error ({type(error).__name__})"))
        return reply(message.id, result)

    async def _call(self, request: Request) -> Any:
        if request.method == "initialize":
            if self.initialized:
                raise RpcError(INVALID_REQUEST, "initialize was already sent on this connection")
            self._authenticate(request.params)
        elif self.shut_down:
            raise RpcError(INVALID_REQUEST, "the server is shutting down: only exit is accepted")
        elif not self.initialized and request.method != "shutdown":
            # shutdown is let through: a client whose initialize failed can still end cleanly
            raise RpcError(SERVER_NOT_INITIALIZED, "initialize must come first")
        handler = self._requests.get(request.method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {request.method}")
        result = await self._invoke(handler, request.params)
        if request.method == "initialize":
            self.initialized = True
        elif request.method == "shutdown":
            self.shut_down = True
        return result

    def _authenticate(self, params: Any) -> None:
        """On TCP, nothing is served before an `initialize` that carries the token."""
        if self._token is None:
            return
        try:
            self._token.check(params)
        except RpcError:
            log.warning("%s: refused: initialize without the TCP token", self)
            self._refused = True
            raise

    async def _invoke(self, handler: Handler, params: Any) -> Any:
        token = current_connection.set(self)
        try:
            result = handler(self, params)
            if inspect.isawaitable(result):
                result = await result
            return result
        finally:
            current_connection.reset(token)

    async def _notified(self, notification: Notification) -> None:
        if notification.method == "exit":
            self.close()
            return
        if notification.method == "$/cancelRequest":
            self._cancel(notification.params)
            return
        handler = self._notifications.get(notification.method)
        if handler is None or not self.initialized or self.shut_down:
            log.debug("%s: notification %s ignored", self, notification.method)
            return
        try:
            await self._invoke(handler, notification.params)
        except RpcError as error:
            log.debug("%s: %s refused: %s", self, notification.method, error.message)
        except Exception:
            log.exception("%s: %s failed", self, notification.method)

    def _cancel(self, params: Any) -> None:
        request_id = params.get("id") if isinstance(params, dict) else None
        if not is_valid_id(request_id):
            log.debug("%s: $/cancelRequest without a usable id ignored", self)
            return
        task = self._running.get(request_id)
        if task is not None:
            task.cancel()

    def _resolve(self, response: Response) -> None:
        future = self._pending.get(response.id) if isinstance(response.id, str) else None
        if future is None or future.done():
            log.debug("%s: a response to no request of ours (id %r)", self, response.id)
            return
        if response.error is not None:
            future.set_exception(response.error)
        else:
            future.set_result(response.result)

    # --- closing ----------------------------------------------------------------------

    def close(self) -> None:
        """End the connection: its tasks are cancelled, then requests of ours still
        unanswered fail with ConnectionLost (on the next turn of the loop, so a task of ours
        waiting for one sees its cancellation first: `wait_for` would give it the error)."""
        if self.closed:
            return
        self._flush()  # what was sent before it closed still goes, as before the close
        if self.closed:
            return  # that was too much: the flush dropped it, which closed it
        self.closed = True
        if self._write_limit is not None:
            self._write_limit.connections.discard(self)
        try:
            self._writer.close()
        except (ConnectionError, OSError, RuntimeError):
            pass
        if self._reading is not None and self._reading is not asyncio.current_task():
            self._reading.cancel()  # it may be waiting for input that will never come
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        asyncio.get_running_loop().call_soon(self._fail_pending)
        self._on_close(self)

    def _fail_pending(self) -> None:
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(ConnectionLost(f"{self} closed"))


def cancelled_reply(request_id: RequestId) -> dict[str, Any]:
    return error_reply(request_id, RpcError(REQUEST_CANCELLED, "request cancelled"))


def duplicate_reply(request_id: RequestId) -> dict[str, Any]:
    return error_reply(
        request_id,
        RpcError(INVALID_REQUEST, f"a request with id {request_id!r} is still running on this connection"),
    )
