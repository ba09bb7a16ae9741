"""JSON-RPC 2.0 envelopes: what a frame holds, checked before anything is dispatched.

Bodies are parsed with the plain `json` module and nothing else: the content of a message
(tool-call arguments with a `"jsonrpc"` key, say) is data, never mistaken for a message.
The daemon's connections and the Python client read and write messages through this
module alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeGuard

from contextd.rpc.framing import FrameReader, FramingError, encode_frame

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
UNAUTHORIZED = -32020
"""A TCP connection whose `initialize` lacks the daemon's token (the connection then ends)."""

RequestId = int | str


class RpcError(Exception):
    """An error reply: `code`, a message safe to show, optional `data` (never a traceback)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: Any  # None when absent


@dataclass(frozen=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True)
class Response:
    """The peer's answer to a request of ours."""

    id: RequestId | None
    result: Any
    error: RpcError | None


@dataclass(frozen=True)
class Invalid:
    """Not a message: answered with `error` under `id` (null when it could not be read)."""

    id: RequestId | None
    error: RpcError


Message = Request | Notification | Response | Invalid


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_body(body: bytes) -> Any | Invalid:
    """The JSON value of a frame, or the -32700 reply to send."""
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        return Invalid(id_of_unparsable(body), RpcError(PARSE_ERROR, "JSON nested too deeply to parse"))
    except (UnicodeDecodeError, ValueError) as error:
        return Invalid(None, RpcError(PARSE_ERROR, f"parse error: {reason_of(error)}"))


def reason_of(error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "the body is not UTF-8"
    return str(error)


LEADING_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"[^"]*"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*[,}]')


def id_of_unparsable(body: bytes) -> RequestId | None:
    """The id of a body too deep to parse, when it leads the object (as every client writes
    it), so that even that request gets its reply; else null."""
    found = LEADING_ID.match(body[:512])
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, (int, str)) else None


def is_valid_id(value: Any) -> TypeGuard[RequestId]:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def classify(value: Any) -> Message:
    """One JSON value (not a batch) as a message, or the reason it is not one."""
    if not isinstance(value, dict):
        return Invalid(None, RpcError(INVALID_REQUEST, "a message must be a JSON object"))
    has_id = "id" in value
    raw_id = value.get("id")
    if has_id and raw_id is not None and not is_valid_id(raw_id):
        return Invalid(None, RpcError(INVALID_REQUEST, "id must be a string or an integer"))
    request_id: RequestId | None = raw_id
    if value.get("jsonrpc") != "2.0":
        return Invalid(request_id, RpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"'))
    if "method" not in value:
        if not has_id or ("result" in value) == ("error" in value):
            return Invalid(request_id, RpcError(INVALID_REQUEST, "neither a request nor a response"))
        return Response(request_id, value.get("result"), error_of(value["error"]) if "error" in value else None)
    method = value["method"]
    if not isinstance(method, str):
        return Invalid(request_id, RpcError(INVALID_REQUEST, "method must be a string"))
    if has_id and request_id is None:
        return Invalid(None, RpcError(INVALID_REQUEST, "a request id must not be null"))
    params = value.get("params")
    if has_id:
        assert request_id is not None
        return Request(request_id, method, params)
    return Notification(method, params)


def error_of(body: Any) -> RpcError:
    """The error a response's `error` member carries (one that is not an object still is one)."""
    if not isinstance(body, dict):
        return RpcError(INTERNAL_ERROR, f"an error reply without an error object: {body!r:.200}")
    code = body.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        code = INTERNAL_ERROR
    return RpcError(code, str(body.get("message", "")), body.get("data"))


def reply(request_id: RequestId | None, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_reply(request_id: RequestId | None, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.body()}


def encode(message: Any) -> bytes:
    """ASCII escapes: any string (even a lone surrogate a client sent) goes out as valid JSON.
    A result or params given as a model (contextd.results) is sent as `to_wire` has it."""
    return json.dumps(message, separators=(",", ":"), default=_wire_form).encode("ascii")


def _wire_form(value: Any) -> Any:
    if hasattr(value, "__pydantic_serializer__"):  # a model: only the daemon sends them
        return _to_wire()(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


@cache
def _to_wire() -> Callable[[Any], Any]:
    """`contextd.results.to_wire`, imported at the first model sent (the client never sends
    one), and not again at each: importing it per message cost half of encoding a small one."""
    from contextd.results import to_wire

    return to_wire


def framed(message: Any) -> bytes:
    """A message as it goes on the wire."""
    return encode_frame(encode(message))


async def read_values(frames: FrameReader) -> AsyncIterator[Any | Invalid]:
    """The JSON value of each frame (a message, or a batch of them; `null` too, which a peer
    may send and must be answered) until the stream ends; Invalid, the -32700 reply to send,
    for a frame that holds none, the reader then set to find the next frame after it."""
    while (frame := await frames.next_frame()) is not None:
        if isinstance(frame, FramingError):
            yield Invalid(None, RpcError(PARSE_ERROR, frame.message))
            continue
        value = parse_body(frame)
        if isinstance(value, Invalid):
            frames.recover_from(frame)
        yield value
