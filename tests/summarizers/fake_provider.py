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

It validates like the real APIs (tests/summarizers/api_rules.py): a request body the SDKs'
param types or the APIs' rules refuse (unsigned thinking, empty text, a tool id outside the
pattern, a tool result answering no call, an unknown field), a compaction item replayed to a
model other than the one that made it, or, with `key` set, a request without that key in the
header the SDK sends it in gets the 400 or 401 the real API answers, and no scripted reply is
used up. Anthropic's model endpoint answers from `models` (its input limit and whether it
takes on-demand compaction), and a compaction reports its own usage under `usage.iterations`.

Servers run in a background thread, so they work with any event loop and with a daemon
started as a subprocess.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.summarizers.api_rules import (
    anthropic_message_problems,
    anthropic_problems,
    openai_chat_problems,
    openai_compact_problems,
    sdk_problems,
)

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
OPENAI_COMPACT_PATH = "/v1/responses/compact"
ANTHROPIC_COUNT_PATH = "/v1/messages/count_tokens"
ANTHROPIC_MODELS_PATH = "/v1/models/"

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
    truncated: bool = False
    """Whether the answer stopped at `max_tokens` (Anthropic) or its `length` (OpenAI)."""

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
    def cut_short(cls, text: str) -> Reply:
        """An answer the output limit cut: `stop_reason: max_tokens`, `finish_reason: length`."""
        return cls(summary=text, truncated=True)

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
        """Hold the request for `seconds`, then answer a summary; released early by `stop`,
        or by the client closing the connection (counted in `hung_up`)."""
        return cls(summary="(late answer)", delay=seconds)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


FAKE_ENCRYPTED_PREFIX = "gAAAAfake"


def fake_encrypted(summary: str, model: str) -> str:
    """The `encrypted_content` the fake server gives a compaction of `summary` by `model`."""
    return FAKE_ENCRYPTED_PREFIX + base64.urlsafe_b64encode(json.dumps([model, summary]).encode()).decode()


def _maker_of(encrypted: object) -> str | None:
    """The model that made a compaction item of this server's (None for anyone else's)."""
    if not isinstance(encrypted, str) or not encrypted.startswith(FAKE_ENCRYPTED_PREFIX):
        return None
    model, _ = json.loads(base64.urlsafe_b64decode(encrypted[len(FAKE_ENCRYPTED_PREFIX):]))
    return str(model)


def _asks_to_compact(request: Any) -> bool:
    if isinstance(request.get("compaction"), dict):
        return True
    edits = (request.get("context_management") or {}).get("edits") or []
    return any(isinstance(edit, dict) and edit.get("type") == "compact_20260112" for edit in edits)


