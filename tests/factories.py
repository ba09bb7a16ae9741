"""Messages as a client would send them, for tests."""

from __future__ import annotations

from typing import Any


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(
    text: str = "",
    *,
    calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
    usage: dict[str, int] | None = None,
    stop: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for call_id, name, arguments in calls:
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "stopReason": stop or ("toolUse" if calls else "stop"),
    }
    if usage is not None:
        message["usage"] = usage
    message.update(extra)
    return message


def result(call_id: str, name: str, text: str, *, error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": text,
        "isError": error,
    }


def coding_turn(index: int, *, body_words: int = 200) -> list[dict[str, Any]]:
    """One realistic turn: a request, a read, its output, an edit, its result, an answer."""
    path = f"src/module_{index}.py"
    body = " ".join(f"line{index}_{n} = compute({n})" for n in range(body_words))
    return [
        user(f"Please fix the bug in {path} (turn {index})."),
        assistant(f"Reading {path}.", calls=[(f"r{index}", "read", {"path": path})]),
        result(f"r{index}", "read", body),
        assistant("Editing.", calls=[(f"e{index}", "edit", {"path": path, "old": "a", "new": "b"})]),
        result(f"e{index}", "edit", "ok"),
        assistant(f"Fixed {path}."),
    ]
