"""Helpers of the client tests: settings and conversations."""

from __future__ import annotations

from typing import Any

SETTINGS = {"compaction": {"keepRecentTokens": 2000}}
"""Default settings but for a short kept tail, so a test conversation has something to compact."""


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def tool_turn(call_id: str, name: str, arguments: dict[str, Any], output: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}],
            "stopReason": "toolUse",
        },
        {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": output, "isError": False},
    ]


def long_conversation(turns: int, file_size: int = 3000) -> list[dict[str, Any]]:
    """A conversation of tool reads big enough to fill a small window."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append(user(f"Step {turn}: read module {turn} and tell me what it does."))
        body = "\n".join(f"def function_{turn}_{line}(value):\n    return value * {line}" for line in range(file_size // 40))
        messages += tool_turn(f"call_{turn}", "read", {"path": f"src/module_{turn}.py"}, body)
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Module {turn} multiplies values."}]})
    return messages
