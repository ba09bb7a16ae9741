"""A scripted LLM server on 127.0.0.1 that the real agents talk to in the tests: Anthropic
Messages, OpenAI Chat Completions and Responses, streamed (SSE) or not.

The answer is decided from the request itself, so an agent's side requests (titles,
summaries) never shift a script:
- an agent's compaction (or pi's branch summary) prompt -> a short summary (`FAKE-SUMMARY`, which holds none of the
  conversation's facts: what contextd adds is then easy to tell apart);
- no tools offered -> "ok"; the last message a tool result -> `FINAL-ANSWER: <the result>`;
- the last user text holds `NOTOOL` -> `PLAIN-REPLY`; `CALL <tool> {json}` -> that tool call
  (Codex namespaces MCP tools: `CALL mcp__contextd.history_search {...}`); else a shell call
  of `echo hi` with the agent's own shell tool; Responses only: `CALL a {..} THEN CALL b {..}`
  calls b after a's result (Codex offers MCP tools from a turn's second request on);
- `USAGE=<n>` in the last user text -> the answer reports n input tokens (to drive an
  agent's automatic compaction).
Every request is kept (`requests`) for the test to inspect.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMPACTION_PROMPTS = re.compile(
    r"Your task is to create a detailed summary|context checkpoint summary|CONTEXT CHECKPOINT COMPACTION"
    r"|Summarize the prefix to provide context|summary of this conversation branch",
    re.IGNORECASE,
)
FAKE_SUMMARY = "<analysis>fake</analysis>\n<summary>FAKE-SUMMARY: the user asked for some work; it was done.</summary>"
SHELL_TOOLS = {"Bash": {"command": "echo hi"}, "bash": {"command": "echo hi"}, "exec_command": {"cmd": "echo hi"},
               "shell": {"command": ["bash", "-lc", "echo hi"]}}


def text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in ("text", "input_text", "output_text"):
            parts.append(block.get("text", ""))
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            parts.append(text_of(block.get("content")))
    return "\n".join(parts)


def decide(
    last_text: str, tool_result: str | None, tools: list[str], prompt: str = "", called: tuple[str, ...] = ()
) -> tuple[str, Any, Any]:
    """("text", answer, None) or ("tool", name, arguments). `prompt` is the user's request of
    the turn and `called` the tools called in it so far (for `THEN CALL`)."""
    if COMPACTION_PROMPTS.search(last_text):
        return ("text", FAKE_SUMMARY, None)
    if not tools:
        return ("text", "ok", None)
    then = re.search(r"THEN CALL\s+(\S+)\s+(\{.*\})", prompt)
    if tool_result is not None and then and then.group(1).replace(".", "") not in called:
        if then.group(1) not in tools:
            return ("text", f"NO-SUCH-TOOL {then.group(1)} (have: {', '.join(tools)})", None)
        return ("tool", then.group(1), json.loads(then.group(2)))
    if tool_result is not None:
        return ("text", "FINAL-ANSWER: " + tool_result[:2000], None)
    if "NOTOOL" in last_text:
        return ("text", "PLAIN-REPLY", None)
    call = re.search(r"CALL\s+(\S+)\s+(\{.*?\})(?:\s+THEN|$)", last_text)
    if call:
        name = call.group(1)
        if name not in tools:
            return ("text", f"NO-SUCH-TOOL {name} (have: {', '.join(tools)})", None)
        return ("tool", name, json.loads(call.group(2)))
    shell = next((name for name in SHELL_TOOLS if name in tools), None)
    return ("tool", shell, SHELL_TOOLS[shell]) if shell else ("text", "no shell tool", None)


def reported_input(last_text: str) -> int:
    usage = re.search(r"USAGE=(\d+)", last_text)
    return int(usage.group(1)) if usage else 100


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeLLM

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 -- http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        with self.server.lock:
            self.server.requests.append({"path": path, "body": body})
        if path.endswith("/messages/count_tokens"):
            return self.send_json({"input_tokens": 1234})
        if path.endswith("/messages"):
            return self.anthropic(body)
        if path.endswith("/chat/completions"):
            return self.chat(body)
        if path.endswith("/responses"):
            return self.openai_responses(body)
        return self.send_json({"error": "not found"}, 404)

    def do_GET(self) -> None:  # noqa: N802
        self.send_json({"error": "not found"}, 404)

    def send_json(self, value: Any, code: int = 200) -> None:
        data = json.dumps(value).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, name: str | None, data: Any) -> None:
        head = f"event: {name}\n" if name else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        self.wfile.write(f"{head}data: {payload}\n\n".encode())
        self.wfile.flush()

    # --- Anthropic Messages ---------------------------------------------------------------

    def anthropic(self, body: dict[str, Any]) -> None:
        messages = [m for m in body.get("messages") or [] if m.get("role") in ("user", "assistant")]
        content = messages[-1].get("content") if messages else ""
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        last_text = text_of([b for b in blocks if b not in results] if blocks else content)
        tools = [tool["name"] for tool in body.get("tools") or [] if tool.get("name")]
        kind, first, second = decide(last_text, text_of(results) if results else None, tools)
        usage = {"input_tokens": reported_input(last_text), "output_tokens": 20,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if kind == "text":
            answer, stop = [{"type": "text", "text": first}], "end_turn"
        else:
            answer = [{"type": "text", "text": f"Calling {first}"},
                      {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": first, "input": second}]
            stop = "tool_use"
        message = {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant",
                   "model": body.get("model", "fake"), "content": answer, "stop_reason": stop,
                   "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return self.send_json(message)
        self.start_events()
        self.event("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}})
        for index, block in enumerate(answer):
            if block["type"] == "text":
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            self.event("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
            self.event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            self.event("content_block_stop", {"type": "content_block_stop", "index": index})
        self.event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 20}})
        self.event("message_stop", {"type": "message_stop"})

    # --- OpenAI Chat Completions ------------------------------------------------------------

    def chat(self, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        is_result = last.get("role") == "tool"
        tools = [(tool.get("function") or {}).get("name") for tool in body.get("tools") or []]
        last_text = "" if is_result else text_of(last.get("content"))
        kind, first, second = decide(last_text, text_of(last.get("content")) if is_result else None, [t for t in tools if t])
        if kind == "text":
            delta: dict[str, Any] = {"content": first}
            finish = "stop"
        else:
            delta = {"tool_calls": [{"index": 0, "id": "call_" + uuid.uuid4().hex[:12], "type": "function",
                                     "function": {"name": first, "arguments": json.dumps(second)}}]}
            finish = "tool_calls"
        prompt = reported_input(last_text)
        usage = {"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20}
        base = {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion.chunk", "created": 0,
                "model": body.get("model", "fake")}
        self.start_events()
        self.event(None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": None}]})
        self.event(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage})
        self.event(None, "[DONE]")

    # --- OpenAI Responses -----------------------------------------------------------------

    def openai_responses(self, body: dict[str, Any]) -> None:
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        tools: list[str] = []
        for tool in body.get("tools") or []:
            tools.append(tool.get("name") or tool.get("type"))
            if tool.get("type") == "namespace":
                tools += [f"{tool.get('name')}.{inner.get('name')}" for inner in tool.get("tools") or []]
        last = items[-1] if items else {}
        is_result = last.get("type") in ("function_call_output", "custom_tool_call_output")
        output = last.get("output")
        result = (output if isinstance(output, str) else json.dumps(output)) if is_result else None
        last_text = "" if is_result else text_of(last.get("content"))
        prompt = next((text_of(i.get("content")) for i in reversed(items) if i.get("role") == "user"), "")
        called = tuple(f"{i.get('namespace', '')}{i.get('name', '')}" for i in items if i.get("type") == "function_call")
        kind, first, second = decide(last_text, result, [t for t in tools if t], prompt, called)
        if kind == "text":
            item: dict[str, Any] = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:12], "role": "assistant",
                                    "status": "completed",
                                    "content": [{"type": "output_text", "text": first, "annotations": []}]}
        else:
            item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:12], "status": "completed",
                    "call_id": "call_" + uuid.uuid4().hex[:12], "name": first, "arguments": json.dumps(second)}
            if "." in first:
                namespace, name = first.split(".", 1)
                item.update(name=name, namespace=namespace)
        prompt = reported_input(last_text)
        response = {"id": "resp_" + uuid.uuid4().hex[:16], "object": "response", "created_at": 0,
                    "status": "completed", "model": body.get("model", "fake"), "output": [item],
                    "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": prompt + 20}}
        self.start_events()
        self.event("response.created", {"type": "response.created",
                                        "response": {**response, "status": "in_progress", "output": []}})
        self.event("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item})
        self.event("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item})
        self.event("response.completed", {"type": "response.completed", "response": response})


class FakeLLM(ThreadingHTTPServer):
    """The server, on a free port of 127.0.0.1, serving from a thread until closed."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()

    def model_requests(self) -> list[dict[str, Any]]:
        """The requests the agent sent for its conversation (summary requests left out)."""
        with self.lock:
            return [r for r in self.requests if not COMPACTION_PROMPTS.search(json.dumps(r["body"]))]
