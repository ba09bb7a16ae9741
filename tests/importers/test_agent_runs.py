"""Transcripts the pinned real agents wrote in this project's agent tests (tests/agents/runs/,
described in its README), imported and followed as a user's would be."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from contextd.compaction.context import standing_instructions, visible_entries
from contextd.importers import IMPORTERS, STREAMING_IMPORTERS
from contextd.importers.common import restore_importer
from contextd.model import CompactionEntry, Entry, InstructionsEntry, MessageEntry, ToolResultMessage, message_text
from contextd.summarizers.extract import extract_facts
from contextd.tokens.context_size import context_size
from contextd.tokens.counting import count_entry, count_text

RUNS = Path(__file__).parents[1] / "agents" / "runs"
CLAUDE_CODE_COMPACT = "claude-code-2.1.328-compact.jsonl.gz"
"""Claude Code 2.1.328: a tool call, `/compact`, then two plain turns."""
CLAUDE_CODE_HOOK = "claude-code-2.1.328-hook-compact.jsonl.gz"
"""Claude Code 2.1.328 with contextd installed: a tool call, `/compact` (contextd's
SessionStart hook adds context), a plain turn, `/compact` again (the hook adds again), a
plain turn."""
CODEX_COMPACT = "codex-0.169.0-compact.jsonl.gz"
"""Codex 0.169.0: a command that is not found (exit 127), one that passes, an automatic
compaction (summarized by the model, not encrypted), then a plain turn."""


def run_lines(name: str) -> list[str]:
    return gzip.decompress((RUNS / name).read_bytes()).decode().splitlines()


def numbered_records(lines: list[str]) -> list[tuple[int, dict[str, Any]]]:
    return [(number, json.loads(line)) for number, line in enumerate(lines, start=1)]


def path_to_leaf(entries: list[Entry], leaf: str | None) -> list[Entry]:
    by_id = {entry.id: entry for entry in entries}
    path = []
    while leaf is not None:
        path.append(by_id[leaf])
        leaf = by_id[leaf].parentId
    return path[::-1]


def test_claude_code_compaction_is_settled_at_its_summary_record_with_what_it_kept() -> None:
    """Claude Code 2.1.x writes the size after its compaction and the messages it kept in the
    boundary: a mirror shows the compaction once its summary record is read (it waited two
    turns, for the next answer's usage and the record after that answer), and the message
    Claude Code kept stays in context after the summary."""
    lines = run_lines(CLAUDE_CODE_COMPACT)
    records = numbered_records(lines)
    boundary = next(raw for _, raw in records if raw.get("subtype") == "compact_boundary")
    summary_line = next(number for number, raw in records if raw.get("isCompactSummary"))
    metadata = boundary["compactMetadata"]
    follower = STREAMING_IMPORTERS["claude-code"]()
    for number, line in enumerate(lines[:summary_line], start=1):
        follower.feed(number, line)
    settled = [entry for entry in follower.take_settled() if isinstance(entry, CompactionEntry)]
    assert [(c.id, c.tokensBefore, c.tokensAfter) for c in settled] == [
        (boundary["uuid"], metadata["preTokens"], metadata["postTokens"])
    ]
    imported = IMPORTERS["claude-code"](lines)
    visible = visible_entries(path_to_leaf(imported.entries, imported.leaf_id))
    assert visible[0].id == boundary["uuid"]
    assert [entry.id for entry in visible[1 : 1 + len(metadata["preservedMessages"]["uuids"])]] == metadata[
        "preservedMessages"
    ]["uuids"]


def test_claude_code_answer_is_settled_once_claude_code_saved_its_turn() -> None:
    """Claude Code 2.1.x writes a `last-prompt` record naming the answer once its turn is
    saved: a mirror shows every answer then, not when the user's next request comes (the
    turn's last answer waited a whole turn), and reading the file line by line gives what
    the whole file gives."""
    lines = run_lines(CLAUDE_CODE_COMPACT)
    records = numbered_records(lines)
    saved = [number for number, raw in records if raw["type"] == "last-prompt"]
    assert saved
    follower = STREAMING_IMPORTERS["claude-code"]()
    settled: list[Entry] = []
    for number, line in enumerate(lines, start=1):
        follower.feed(number, line)
        settled += follower.take_settled()
        if number in saved:
            assert first_records_of_answers(records, number) <= {entry.id for entry in settled}, number
    whole = IMPORTERS["claude-code"](lines)
    assert [e.model_dump() for e in settled + follower.finish().entries] == [e.model_dump() for e in whole.entries]


def first_records_of_answers(records: list[tuple[int, dict[str, Any]]], before: int) -> set[str]:
    """The uuid of each answer's first record (its entry's id) written before line `before`."""
    first: dict[str, str] = {}
    for number, raw in records:
        if number < before and raw["type"] == "assistant":
            first.setdefault(raw["message"]["id"], raw["uuid"])
    return set(first.values())


@pytest.mark.parametrize(
    ("agent", "name"), [("claude-code", CLAUDE_CODE_COMPACT), ("claude-code", CLAUDE_CODE_HOOK), ("codex", CODEX_COMPACT)]
)
def test_the_bookkeeping_records_of_the_newer_versions_are_known(agent: str, name: str) -> None:
    """Claude Code 2.1.x writes requests, attachments, costs and flags among the
    conversation, Codex 0.169 usage records and world states: each is reported as left out
    by design, none as an unknown record."""
    imported = IMPORTERS[agent](run_lines(name))
    assert [p for p in imported.problems if p.kind == "unknown"] == []


def test_codex_compaction_keeps_in_context_exactly_what_codex_kept() -> None:
    """After Codex's own compaction the model sees the summary once and the user's requests
    Codex kept (its `replacement_history`, whose last user message is the summary itself),
    then what follows: the mirror's context is the same, nothing twice."""
    lines = run_lines(CODEX_COMPACT)
    records = numbered_records(lines)
    compacted = next(raw["payload"] for _, raw in records if raw["type"] == "compacted")
    kept = [
        part["text"]
        for item in compacted["replacement_history"]
        if item.get("role") == "user"
        for part in item["content"]
        if not part["text"].startswith("<") and part["text"] != compacted["message"]
    ]
    after = [
        part["text"]
        for number, raw in records
        if number > next(n for n, r in records if r["type"] == "compacted")
        and raw["type"] == "response_item" and raw["payload"].get("type") == "message"
        for part in raw["payload"]["content"]
    ]
    imported = IMPORTERS["codex"](lines)
    visible = visible_entries(path_to_leaf(imported.entries, imported.leaf_id))
    assert isinstance(visible[0], CompactionEntry) and visible[0].summary == compacted["message"]
    texts = [message_text(entry.message.content) for entry in visible[1:] if isinstance(entry, MessageEntry)]
    assert texts == kept + after


