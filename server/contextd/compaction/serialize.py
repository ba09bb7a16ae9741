"""A conversation as plain text for a summarizer.

Sending the conversation as text inside the prompt, instead of as chat turns, keeps the
summarizing model from answering it instead of summarizing it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from contextd.model import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserBlock,
)

TOOL_TEXT_MAX_CHARS = 2_000
"""How much of one tool result (or one tool-call argument) the summarizer reads.

Old tool output is mostly raw data; its beginning says what it was, the assistant's own
messages say what came of it."""


def truncate(text: str, max_chars: int | None = TOOL_TEXT_MAX_CHARS) -> str:
    """`text` cut to `max_chars` (None: whole), with a note of how much was left out."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[... {len(text) - max_chars} more characters truncated]"


def serialize_conversation(
    messages: Iterable[Message], *, tool_text_max_chars: int | None = TOOL_TEXT_MAX_CHARS
) -> str:
    """The messages as `[User]: ...`, `[Assistant]: ...`, `[Assistant thinking]: ...`,
    `[Assistant tool calls]: name(arg=json, ...)`, `[Tool result name]: ...` paragraphs.

    Tool results and tool-call arguments longer than `tool_text_max_chars` are truncated with
    a note saying how many characters were cut (None keeps them whole).
    """
    parts: list[str] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            parts += _assistant_lines(message, tool_text_max_chars)
        elif isinstance(message, ToolResultMessage):
            label = f"Tool result {message.toolName}" + (" (error)" if message.isError else "")
            parts.append(f"[{label}]: {truncate(_content_text(message.content), tool_text_max_chars)}")
        else:
            text = _content_text(message.content)
            if text:
                parts.append(f"[User]: {text}")
    return "\n\n".join(parts)


def _assistant_lines(message: AssistantMessage, tool_text_max_chars: int | None) -> list[str]:
    thinking = [block.thinking for block in message.content if isinstance(block, ThinkingContent)]
    text = [block.text for block in message.content if isinstance(block, TextContent)]
    calls = [
        _call_text(block, tool_text_max_chars) for block in message.content if isinstance(block, ToolCall)
    ]
    lines: list[str] = []
    if thinking:
        lines.append("[Assistant thinking]: " + "\n".join(thinking))
    if text:
        lines.append("[Assistant]: " + "\n".join(text))
    if calls:
        lines.append("[Assistant tool calls]: " + "; ".join(calls))
    if message.failed:
        lines.append(f"[Assistant error]: {message.errorMessage or message.stopReason}")
    return lines


def _call_text(call: ToolCall, max_chars: int | None) -> str:
    arguments = ", ".join(
        f"{key}={truncate(json.dumps(value, ensure_ascii=False), max_chars)}"
        for key, value in call.arguments.items()
    )
    return f"{call.name}({arguments})"


def _content_text(content: str | list[UserBlock]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        block.text if isinstance(block, TextContent) else f"[image: {block.mimeType}]"
        for block in content
        if isinstance(block, (TextContent, ImageContent))
    )
