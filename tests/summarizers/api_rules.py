"""What the real provider APIs refuse, checked here without them: a request body is read with
the official SDKs' own param types (pydantic over their TypedDicts, unknown fields included),
then against the rules their documentation states that no type can say (non-empty text,
signed thinking, tool id patterns, every tool result answering a call).

    problems = anthropic_problems(body)       # [] when the Messages API would take it
    problems = openai_chat_problems(body)     # Chat Completions
    problems = openai_responses_problems(body)  # Responses (`/responses`)
    problems = openai_compact_problems(body)  # `/responses/compact`

Both the fake provider (which answers 400 like the real API) and the corpus-wide test use them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

ANTHROPIC_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
OPENAI_CHAT_MAX_TOOL_ID = 40
"""Chat Completions' longest tool call id: no SDK type says it, the API answers a longer one
with 400 `string_above_max_length` ("Invalid 'messages[2].tool_calls[0].id': string too long.
Expected a string with maximum length 40, but got a string with length 41 instead.")."""
OPENAI_RESPONSES_MAX_CALL_ID = 64
"""The Responses API's longest `call_id` (`function_call`, `function_call_output`), as reported
against the API and Codex's backend: no SDK type says it, a longer one is a 400
`string_above_max_length` ("Invalid 'input[149].call_id': string too long. Expected a string
with maximum length 64, but got a string with length 86 instead.")."""
MAX_REPORTED = 3


@cache
def _adapter(kind: str) -> TypeAdapter[Any]:
    # Imported here: the SDKs take seconds to import, and only these checks need their types.
    if kind == "anthropic":
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming as A
    elif kind == "anthropic-beta":
        from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming as A
    elif kind == "anthropic-count":
        from anthropic.types.beta.message_count_tokens_params import MessageCountTokensParams as A
    elif kind == "openai-chat":
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming as A
    elif kind == "openai-responses":
        from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming as A
    else:
        from openai.types.responses.response_compact_params import ResponseCompactParams as A
    return TypeAdapter(A)


def sdk_problems(kind: str, body: Any) -> list[str]:
    """Where `body` breaks the SDK's param type for `kind`: a missing or mistyped field, or one
    the type does not know (pydantic drops unknown keys of a TypedDict silently, so they are
    found by comparing what it kept)."""
    try:
        kept = _exhausted(_adapter(kind).validate_python(body, strict=True))
    except ValidationError as error:
        return _described(error)
    return [f"{where}: unknown field" for where in _unknown_keys(body, kept, "")]


def _exhausted(value: Any) -> Any:
    """The validated value with its lazy parts validated too: the SDKs type lists as
    `Iterable`, which pydantic checks only while they are iterated."""
    if isinstance(value, dict):
        return {key: _exhausted(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) or isinstance(value, Iterator) or type(value).__name__ == "ValidatorIterator":
        return [_exhausted(item) for item in value]
    return value


def _unknown_keys(sent: Any, kept: Any, where: str) -> Iterator[str]:
    if isinstance(sent, dict) and isinstance(kept, dict):
        for key, value in sent.items():
            if key not in kept:
                yield f"{where}.{key}".lstrip(".")
            else:
                yield from _unknown_keys(value, kept[key], f"{where}.{key}")
    elif isinstance(sent, list) and isinstance(kept, list):
        for index, (item, kept_item) in enumerate(zip(sent, kept)):
            yield from _unknown_keys(item, kept_item, f"{where}.{index}")


def _described(error: ValidationError) -> list[str]:
    """The errors of the union member the value meant (the one named after its `type`:
    `input_image` is `ResponseInputImageParam`), not those of the dozens it never meant to be."""
    errors = [e for e in error.errors() if e["type"] not in ("literal_error", "union_tag_invalid")] or error.errors()
    meant = [e for e in errors if _names_its_type(e)]
    return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in (meant or errors)[:MAX_REPORTED]]


def _names_its_type(error: Any) -> bool:
    value = error.get("input")
    kind = value.get("type") if isinstance(value, dict) else None
    if not isinstance(kind, str) or len(error["loc"]) < 2:
        return False
    member = str(error["loc"][-2]) if error["type"] == "missing" else str(error["loc"][-1])
    return "".join(part.title() for part in kind.split("_")) in member


# --- Anthropic Messages ----------------------------------------------------------------------


BETA_OF_PARAMETER = {"compaction": "compact-2026-09-04", "context_management": "compact-2026-01-12"}
"""The beta a compaction parameter needs in the `anthropic-beta` header (the SDK sends it
from `betas=[...]`)."""


def anthropic_problems(body: Any, betas: frozenset[str] | None = None) -> list[str]:
    """The Messages API's checks; `betas`, the request's `anthropic-beta` names (None: not a
    beta request)."""
    problems = sdk_problems("anthropic" if betas is None else "anthropic-beta", body)
    if not isinstance(body, dict):
        return problems
    for parameter, beta in BETA_OF_PARAMETER.items():
        if parameter in body and beta not in (betas or ()):
            problems.append(f"{parameter}: requires the beta header {beta}")
    if "compaction" in body and "context_management" in body:
        problems.append("compaction: cannot be combined with context_management")
    messages = body.get("messages")
    return problems + (anthropic_message_problems(messages) if isinstance(messages, list) else [])


def anthropic_message_problems(messages: list[Any]) -> list[str]:
    """The Messages API's rules beyond its types: every turn but a final assistant one has
    content, text is never empty or blank, thinking is signed, tool ids fit the pattern, and
    each tool result answers a `tool_use` of the assistant turn just before it."""
    problems: list[str] = []
    calls_before: set[str] = set()
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        final_assistant = index == len(messages) - 1 and message.get("role") == "assistant"
        if not blocks and not final_assistant:
            problems.append(f"messages.{index}: all messages must have non-empty content")
        calls: set[str] = set()
        for number, block in enumerate(blocks):
            problems += [f"messages.{index}.content.{number}: {p}" for p in _block_problems(block, calls_before)]
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls.add(str(block.get("id")))
        calls_before = calls
    return problems


def _block_problems(block: Any, calls_before: set[str]) -> list[str]:
    if not isinstance(block, dict):
        return []
    kind = block.get("type")
    if kind == "text" and not str(block.get("text", "")).strip():
        return ["text content blocks must contain non-whitespace text"]
    if kind == "thinking" and not block.get("signature"):
        return ["thinking.signature: Field required"]
    if kind == "tool_use" and not ANTHROPIC_TOOL_ID.match(str(block.get("id"))):
        return [f"tool_use.id: String should match pattern '{ANTHROPIC_TOOL_ID.pattern}'"]
    if kind == "tool_result":
        tool_use_id = str(block.get("tool_use_id"))
        if not ANTHROPIC_TOOL_ID.match(tool_use_id):
            return [f"tool_use_id: String should match pattern '{ANTHROPIC_TOOL_ID.pattern}'"]
        if tool_use_id not in calls_before:
            return [f"unexpected `tool_use_id` {tool_use_id!r}: no tool_use of that id in the previous message"]
        inner = block.get("content")
        if isinstance(inner, list):
            return [p for item in inner for p in _block_problems(item, calls_before)]
    return []


# --- OpenAI ------------------------------------------------------------------------------------


def openai_chat_problems(body: Any) -> list[str]:
    """Chat Completions: the types, and every `tool` message answering a call of the
    assistant message before it."""
    problems = sdk_problems("openai-chat", body)
    calls: set[str] = set()
    for index, message in enumerate(body.get("messages") or [] if isinstance(body, dict) else []):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            calls = {str(call.get("id")) for call in message.get("tool_calls") or []}
            for number, call in enumerate(message.get("tool_calls") or []):
                problems += _openai_id_problems(f"messages[{index}].tool_calls[{number}].id", call.get("id"), OPENAI_CHAT_MAX_TOOL_ID)
        elif message.get("role") == "tool":
            problems += _openai_id_problems(f"messages[{index}].tool_call_id", message.get("tool_call_id"), OPENAI_CHAT_MAX_TOOL_ID)
            if message.get("tool_call_id") not in calls:
                problems.append(f"messages.{index}: a tool message must answer a preceding tool_calls id")
        else:
            calls = set()
    return problems


def _openai_id_problems(where: str, tool_id: object, longest: int) -> list[str]:
    if not isinstance(tool_id, str) or len(tool_id) <= longest:
        return []
    return [
        f"Invalid '{where}': string too long. Expected a string with maximum length "
        f"{longest}, but got a string with length {len(tool_id)} instead."
    ]


def openai_responses_problems(body: Any) -> list[str]:
    return sdk_problems("openai-responses", body) + _input_problems(body)


def openai_compact_problems(body: Any) -> list[str]:
    return sdk_problems("openai-compact", body) + _input_problems(body)


def _input_problems(body: Any) -> list[str]:
    """Responses input: no call id over the API's 64 characters, each `function_call_output`
    answering an earlier `function_call`, and a compaction item carrying its encrypted content."""
    items = body.get("input") if isinstance(body, dict) else None
    problems: list[str] = []
    calls: set[str] = set()
    for index, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("function_call", "function_call_output"):
            problems += _openai_id_problems(f"input[{index}].call_id", item.get("call_id"), OPENAI_RESPONSES_MAX_CALL_ID)
        if kind == "function_call":
            calls.add(str(item.get("call_id")))
        elif kind == "function_call_output" and item.get("call_id") not in calls:
            problems.append(f"input.{index}: No tool call found for function call output with call_id {item.get('call_id')}")
        elif kind == "compaction" and not item.get("encrypted_content"):
            problems.append(f"input.{index}.encrypted_content: Field required")
    return problems
