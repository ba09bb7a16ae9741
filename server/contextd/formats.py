"""The context in the shapes provider APIs take: neutral, Anthropic Messages, OpenAI Chat
Completions and OpenAI Responses input items (what OpenAI's own compaction reads and writes)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from contextd.compaction.prepare import split_turn_context
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)

Format = Literal["neutral", "anthropic", "openai", "openai-responses"]


def render_context(
    messages: Sequence[Message],
    system: str | None,
    fmt: Format,
    opening_compaction: CompactionEntry | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The result of contextd/session/context: the messages and, with instructions standing,
    `system`. Provider APIs take a system prompt apart from the turns, so only the neutral
    shape also puts it first among the messages.

    `opening_compaction` is the compaction whose summary is `messages[0]`. When OpenAI's own
    compaction wrote it and the request is for `model`, the model that made it, the
    `openai-responses` shape replays what that compaction answered (the user messages it
    kept and its encrypted item) in the summary's place: the model reads its own state
    better than our text, and OpenAI decrypts it for that model only. Chat Completions
    (`openai`) cannot take such an item, so it keeps the readable summary."""
    if fmt == "openai-responses" and opening_compaction is not None and replays_to(opening_compaction, model):
        rendered = [*_openai_replay(opening_compaction), *to_openai_responses(messages[1:])]
    else:
        rendered = to_format(messages, fmt)
    if system is None:
        return {"messages": rendered}
    if fmt == "neutral":
        rendered = [{"role": "system", "content": system}, *rendered]
    return {"messages": rendered, "system": system}


def replays_to(compaction: CompactionEntry, model: str | None) -> bool:
    """Whether OpenAI's items of `compaction` may go to `model`: only to the model that made
    them (a request with them for another is refused, `invalid_encrypted_content`)."""
    preserved = compaction.provider_state()
    return preserved is not None and model is not None and preserved.model == model


def to_format(messages: Sequence[Message], fmt: Format) -> list[dict[str, Any]]:
    if fmt == "anthropic":
        return to_anthropic(messages)
    if fmt == "openai":
        return to_openai(messages)
    if fmt == "openai-responses":
        return to_openai_responses(messages)
    return [message.model_dump(exclude_none=True) for message in messages]


# --- Anthropic Messages API ---------------------------------------------------------------

ANTHROPIC_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
"""The ids the Messages API takes in `tool_use.id` and `tool_result.tool_use_id`."""
TOOL_ID_HASH_CHARS = 16
TOOL_ID_KEPT_CHARS = 40


def anthropic_tool_id(tool_id: str) -> str:
    """`tool_id` as the Messages API takes it: unchanged when it already fits the pattern,
    else its allowed characters (the rest as `_`) and a hash of the whole id. A function of
    the id alone, so a call and its result map alike in every request; the hash keeps two
    ids that differ only in refused characters (`a|b`, `a:b`) apart, and the `x` before it
    keeps a mapped id from equalling an id that already fit (those never end in `x` and a
    hex hash, barring a 64-bit coincidence)."""
    if ANTHROPIC_TOOL_ID.match(tool_id):
        return tool_id
    return _hashed_tool_id(tool_id, re.sub(r"[^a-zA-Z0-9_-]", "_", tool_id)[:TOOL_ID_KEPT_CHARS])


def _hashed_tool_id(tool_id: str, kept: str) -> str:
    """`kept`, the part of `tool_id` an API takes, then `_x` and a hash of the whole id."""
    return f"{kept}_x{hashlib.sha256(tool_id.encode()).hexdigest()[:TOOL_ID_HASH_CHARS]}"


def _anthropic_block(block: Any) -> dict[str, Any] | None:
    """One content block as the Messages API takes it, or None for one it would refuse and
    that carries nothing to send: empty text, thinking without the signature the API checks
    (Codex and other agents record thinking unsigned)."""
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text} if block.text.strip() else None
    if isinstance(block, ImageContent):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": block.mimeType, "data": block.data},
        }
    if isinstance(block, ThinkingContent):
        if not block.signature:
            return None
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, ToolCall):
        return {
            "type": "tool_use",
            "id": anthropic_tool_id(block.id),
            "name": block.name,
            "input": block.arguments,
        }
    return None


def _anthropic_blocks(content: str | Sequence[Any]) -> list[dict[str, Any]]:
    blocks = [TextContent(text=content)] if isinstance(content, str) else content
    return [shaped for block in blocks if (shaped := _anthropic_block(block)) is not None]


def _anthropic_message(message: Message) -> dict[str, Any] | None:
    if isinstance(message, ToolResultMessage):
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": anthropic_tool_id(message.toolCallId),
        }
        if content := _anthropic_blocks(message.content):  # an empty output goes without content
            result["content"] = content
        if message.isError:
            result["is_error"] = True
        return {"role": "user", "content": [result]}
    blocks = _anthropic_blocks(message.content)
    return {"role": message.role, "content": blocks} if blocks else None


