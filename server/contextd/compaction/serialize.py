"""A conversation as plain text for a summarizer.

Sending the conversation as text inside the prompt, instead of as chat turns, keeps the
summarizing model from answering it instead of summarizing it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from contextd.model import AssistantMessage, Message, UserBlock

TOOL_TEXT_MAX_CHARS = 2_000
"""How much of one tool result (or one tool-call argument) the summarizer reads.

Old tool output is mostly raw data; its beginning says what it was, the assistant's own
messages say what came of it."""


def truncate(text: str, max_chars: int | None = TOOL_TEXT_MAX_CHARS, label: str = "") -> str:
    """`label` then `text` cut to `max_chars` (None: whole), with a note of how much was left
    out (the label joined in the same copy: a kept beginning is thousands of characters)."""
    if max_chars is None or len(text) <= max_chars:
        return label + text
    return f"{label}{text[:max_chars]}\n[... {len(text) - max_chars} more characters truncated]"


def serialize_conversation(
    messages: Iterable[Message], *, tool_text_max_chars: int | None = TOOL_TEXT_MAX_CHARS
) -> str:
    """The messages as `[User]: ...`, `[Assistant]: ...`, `[Assistant thinking]: ...`,
    `[Assistant tool calls]: name(arg=json, ...)`, `[Tool result name]: ...` paragraphs.

    Tool results and tool-call arguments longer than `tool_text_max_chars` are truncated with
    a note saying how many characters were cut (None keeps them whole).
    """
    parts: list[str] = []
    for message in messages:  # told apart by tag: a model's isinstance is slow to say no
        if message.role == "assistant":
            _add_assistant_lines(parts, message, tool_text_max_chars)
        elif message.role == "toolResult":
            label = f"[Tool result {message.toolName} (error)]: " if message.isError else f"[Tool result {message.toolName}]: "
            parts.append(truncate(_content_text(message.content), tool_text_max_chars, label))
        else:
            text = _content_text(message.content)
            if text:
                parts.append(f"[User]: {text}")
    return "\n\n".join(parts)


def _add_assistant_lines(parts: list[str], message: AssistantMessage, tool_text_max_chars: int | None) -> None:
    thinking: list[str] = []
    text: list[str] = []
    calls: list[str] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "thinking":
            if block.thinking:  # an empty one only says the answer reasoned (encrypted, unseen)
                thinking.append(block.thinking)
        else:
            arguments = [f"{key}={_json_text(value, tool_text_max_chars)}" for key, value in block.arguments.items()]
            calls.append(f"{block.name}({', '.join(arguments)})")
    if thinking:
        parts.append("[Assistant thinking]: " + "\n".join(thinking))
    if text:
        parts.append("[Assistant]: " + "\n".join(text))
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))
    if message.failed:
        parts.append(f"[Assistant error]: {message.errorMessage or message.stopReason}")


_JSON_CHUNKS = c_make_encoder(
    None, json.JSONEncoder().default, encode_basestring, None, ": ", ", ", False, False, True
)
"""json's own C encoder, made once: `json.dumps` makes one per call, which costs more than
encoding a small tool call's arguments. No circular check: the values were parsed from JSON."""


def json_text(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)`: tool arguments as the model wrote them."""
    return "".join(_JSON_CHUNKS(value, 0))


def _json_text(value: Any, max_chars: int | None) -> str:
    """A tool-call argument's JSON (`json.dumps(value, ensure_ascii=False)`) as the summarizer
    reads it. A string longer than `max_chars` is cut as a tool result's text is, to its first
    `max_chars` characters (escaped, its quote left open) and a note of how many more it holds;
    any other value's JSON is cut to `max_chars`."""
    if not isinstance(value, str):
        return truncate(json_text(value), max_chars)
    if max_chars is None or len(value) <= max_chars:
        return _json_string(value)
    # Counted in the string's own characters: the escaped length of what is left out would
    # take escaping or counting all of it, and a write carries a whole file.
    return f"{_json_string(value[:max_chars])[:-1]}\n[... {len(value) - max_chars} more characters truncated]"


def _json_string(text: str) -> str:
    """`json.dumps(text, ensure_ascii=False)`. In ASCII text the ASCII escaper, several
    times faster, differs only on DEL, which it escapes."""
    if text.isascii() and "\x7f" not in text:
        return encode_basestring_ascii(text)
    return encode_basestring(text)


def _content_text(content: str | list[UserBlock]) -> str:
    if isinstance(content, str):
        return content
    if len(content) == 1 and content[0].type == "text":  # most results: one text, no join
        return content[0].text
    return "\n".join([block.text if block.type == "text" else f"[image: {block.mimeType}]" for block in content])
