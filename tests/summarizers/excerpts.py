"""Excerpts of transcripts in the daemon's message form, written short (a user message, the
assistant's text with its tool calls, a tool's result), and the offline summary of one,
split into its sections: what the offline summary's rule tests share."""

from __future__ import annotations

import re
from typing import Any

from contextd.model import Message
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.offline import summarize_offline
from pydantic import TypeAdapter

MESSAGES = TypeAdapter(list[Message])  # raw messages into the daemon's models


def summary_of(raw: list[dict[str, Any]], **fields: Any) -> str:
    request = SummaryRequest(
        kind=fields.pop("kind", "compaction"), messages=MESSAGES.validate_python(raw),
        system_prompt="", prompt="", max_tokens=fields.pop("max_tokens", 6000), **fields,
    )
    return summarize_offline(request)


def sections(summary: str) -> dict[str, str]:
    parts = re.split(r"^(#{2,3} .+)$", summary, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts), 2)}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "toolCall", "id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in calls]
    return {"role": "assistant", "stopReason": "toolUse" if calls else "stop", "content": blocks}


def call(call_id: str, command: str, name: str = "bash") -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": {"command": command}}


def result(call_id: str, text: str, *, error: bool = False, name: str = "bash") -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": text, "isError": error}