def to_anthropic(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Consecutive turns of one role are merged: the API wants them alternating. A message
    left with no block the API takes is left out (the API refuses an empty turn)."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        turn = _anthropic_message(message)
        if turn is None:
            continue
        if turns and turns[-1]["role"] == turn["role"]:
            turns[-1]["content"].extend(turn["content"])
        else:
            turns.append(turn)
    return turns


# --- OpenAI Chat Completions ---------------------------------------------------------------

OPENAI_CHAT_MAX_TOOL_ID_CHARS = 40
"""The longest `tool_calls[].id` and `tool_call_id` Chat Completions takes: a longer one is a
400 `string_above_max_length` ("Expected a string with maximum length 40"; the SDK's types
say nothing of it). pi records ids of 41 (`call-` and a UUID)."""
OPENAI_RESPONSES_MAX_CALL_ID_CHARS = 64
"""The longest `call_id` the Responses API takes in `function_call` and `function_call_output`
input items: a longer one is a 400 `string_above_max_length` ("Invalid 'input[5].call_id':
string too long. Expected a string with maximum length 64", as reported against the API and
Codex's backend; the SDK's types say nothing of it). Ids made by bridges and proxies
(`cursor-pi-bridge-run-<uuid>-tool-10`, 65) reach pi's sessions."""


def openai_tool_id(tool_id: str, longest: int) -> str:
    """`tool_id` as an OpenAI API takes it, `longest` characters at most: unchanged when short
    enough, else its start, `_x` and a hash of the whole id, `longest` characters in all; like
    `anthropic_tool_id`, a function of the id alone, so a call and its result map alike in
    every request."""
    if len(tool_id) <= longest:
        return tool_id
    return _hashed_tool_id(tool_id, tool_id[: longest - len("_x") - TOOL_ID_HASH_CHARS])


def _openai_user_content(
    content: str | Sequence[Any], *, responses: bool = False
) -> str | list[dict[str, Any]]:
    """User content for Chat Completions, or with `responses` for the Responses API (whose
    parts are `input_text`/`input_image`)."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "input_text" if responses else "text", "text": block.text})
        elif isinstance(block, ImageContent):
            url = f"data:{block.mimeType};base64,{block.data}"
            if responses:
                # The SDK's type requires `detail`; "auto" is the API's own default.
                parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
            else:
                parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _openai_assistant(message: AssistantMessage) -> dict[str, Any] | None:
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [
        {
            "id": openai_tool_id(call.id, OPENAI_CHAT_MAX_TOOL_ID_CHARS),
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in message.tool_calls
    ]
    if not text and not calls:
        return None
    turn: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        turn["tool_calls"] = calls
    return turn


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            turns.append({"role": "user", "content": _openai_user_content(message.content)})
        elif isinstance(message, AssistantMessage):
            if (turn := _openai_assistant(message)) is not None:
                turns.append(turn)
        else:
            turns.append(
                {
                    "role": "tool",
                    "tool_call_id": openai_tool_id(message.toolCallId, OPENAI_CHAT_MAX_TOOL_ID_CHARS),
                    "content": message_text(message.content),
                }
            )
    return turns


# --- OpenAI Responses API input items ---------------------------------------------------------


def to_openai_responses(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The Responses API's input items: messages, `function_call` and `function_call_output`.
    Thinking is left out: the API takes back only its own encrypted reasoning items."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            items.append({"role": "user", "content": _openai_user_content(message.content, responses=True)})
        elif isinstance(message, AssistantMessage):
            text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
            if text:
                items.append({"role": "assistant", "content": text})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": openai_tool_id(call.id, OPENAI_RESPONSES_MAX_CALL_ID_CHARS),
                    "name": call.name,
                    "arguments": json.dumps(call.arguments),
                }
                for call in message.tool_calls
            )
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": openai_tool_id(message.toolCallId, OPENAI_RESPONSES_MAX_CALL_ID_CHARS),
                    "output": message_text(message.content),
                }
            )
    return items


def _openai_replay(compaction: CompactionEntry) -> list[dict[str, Any]]:
    """The preserved compaction output, then the summary of a split turn's beginning when the
    output covers only the history before that turn (summarized on its own)."""
    assert compaction.preserveData is not None
    replay: list[dict[str, Any]] = [dict(item) for item in compaction.preserveData.openaiItems]
    turn = None if compaction.preserveData.coversSplitTurn else split_turn_context(compaction.summary)
    if turn is not None:
        replay.append({"role": "user", "content": turn})
    return replay
