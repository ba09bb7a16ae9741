"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`).

Each line is `{timestamp, type, payload}`: `session_meta` first, then `turn_context`,
`response_item` (the conversation, in Responses API item shapes), `event_msg` (UI events,
among them `token_count` with the usage of the last model response) and `compacted`.
Consecutive assistant items (reasoning, output text, function calls) of one response become
one assistant message; the next `token_count` gives it its usage. Rollouts written before
the `payload` envelope (a bare meta line, then bare items) are read too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from contextd.importers.common import (
    PLACEHOLDER_ID,
    EntryBuilder,
    ImportedSession,
    Problem,
    json_lines,
    message_or_problem,
    text_of,
)
from contextd.model import (
    CompactionEntry,
    ModelChangeEntry,
    SummarizerInfo,
    Usage,
    utc_now,
)

SOURCE = "codex"

CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
NOT_CONVERSATION_ITEMS = {
    "web_search_call": "a search the provider ran itself; its results are not in the rollout",
    "ghost_snapshot": "an undo snapshot",
    "compaction": "the provider's encrypted compaction state",
    "other": "an item Codex itself could not classify",
}


def parse(lines: Iterable[str]) -> ImportedSession:
    problems: list[Problem] = []
    converter = _Converter(EntryBuilder(problems), problems)
    last_line = 1
    for line, raw in json_lines(lines, problems):
        last_line = line
        kind, payload = _envelope(raw)
        converter.line(line, kind, payload, raw.get("timestamp"))
    converter.flush_answer()
    entries, leaf_id = converter.builder.finish(last_line)
    return ImportedSession(
        source=SOURCE,
        source_id=converter.meta.get("id"),
        workspace=converter.meta.get("cwd"),
        created_at=converter.meta.get("timestamp"),
        name=None,
        entries=entries,
        leaf_id=leaf_id,
        problems=problems,
    )