def _compaction_usage(request: Any) -> dict[str, Any]:
    """Anthropic reports a compaction's own tokens under `usage.iterations`, not in the
    top-level fields (which count the sampling that followed, none when it paused)."""
    compaction = {
        "type": "compaction",
        "input_tokens": 60_000,
        "output_tokens": 900,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    return {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "iterations": [compaction],
    }


def _anthropic_body(reply: Reply, request: Any) -> dict[str, Any]:
    if reply.status >= 400:
        kind = _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": reply.error_message}}
    if reply.compacts and _asks_to_compact(request):
        block = {"type": "compaction", "content": reply.summary, "encrypted_content": None, "signature": "sig-fake"}
        return {
            "id": "msg_fake_0002",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude-fake"),
            "content": [block],
            "stop_reason": "compaction",
            "stop_sequence": None,
            "usage": _compaction_usage(request),
        }
    return {
        "id": "msg_fake_0001",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "claude-fake"),
        "content": [{"type": "text", "text": reply.summary}],
        "stop_reason": "max_tokens" if reply.truncated else "end_turn",
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
                "finish_reason": "length" if reply.truncated else "stop",
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
            {
                "type": "compaction",
                "id": "cmp_fake_0001",
                "encrypted_content": fake_encrypted(reply.summary or "", str(request.get("model"))),
            }
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
    if path.startswith((ANTHROPIC_PATH, ANTHROPIC_MODELS_PATH)):
        return _anthropic_body(reply, request)
    if path.endswith(OPENAI_PATH):
        return _openai_body(reply, request)
    if path.endswith(OPENAI_COMPACT_PATH):
        return _openai_compact_body(reply, request)
    return _remote_body(reply, request)


def request_problems(path: str, headers: dict[str, str], body: Any) -> list[str]:
    """What the real API would refuse in this request's body."""
    if path == ANTHROPIC_PATH:
        beta = headers.get("anthropic-beta")
        return anthropic_problems(body, None if beta is None else frozenset(b.strip() for b in beta.split(",")))
    if path == ANTHROPIC_COUNT_PATH:
        messages = body.get("messages") if isinstance(body, dict) else None
        return sdk_problems("anthropic-count", body) + anthropic_message_problems(messages if isinstance(messages, list) else [])
    if path == OPENAI_PATH:
        return openai_chat_problems(body)
    if path == OPENAI_COMPACT_PATH:
        return openai_compact_problems(body) + _replay_problems(body)
    return []


def _replay_problems(body: Any) -> list[str]:
    """OpenAI decrypts a compaction item for the model that made it only."""
    model = body.get("model") if isinstance(body, dict) else None
    items = body.get("input") if isinstance(body, dict) else None
    return [
        f"invalid_encrypted_content: input.{index} was made by another model than {model}"
        for index, item in enumerate(items if isinstance(items, list) else [])
        if isinstance(item, dict) and _maker_of(item.get("encrypted_content")) not in (None, model)
    ]


def _model_info(model: str, known: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's `GET /v1/models/{id}` answer (the fields contextd reads, and the required ones)."""
    supported = {"supported": True}
    compaction = {"supported": bool(known.get("summarize")), "summarize": {"supported": bool(known.get("summarize"))}}
    return {
        "type": "model",
        "id": model,
        "display_name": model,
        "created_at": "2026-01-01T00:00:00Z",
        "lifecycle": "active",
        "max_input_tokens": known.get("max_input_tokens"),
        "max_tokens": 64_000,
        "capabilities": {
            "batch": supported,
            "citations": supported,
            "code_execution": supported,
            "compaction": compaction,
            "context_management": {"supported": True},
            "effort": {"supported": True},
            "image_input": supported,
            "pdf_input": supported,
            "server_tools": {"supported": True},
            "structured_outputs": supported,
            "thinking": {"supported": True},
        },
    }


async def _wait(done: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:g}s for {what}")
        await asyncio.sleep(0.01)


def calls(provider: FakeProvider) -> list[RecordedRequest]:
    """The requests that ask for a summary (Anthropic's free model description and token
    counting left out)."""
    return [sent for sent in provider.requests if sent.method == "POST" and sent.path != ANTHROPIC_COUNT_PATH]


class DeadlinesPassingOnceHeld:
    """The chain's deadline of each attempt, passing the moment the provider holds that
    attempt's request instead of after its seconds (on a loaded machine 0.3 s can pass
    before the SDK's request even arrives). The offline summarizer never enters one.
    `given` is the seconds each attempt was given."""

    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider
        self.given: list[float] = []

    @contextlib.asynccontextmanager
    async def __call__(self, seconds: float) -> AsyncIterator[None]:
        self.given.append(seconds)
        held = len(calls(self.provider)) + 1
        async with asyncio.timeout(None) as timer:
            watcher = asyncio.create_task(self.pass_once(held, timer))
            try:
                yield
            finally:
                watcher.cancel()

    async def pass_once(self, held: int, timer: asyncio.Timeout) -> None:
        while len(calls(self.provider)) < held:
            await asyncio.sleep(0.01)
        timer.reschedule(asyncio.get_running_loop().time())


def spent_deadline(seconds: float) -> asyncio.Timeout:
    """The chain's deadline of an attempt, run out before the attempt begins."""
    return asyncio.timeout(0)


class FakeProvider:
    """A local HTTP server answering scripted replies; see the module docstring."""

    def __init__(self, default: Reply | None = None, *, key: str | None = None) -> None:
        self.default = default or Reply.error(500, "fake provider: no scripted reply")
        self.key = key
        """The key Anthropic's and OpenAI's endpoints require (None: a server that needs none)."""
        self.input_tokens = 60_000
        """What Anthropic's token counting answers: enough for the API to compact."""
        self.models: dict[str, dict[str, Any]] = {}
        """Anthropic's model endpoint: model id -> `{"max_input_tokens", "summarize"}` (whether
        it takes on-demand compaction); a model not listed is a 404, as behind a proxy."""
        self.requests: list[RecordedRequest] = []
        self.hung_up = 0
        """Requests the client gave up on while they were held: it closed the connection."""
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
        await _wait(lambda: len(self.requests) >= count, timeout, f"{count} requests to arrive")

    async def wait_for_hang_ups(self, count: int, timeout: float = 60.0) -> None:
        """Return once the client has given up on `count` held requests."""
        await _wait(lambda: self.hung_up >= count, timeout, f"the client to give up on {count} held requests")

    def _refusal(self, path: str, headers: dict[str, str], body: Any) -> Reply | None:
        """The error the real API would answer this request with, or None."""
        vendor_paths = (ANTHROPIC_PATH, ANTHROPIC_COUNT_PATH, OPENAI_PATH, OPENAI_COMPACT_PATH)
        if self.key is not None and (path in vendor_paths or path.startswith(ANTHROPIC_MODELS_PATH)):
            sent = {headers.get("authorization", ""), "Bearer " + headers.get("x-api-key", "")}
            if f"Bearer {self.key}" not in sent:
                return Reply.error(401, "invalid authentication: no valid key in the authorization header")
        problems = request_problems(path, headers, body)
        return Reply.error(400, "; ".join(problems)) if problems else None

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
                headers = {k.lower(): v for k, v in self.headers.items()}
                provider.requests.append(RecordedRequest("POST", path, headers, request))
                if (refusal := provider._refusal(path, headers, request)) is not None:
                    self._answer(refusal.status, "application/json", json.dumps(_shaped_body(path, refusal, {})).encode(), {})
                    return
                if path == ANTHROPIC_COUNT_PATH:
                    self._answer(200, "application/json", json.dumps({"input_tokens": provider.input_tokens}).encode(), {})
                    return
                reply = provider._next_reply()
                if reply.delay and not self._held(reply.delay):
                    return
                body = reply.body
                if body is None:
                    payload = request if isinstance(request, dict) else {}
                    body = json.dumps(_shaped_body(path, reply, payload)).encode()
                self._answer(reply.status, reply.content_type, body, reply.headers)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                headers = {k.lower(): v for k, v in self.headers.items()}
                provider.requests.append(RecordedRequest("GET", path, headers, None))
                refusal = provider._refusal(path, headers, None)
                model = path.removeprefix(ANTHROPIC_MODELS_PATH)
                known = provider.models.get(model) if path.startswith(ANTHROPIC_MODELS_PATH) else None
                if refusal is None and known is None:
                    refusal = Reply.error(404, f"model: {model}")
                if refusal is not None:
                    body = _anthropic_body(refusal, {})
                    self._answer(refusal.status, "application/json", json.dumps(body).encode(), {})
                    return
                assert known is not None
                self._answer(200, "application/json", json.dumps(_model_info(model, known)).encode(), {})

            def _held(self, seconds: float) -> bool:
                """Hold the request for `seconds`; False when it ended first: the server is
                stopping, or the client closed the connection (gave up on the answer)."""
                deadline = time.monotonic() + seconds
                while (left := deadline - time.monotonic()) > 0:
                    if provider._stopping.is_set():
                        return False
                    readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                    if readable and not self.connection.recv(1, socket.MSG_PEEK):
                        with provider._lock:
                            provider.hung_up += 1
                        return False
                return True

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
