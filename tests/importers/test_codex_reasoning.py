"""Reasoning a Codex rollout keeps without a summary (only its encrypted content, as Codex
writes with `model_reasoning_summary = "none"`) still marks its answer as one that reasoned."""

from __future__ import annotations

import json

from contextd.compaction.serialize import serialize_conversation
from contextd.importers import codex
from contextd.model import AssistantMessage, MessageEntry, ThinkingContent, UserMessage
from contextd.tokens.context_size import turn_outputs
from tests.corpus import read_text

ROLLOUT = "codex-lotto.jsonl.gz"


def without_reasoning_summaries(text: str) -> list[str]:
    """The real rollout as Codex writes it when it keeps no reasoning summary."""
    lines = []
    for line in text.splitlines():
        record = json.loads(line)
        payload = record.get("payload")
        if isinstance(payload, dict) and payload.get("type") == "reasoning":
            payload["summary"] = []
        lines.append(json.dumps(record))
    return lines


def reasoned(entries: list) -> list[str]:
    return [
        entry.id
        for entry in entries
        if isinstance(entry, MessageEntry)
        and isinstance(entry.message, AssistantMessage)
        and any(isinstance(block, ThinkingContent) for block in entry.message.content)
    ]


def turn_starts(entries: list) -> list[int]:
    return [
        index
        for index, entry in enumerate(entries)
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)
    ]


def test_reasoning_without_summary_keeps_the_answer_known_as_reasoned() -> None:
    summarized = codex.parse(read_text(ROLLOUT).splitlines())
    unsummarized = codex.parse(without_reasoning_summaries(read_text(ROLLOUT)))
    # The same entries; each answer is known by the line of its first readable item, as it
    # was before reasoning without text was kept (a mirror reading the file again holds them).
    assert [type(entry) for entry in unsummarized.entries] == [type(entry) for entry in summarized.entries]
    assert {entry.id for entry in unsummarized.entries} - {entry.id for entry in summarized.entries} == {
        f"L{int(entry.id[1:]) + 1}" for entry in summarized.entries if entry.id in reasoned(summarized.entries)
    }
    assert len(reasoned(unsummarized.entries)) == len(reasoned(summarized.entries)) == 134
    assert not any("no readable text" in problem.message for problem in unsummarized.problems)
    # So the reasoning each turn carried is dropped at the next turn's start all the same.
    for end in turn_starts(summarized.entries):
        assert list(turn_outputs(unsummarized.entries, end).values()) == list(turn_outputs(summarized.entries, end).values())
    assert sum(len(turn_outputs(summarized.entries, end)) for end in turn_starts(summarized.entries)) > 100


def test_reasoning_without_summary_adds_nothing_to_a_summarizer_input() -> None:
    unsummarized = codex.parse(without_reasoning_summaries(read_text(ROLLOUT)))
    messages = [entry.message for entry in unsummarized.entries if isinstance(entry, MessageEntry)]
    assert "[Assistant thinking]" not in serialize_conversation(messages)
