"""Transcripts the pinned real agents wrote in this project's agent tests (tests/agents/runs/,
described in its README), imported and followed as a user's would be."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from contextd.compaction.context import visible_entries
from contextd.importers import IMPORTERS, STREAMING_IMPORTERS
from contextd.model import CompactionEntry, Entry, MessageEntry, message_text

RUNS = Path(__file__).parents[1] / "agents" / "runs"
CLAUDE_CODE_COMPACT = "claude-code-2.1.328-compact.jsonl.gz"
"""Claude Code 2.1.328: a tool call, `/compact`, then two plain turns."""
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


def test_claude_code_bookkeeping_records_of_2_1_are_known() -> None:
    """2.1.x writes requests, attachments, costs and flags among the conversation: each is
    reported as left out by design, none as an unknown record."""
    imported = IMPORTERS["claude-code"](run_lines(CLAUDE_CODE_COMPACT))
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