def _envelope(raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(line type, payload) for both the enveloped and the early bare format."""
    if isinstance(raw.get("payload"), dict) and isinstance(raw.get("type"), str):
        return raw["type"], raw["payload"]
    if "record_type" in raw:
        return "state", raw
    if "type" in raw:
        return "response_item", raw
    if "id" in raw and "timestamp" in raw:
        return "session_meta", raw
    return "unknown", raw


class _Converter:
    def __init__(self, builder: EntryBuilder, problems: list[Problem]) -> None:
        self.builder = builder
        self.problems = problems
        self.meta: dict[str, Any] = {}
        self.model: str | None = None
        self.model_entry: ModelChangeEntry | None = None
        self.answer: list[dict[str, Any]] = []
        self.answer_start: tuple[int, str | None] = (0, None)
        self.answered: bool = False
        self.tool_names: dict[str, str] = {}
        self.last_context_tokens = 0

    def line(self, line: int, kind: str, payload: dict[str, Any], timestamp: Any) -> None:
        timestamp = timestamp if isinstance(timestamp, str) else None
        if kind == "session_meta":
            self.meta = payload.get("meta", payload) if isinstance(payload.get("meta"), dict) else payload
        elif kind == "turn_context":
            self.turn_context(line, payload, timestamp)
        elif kind == "response_item":
            self.item(line, payload, timestamp)
        elif kind == "event_msg":
            self.event(line, payload)
        elif kind == "compacted":
            self.compacted(line, payload, timestamp)
        elif kind == "state":
            self.problems.append(Problem(line, "skipped", "state record, not part of the conversation"))
        else:
            self.problems.append(Problem(line, "unknown", f"unknown line type {kind!r}"))

    def turn_context(self, line: int, payload: dict[str, Any], timestamp: str | None) -> None:
        model = payload.get("model")
        if isinstance(model, str) and model and model != self.model:
            self.flush_answer()
            self.model = model
            entry = ModelChangeEntry(id=PLACEHOLDER_ID, parentId=None, model=model, timestamp=timestamp or utc_now())
            added = self.builder.add_node(line, f"L{line}", self.builder.leaf_id, entry, enters_context=False)
            assert isinstance(added, ModelChangeEntry)
            self.model_entry = added

    # --- response items -----------------------------------------------------------------

    def item(self, line: int, item: dict[str, Any], timestamp: str | None) -> None:
        kind = item.get("type")
        if kind == "message":
            self.message(line, item, timestamp)
        elif kind == "reasoning":
            text = text_of(item.get("summary") or []) or text_of(item.get("content") or [])
            if text:
                self.add_to_answer(line, {"type": "thinking", "thinking": text}, timestamp)
        elif kind in CALL_TYPES:
            self.call(line, kind, item, timestamp)
        elif kind in OUTPUT_TYPES:
            self.output(line, item, timestamp)
        elif kind in NOT_CONVERSATION_ITEMS:
            self.problems.append(Problem(line, "skipped", f"{kind}: {NOT_CONVERSATION_ITEMS[kind]}"))
        else:
            self.problems.append(Problem(line, "unknown", f"unknown response item type {kind!r}"))

    def message(self, line: int, item: dict[str, Any], timestamp: str | None) -> None:
        role = item.get("role")
        content = item.get("content") or []
        if role == "assistant":
            for part in content:
                if isinstance(part, dict) and part.get("type") in ("output_text", "text"):
                    self.add_to_answer(line, {"type": "text", "text": part.get("text", "")}, timestamp)
            return
        if role in ("developer", "system"):
            self.problems.append(
                Problem(line, "skipped", f"{role} instructions: a contextd context has no system role")
            )
            return
        self.flush_answer()
        blocks = [_user_block(part) for part in content if isinstance(part, dict)]
        blocks = [block for block in blocks if block is not None]
        message = message_or_problem({"role": "user", "content": blocks}, line, self.problems, "user message")
        if message is not None:
            self.builder.add_message(line, f"L{line}", self.builder.leaf_id, message, timestamp)

    def call(self, line: int, kind: str, item: dict[str, Any], timestamp: str | None) -> None:
        call_id = item.get("call_id") or item.get("id")
        name: Any
        arguments: dict[str, Any]
        if kind == "local_shell_call":
            name, arguments = "local_shell", item.get("action") or {}
        elif kind == "custom_tool_call":
            name, arguments = item.get("name"), {"input": item.get("input", "")}
        else:
            name, arguments = item.get("name"), _arguments(line, item.get("arguments"), self.problems)
        self.tool_names[str(call_id)] = str(name)
        self.add_to_answer(line, {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}, timestamp)

    def output(self, line: int, item: dict[str, Any], timestamp: str | None) -> None:
        self.flush_answer()
        call_id = str(item.get("call_id"))
        text, is_error = _output(item.get("output"))
        data = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": self.tool_names.get(call_id, ""),
            "content": text,
            "isError": is_error,
        }
        message = message_or_problem(data, line, self.problems, "tool output")
        if message is not None:
            self.builder.add_message(line, f"L{line}", self.builder.leaf_id, message, timestamp)

    # --- assistant answers --------------------------------------------------------------

    def add_to_answer(self, line: int, block: dict[str, Any], timestamp: str | None) -> None:
        if self.answered:
            self.flush_answer()
        if not self.answer:
            self.answer_start = (line, timestamp)
        self.answer.append(block)

    def flush_answer(self) -> None:
        blocks, self.answer = self.answer, []
        self.answered = False
        if not blocks:
            return
        line, timestamp = self.answer_start
        has_calls = any(block["type"] == "toolCall" for block in blocks)
        data: dict[str, Any] = {"role": "assistant", "content": blocks, "stopReason": "toolUse" if has_calls else "stop"}
        if self.model:
            data["model"] = self.model
        message = message_or_problem(data, line, self.problems, "assistant message")
        if message is not None:
            self.builder.add_message(line, f"L{line}", self.builder.leaf_id, message, timestamp)

    # --- events -------------------------------------------------------------------------

    def event(self, line: int, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if kind != "token_count":
            self.problems.append(Problem(line, "skipped", f"event_msg {kind}: a UI event; the conversation is in response_item lines"))
            return
        info = payload.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            return  # rate limits only: nothing about this conversation
        # The response is complete once its usage arrives: it goes onto that answer.
        self.flush_answer()
        window = info.get("model_context_window")
        if isinstance(window, int) and window > 0 and self.model_entry and self.model_entry.contextWindow is None:
            self.model_entry.contextWindow = window  # the window Codex used for this model
        usage = _usage(info["last_token_usage"])
        self.last_context_tokens = usage.context_tokens
        answer = self.builder.last_assistant
        if answer is None:
            self.problems.append(Problem(line, "skipped", "token_count before any assistant answer"))
            return
        answer.message.usage = usage  # type: ignore[union-attr]
        self.answered = True

    def compacted(self, line: int, payload: dict[str, Any], timestamp: str | None) -> None:
        self.flush_answer()
        if payload.get("replacement_history"):
            self.problems.append(
                Problem(line, "repaired", "the user messages Codex re-sent after this compaction are not imported; its summary is")
            )
        entry = CompactionEntry(
            id=PLACEHOLDER_ID,
            parentId=None,
            summary=str(payload.get("message") or ""),
            firstKeptEntryId=None,
            tokensBefore=self.last_context_tokens,
            tokensAfter=0,
            reason="threshold",
            summarizer=SummarizerInfo(provider=SOURCE),
            timestamp=timestamp or utc_now(),
        )
        self.builder.add_node(line, f"L{line}", self.builder.leaf_id, entry, enters_context=True)


def _usage(usage: dict[str, Any]) -> Usage:
    """OpenAI counts cached input inside input_tokens; contextd keeps them apart."""
    cached = int(usage.get("cached_input_tokens") or 0)
    return Usage(
        input=max(int(usage.get("input_tokens") or 0) - cached, 0),
        output=int(usage.get("output_tokens") or 0),
        cacheRead=cached,
        total=int(usage["total_tokens"]) if usage.get("total_tokens") else None,
    )


def _user_block(part: dict[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind in ("input_text", "text", "output_text"):
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image":
        url = str(part.get("image_url", ""))
        header, _, data = url.partition(",")
        mime = header.removeprefix("data:").removesuffix(";base64") if data else "image/url"
        return {"type": "image", "data": data or url, "mimeType": mime}
    return None


def _arguments(line: int, raw: Any, problems: list[Problem]) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        problems.append(Problem(line, "repaired", "function call arguments are not JSON; kept as text under 'input'"))
        return {"input": raw}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def _output(output: Any) -> tuple[str | list[dict[str, Any]], bool]:
    """A tool output's content and whether it failed.

    Codex writes a string (often JSON `{"output", "metadata": {"exit_code"}}` for shell),
    a list of content items, or in some versions `{content, success}`.
    """
    if isinstance(output, dict):
        return text_of(output.get("content", "")), output.get("success") is False
    if isinstance(output, list):
        blocks = [_user_block(part) for part in output if isinstance(part, dict)]
        return [block for block in blocks if block is not None], False
    text = str(output if output is not None else "")
    try:
        decoded = json.loads(text)
    except ValueError:
        return text, False
    if isinstance(decoded, dict) and isinstance(decoded.get("metadata"), dict):
        exit_code = decoded["metadata"].get("exit_code")
        return text, exit_code not in (None, 0)
    return text, False
