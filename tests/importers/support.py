"""What the importer tests share (and the native compaction test, which replays a real
transcript): a corpus transcript's lines, its JSON objects and its imported session, each
read once, and the check that every tool call has its result."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from contextd.importers import IMPORTERS, ImportedSession

from tests.corpus import agent_of, read_text


@cache
def source_lines(name: str) -> tuple[str, ...]:
    return tuple(read_text(name).splitlines())


@cache
def imported(name: str) -> ImportedSession:
    return IMPORTERS[agent_of(name)](list(source_lines(name)))


@cache
def records(name: str) -> tuple[tuple[int, dict[str, Any]], ...]:
    """The source's JSON objects with their line numbers (read once per file)."""
    found = []
    for number, line in enumerate(source_lines(name), start=1):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append((number, value))
    return tuple(found)


def assert_tool_calls_paired(messages: list[dict[str, Any]]) -> None:
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            assert not open_calls, f"calls {open_calls} left without results"
            open_calls = {block["id"] for block in message["content"] if block["type"] == "toolCall"}
        elif message["role"] == "toolResult":
            assert message["toolCallId"] in open_calls, f"orphaned result {message['toolCallId']}"
            open_calls.remove(message["toolCallId"])
        else:
            assert not open_calls, f"calls {open_calls} left without results"
    assert not open_calls