def codex_command_outcomes(lines: list[str]) -> tuple[dict[str, bool], Any]:
    """Each tool result's isError by call id, and the facts a summary reads from the run."""
    imported = IMPORTERS["codex"](lines)
    messages = [entry.message for entry in imported.entries if isinstance(entry, MessageEntry)]
    results = {m.toolCallId: m.isError for m in messages if isinstance(m, ToolResultMessage)}
    return results, extract_facts(messages)


def exit_codes_events_report(records: list[tuple[int, dict[str, Any]]]) -> dict[str, int]:
    return {
        raw["payload"]["item"]["id"]: raw["payload"]["item"]["exit_code"]
        for _, raw in records
        if raw["type"] == "event_msg" and raw["payload"].get("type") == "item_completed"
        and raw["payload"]["item"].get("type") == "CommandExecution"
    }


def test_codex_unified_exec_exit_codes_decide_the_outcome() -> None:
    """Codex 0.169 frames a command's output as `Chunk ID / Wall time / Process exited with
    code N / Output:` (and reports the code in an `item_completed` event): exit 127 is a
    failure, not a pass, and the summary reads the output without the frame."""
    lines = run_lines(CODEX_COMPACT)
    codes = exit_codes_events_report(numbered_records(lines))
    assert sorted(codes.values()) == [0, 127]
    results, facts = codex_command_outcomes(lines)
    assert results == {call: code != 0 for call, code in codes.items()}
    assert facts.commands["nosuchcommand --check"].verdict != "ok"
    assert "`nosuchcommand` is not installed here (command not found)" in facts.environment
    assert facts.commands["ls /"].verdict == "ok" and "Chunk ID" not in facts.commands["ls /"].detail


