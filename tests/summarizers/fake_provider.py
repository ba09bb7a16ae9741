"""A scripted LLM provider on 127.0.0.1 for tests: speaks the Anthropic Messages API (with
its server-side compaction), the OpenAI chat completions API, the OpenAI Responses API's
compaction (`/responses/compact`) and contextd's remote summarizer protocol.

Replies are queued with `script(...)` and served in order, whatever the endpoint (but
Anthropic's token counting, which answers `input_tokens` from the attribute); a reply
made by `Reply.with_summary(text)` takes the response shape of the endpoint it answers, so one
script serves every provider. With the queue empty the server answers `default` (a 500
unless told otherwise). Every request is recorded in `requests`.

    provider = FakeProvider()
    provider.start()
    provider.script(Reply.error(429), Reply.with_summary("## Goal ..."))
    settings = SummarizerSettings(provider="anthropic", baseUrl=provider.url, ...)
    ...
    provider.stop()

Servers run in a background thread, so they work with any event loop and with a daemon
started as a subprocess.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
OPENAI_COMPACT_PATH = "/v1/responses/compact"
ANTHROPIC_COUNT_PATH = "/v1/messages/count_tokens"

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the class methods."""

    status: int = 200
    summary: str | None = None
    body: bytes | None = None
    content_type: str = "application/json"
    error_message: str = ""
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    compacts: bool = True
    """Whether a compaction request gets its compaction block or item."""

    @classmethod
    def with_summary(cls, text: str, *, delay: float = 0.0) -> Reply:
        """A successful answer holding `text`, shaped for whichever endpoint is asked."""
        return cls(summary=text, delay=delay)

    @classmethod
    def without_compaction(cls, text: str) -> Reply:
        """A successful answer that did not compact: Anthropic's plain text message (as for a
        conversation under the trigger), OpenAI's compacted output without its item."""
        return cls(summary=text, compacts=False)

    @classmethod
    def error(cls, status: int, message: str = "scripted failure", **headers: str) -> Reply:
        """An error in the provider's own error shape."""
        return cls(status=status, error_message=message, headers=dict(headers))

    @classmethod
    def raw(cls, body: bytes | str, *, status: int = 200, content_type: str = "application/json") -> Reply:
        """Exactly these bytes: for malformed or unexpected bodies."""
        data = body.encode() if isinstance(body, str) else body
        return cls(status=status, body=data, content_type=content_type)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Reply:
        """Hold the request for `seconds` (released early by `stop`), then answer a summary."""
        return cls(summary="(late answer)", delay=seconds)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def fake_encrypted(summary: str) -> str:
    """The `encrypted_content` the fake server gives a compaction holding `summary`."""
    return "gAAAAfake" + base64.urlsafe_b64encode(summary.encode()).decode()


def _asks_to_compact(request: Any) -> bool:
    edits = (request.get("context_management") or {}).get("edits") or []
    return any(isinstance(edit, dict) and edit.get("type") == "compact_20260112" for edit in edits)


def _anthropic_body(reply: Reply, request: Any) -> dict[str, Any]:
    if reply.status >= 400:
        kind = _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": reply.error_message}}
    if reply.compacts and _asks_to_compact(request):
        return {
            "id": "msg_fake_0002",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude-fake"),
            "content": [{"type": "compaction", "content": reply.summary, "encrypted_content": None}],
            "stop_reason": "compaction",
            "stop_sequence": None,
            "usage": {"input_tokens": 60_000, "output_tokens": 20},
        }
    return {
        "id": "msg_fake_0001",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "claude-fake"),
        "content": [{"type": "text", "text": reply.summary}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def _openai_body(reply: Reply, request: Any) -> dict[str, Any]:
    if reply.status >= 400:
        return {
            "error": {
                "message": reply.error_message,
                "type": "server_error" if reply.status >= 500 else "invalid_request_error",
                "param": None,
                "code": None,
            }
        }
    return {
        "id": "chatcmpl-fake0001",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.get("model", "gpt-fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.summary, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def _openai_compact_body(reply: Reply, request: Any) -> dict[str, Any]:
    if reply.status >= 400:
        return _openai_body(reply, request)
    inputs = request.get("input") if isinstance(request.get("input"), list) else []
    # The real API answers the user messages it was given, as output messages, then its item.
    output: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": f"msg_fake_{index}",
            "role": "user",
            "status": "completed",
            "content": (
                [{"type": "input_text", "text": item["content"]}]
                if isinstance(item.get("content"), str)
                else item.get("content")
            ),
        }
        for index, item in enumerate(inputs)
        if isinstance(item, dict) and item.get("role") == "user"
    ]
    if reply.compacts:
        output.append(
            {"type": "compaction", "id": "cmp_fake_0001", "encrypted_content": fake_encrypted(reply.summary or "")}
        )
    return {
        "id": "resp_fake_compact",
        "object": "response.compaction",
        "created_at": 1_700_000_000,
        "output": output,
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 120,
        },
    }


def _remote_body(reply: Reply, request: Any) -> dict[str, Any]:
    if reply.status >= 400:
        return {"error": reply.error_message}
    return {"summary": reply.summary}


def _shaped_body(path: str, reply: Reply, request: Any) -> dict[str, Any]:
    if path.endswith(ANTHROPIC_PATH):
        return _anthropic_body(reply, request)
    if path.endswith(OPENAI_PATH):
        return _openai_body(reply, request)
    if path.endswith(OPENAI_COMPACT_PATH):
        return _openai_compact_body(reply, request)
    return _remote_body(reply, request)


class FakeProvider:
    """A local HTTP server answering scripted replies; see the module docstring."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply.error(500, "fake provider: no scripted reply")
        self.input_tokens = 60_000
        """What Anthropic's token counting answers: enough for the API to compact."""
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, e.g. http://127.0.0.1:54321 (the Anthropic SDK's base_url)."""
        assert self._server is not None, "FakeProvider is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        """The base URL an OpenAI client takes (it appends /chat/completions, /responses/compact)."""
        return f"{self.url}/v1"

    @property
    def remote_url(self) -> str:
        return f"{self.url}/summarize"

    def start(self) -> FakeProvider:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not served yet."""
        with self._lock:
            return len(self._replies)

    async def wait_for_requests(self, count: int, timeout: float = 60.0) -> None:
        """Return once `count` requests have arrived (they may still be held). The deadline
        only stops a hung test: on a loaded machine the daemon takes seconds to import an
        SDK before its first request."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self.requests)} of {count} requests arrived")
            await asyncio.sleep(0.01)

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._replies.popleft() if self._replies else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                try:
                    request = json.loads(raw or b"null")
                except json.JSONDecodeError:
                    request = raw.decode(errors="replace")
                path = self.path.split("?", 1)[0]
                provider.requests.append(
                    RecordedRequest("POST", path, {k.lower(): v for k, v in self.headers.items()}, request)
                )
                if path == ANTHROPIC_COUNT_PATH:
                    self._answer(200, "application/json", json.dumps({"input_tokens": provider.input_tokens}).encode(), {})
                    return
                reply = provider._next_reply()
                if reply.delay and provider._stopping.wait(reply.delay):
                    return
                body = reply.body
                if body is None:
                    payload = request if isinstance(request, dict) else {}
                    body = json.dumps(_shaped_body(path, reply, payload)).encode()
                self._answer(reply.status, reply.content_type, body, reply.headers)

            def _answer(self, status: int, content_type: str, body: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", content_type)
                    self.send_header("content-length", str(len(body)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout or a cancellation): nothing to answer

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean; `requests` is the record

        return Handler
