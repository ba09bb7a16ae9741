"""The context in the shapes provider APIs take: neutral, Anthropic Messages, OpenAI Chat."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from contextd.model import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)

Format = Literal["neutral", "anthropic", "openai"]


def render_context(messages: Sequence[Message], system: str | None, fmt: Format) -> dict[str, Any]:
    """The result of contextd/session/context: the messages and, with instructions standing,
    `system`. Provider APIs take a system prompt apart from the turns, so only the neutral
    shape also puts it first among the messages."""
    rendered = to_format(messages, fmt)
    if system is None:
        return {"messages": rendered}
    if fmt == "neutral":
        rendered = [{"role": "system", "content": system}, *rendered]
    return {"messages": rendered, "system": system}


def to_format(messages: Sequence[Message], fmt: Format) -> list[dict[str, Any]]:
    if fmt == "anthropic":
        return to_anthropic(messages)
    if fmt == "openai":
        return to_openai(messages)
    return [message.model_dump(exclude_none=True) for message in messages]


# --- Anthropic Messages API ---------------------------------------------------------------


def _anthropic_blocks(content: str | Sequence[Any]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": block.mimeType, "data": block.data},
                }
            )
        elif isinstance(block, ThinkingContent):
            thinking = {"type": "thinking", "thinking": block.thinking}
            if block.signature:
                thinking["signature"] = block.signature
            blocks.append(thinking)
        elif isinstance(block, ToolCall):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
    return blocks


def _anthropic_message(message: Message) -> dict[str, Any] | None:
    if isinstance(message, ToolResultMessage):
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.toolCallId,
            "content": _anthropic_blocks(message.content),
        }
        if message.isError:
            result["is_error"] = True
        return {"role": "user", "content": [result]}
    if isinstance(message, AssistantMessage):
        blocks = _anthropic_blocks(message.content)
        return {"role": "assistant", "content": blocks} if blocks else None
    return {"role": "user", "content": _anthropic_blocks(message.content)}


def to_anthropic(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Consecutive turns of one role are merged: the API wants them alternating."""
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


def _openai_user_content(content: str | Sequence[Any]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            url = f"data:{block.mimeType};base64,{block.data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _openai_assistant(message: AssistantMessage) -> dict[str, Any] | None:
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [
        {
            "id": call.id,
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
                    "tool_call_id": message.toolCallId,
                    "content": message_text(message.content),
                }
            )
    return turns