def test_codex_exit_code_of_an_exec_event_counts_when_the_output_does_not_say_it() -> None:
    """The real run's lines with the exit code left out of the outputs' frame (as an output
    cut short says nothing of it): the `item_completed` event's code still decides."""
    lines = [line.replace("Process exited with code 127\\n", "") for line in run_lines(CODEX_COMPACT)]
    assert not any("Process exited with code 127" in line and "function_call_output" in line for line in lines)
    results, _ = codex_command_outcomes(lines)
    codes = exit_codes_events_report(numbered_records(lines))
    assert results == {call: code != 0 for call, code in codes.items()}


@pytest.mark.parametrize(
    ("agent", "name"), [("claude-code", CLAUDE_CODE_COMPACT), ("claude-code", CLAUDE_CODE_HOOK), ("codex", CODEX_COMPACT)]
)
def test_followed_line_by_line_with_restarts_the_run_imports_as_the_whole_file(agent: str, name: str) -> None:
    """A follower restarted from its saved state after every line (its exit codes waiting
    for their outputs, its answer waiting for its end) ends with what the whole file gives."""
    lines = run_lines(name)
    settled: list[Entry] = []
    follower = STREAMING_IMPORTERS[agent]()
    for number, line in enumerate(lines, start=1):
        follower.feed(number, line)
        settled += follower.take_settled()
        follower = restore_importer(STREAMING_IMPORTERS[agent], json.loads(json.dumps(follower.snapshot())))
    whole = IMPORTERS[agent](lines)
    assert [e.model_dump() for e in settled + follower.finish().entries] == [e.model_dump() for e in whole.entries]


def test_a_hooks_added_context_stands_until_the_next_compaction_and_is_counted() -> None:
    """Claude Code sends the context a SessionStart hook added (contextd's, after each
    compaction) with every request until its next compaction: the mirror holds it as
    instructions, in the figure, and the next compaction withdraws it for the new one."""
    lines = run_lines(CLAUDE_CODE_HOOK)
    added = [raw["attachment"]["content"][0] for _, raw in numbered_records(lines)
             if raw.get("attachment", {}).get("type") == "hook_additional_context"]
    assert len(added) == 2 and all(text.startswith("contextd, which keeps") for text in added)
    imported = IMPORTERS["claude-code"](lines)
    path = path_to_leaf(imported.entries, imported.leaf_id)
    asked = next(i for i, e in enumerate(path) if isinstance(e, MessageEntry) and message_text(e.message.content) == "NOTOOL what next?")
    standing = [e.text for e in standing_instructions(path[: asked + 1])]
    assert len(standing) == 1 and added[0] in standing[0] and "SessionStart hook additional context" in standing[0]
    assert [added[1] in e.text for e in standing_instructions(path)] == [True]
    # Asked before any answer since the compaction: the figure counts the hook's context.
    counts = {e.id: count_entry(e, "o200k_base") for e in path}
    before_answer = context_size(path[: asked + 1], counts, lambda n: 0)
    assert not before_answer.anchored
    [hook] = [e for e in path[: asked + 1] if isinstance(e, InstructionsEntry)]
    without = [e for e in path[: asked + 1] if e is not hook]
    assert before_answer.counted - context_size(without, counts, lambda n: 0).counted == counts[hook.id]
    assert counts[hook.id] >= count_text(added[0], "o200k_base") > 300
