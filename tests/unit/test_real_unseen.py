"""The figure right after an agent's own compaction is what the provider reports next.

For every compaction an agent wrote in a transcript of tests/fixtures/real, the transcript
itself says what the provider reported for the first answer after it. The transcript up to
that answer is imported (what a mirror holds at that moment) and its figure compared: it
must be within 15% of the report, the system prompt and tool schemas the agent sends (which
contextd never sees) included. The checks read the source files with their own small rules
(which records are compactions, answers and reports), not the importers' code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from contextd.importers import IMPORTERS, save
from contextd.model import Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store

from tests.corpus import NAMES, agent_of, read_text

TOLERANCE = 0.15


@cache
def source(name: str) -> tuple[dict[str, Any], ...]:
    """The file's records, one per line (a line that is not a JSON object reads as {})."""
    lines = read_text(name).splitlines()
    records = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            value = {}
        records.append(value if isinstance(value, dict) else {})
    return tuple(records)


@dataclass(frozen=True)
class Rules:
    """What one agent's records mean, read from the records themselves."""

    def is_compaction(self, record: dict[str, Any]) -> bool:
        raise NotImplementedError

    def answer_starts(self, record: dict[str, Any]) -> bool:
        """The record opens a model answer (the request before it is complete)."""
        raise NotImplementedError

    def reported_prompt(self, record: dict[str, Any]) -> int | None:
        """The prompt size a valid report states, if the record is one."""
        raise NotImplementedError

    def is_request(self, record: dict[str, Any]) -> bool:
        """The record is a user's typed request (not a tool result)."""
        raise NotImplementedError


class ClaudeCode(Rules):
    def is_compaction(self, record: dict[str, Any]) -> bool:
        # Older versions wrote the summary alone; newer ones a boundary, then the summary.
        return record.get("subtype") == "compact_boundary" or bool(record.get("isCompactSummary"))

    def answer_starts(self, record: dict[str, Any]) -> bool:
        return record.get("type") == "assistant" and not record.get("isSidechain")

    def reported_prompt(self, record: dict[str, Any]) -> int | None:
        message = record.get("message")
        if not self.answer_starts(record) or not isinstance(message, dict) or message.get("model") == "<synthetic>":
            return None
        usage = message.get("usage") or {}
        keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        return sum(int(usage.get(key) or 0) for key in keys) or None

    def is_request(self, record: dict[str, Any]) -> bool:
        content = (record.get("message") or {}).get("content") if record.get("type") == "user" else None
        return isinstance(content, str) or (
            isinstance(content, list) and all(isinstance(b, dict) and b.get("type") != "tool_result" for b in content)
        )


class Codex(Rules):
    def is_compaction(self, record: dict[str, Any]) -> bool:
        return record.get("type") == "compacted"

    def answer_starts(self, record: dict[str, Any]) -> bool:
        payload = record.get("payload") or {}
        return record.get("type") == "response_item" and (
            payload.get("type") != "message" or payload.get("role") == "assistant"
        )

    def reported_prompt(self, record: dict[str, Any]) -> int | None:
        payload = record.get("payload") or {}
        info = payload.get("info") if payload.get("type") == "token_count" else None
        last = (info or {}).get("last_token_usage") or {}
        return int(last.get("input_tokens") or 0) or None

    def is_request(self, record: dict[str, Any]) -> bool:
        payload = record.get("payload") or {}
        return record.get("type") == "response_item" and payload.get("role") == "user"


class Pi(Rules):
    def is_compaction(self, record: dict[str, Any]) -> bool:
        return record.get("type") == "compaction"

    def answer_starts(self, record: dict[str, Any]) -> bool:
        return record.get("type") == "message" and (record.get("message") or {}).get("role") == "assistant"

    def reported_prompt(self, record: dict[str, Any]) -> int | None:
        message = record.get("message") or {}
        if not self.answer_starts(record) or message.get("stopReason") in ("error", "aborted"):
            return None
        usage = message.get("usage") or {}
        return sum(int(usage.get(key) or 0) for key in ("input", "cacheRead", "cacheWrite")) or None

    def is_request(self, record: dict[str, Any]) -> bool:
        return record.get("type") == "message" and (record.get("message") or {}).get("role") == "user"


RULES: dict[str, Rules] = {"claude-code": ClaudeCode(), "codex": Codex(), "pi": Pi()}


@dataclass(frozen=True)
class NextReport:
    """A compaction of a transcript and the report of the first answer after it."""

    name: str
    compaction_line: int
    answer_line: int
    prompt: int
    learnable: bool
    """A report came before the compaction, in a stretch whose beginning the transcript
    holds: the file's start at a user's request, or an earlier compaction."""


def next_reports(name: str) -> list[NextReport]:
    rules, records = RULES[agent_of(name)], source(name)
    found: list[NextReport] = []
    seen_from_start = next((rules.is_request(r) for r in records if rules.answer_starts(r) or rules.is_request(r)), False)
    taught, compaction, answer = False, None, None
    for index, record in enumerate(records):
        if rules.is_compaction(record):
            compaction, answer, seen_from_start = index, None, True
            continue
        if compaction is not None and answer is None and rules.answer_starts(record):
            answer = index
        prompt = rules.reported_prompt(record)
        if prompt is None:
            continue
        if compaction is not None and answer is not None:
            found.append(NextReport(name, compaction + 1, answer + 1, prompt, taught))
            compaction = None
        taught = taught or seen_from_start
    return found


def figure_before(report: NextReport, data_dir: Path) -> int:
    """The figure of the transcript imported up to the answer (what a mirror shows then)."""
    lines = read_text(report.name).splitlines()[: report.answer_line - 1]
    session_id, _ = save(IMPORTERS[agent_of(report.name)](lines), data_dir, workspace="/ws", name=None)
    return SessionManager(Store(data_dir), Settings(), SilentEvents()).get(session_id).tokens


def reports_of(agent: str) -> list[NextReport]:
    return [report for name in NAMES if agent_of(name) == agent for report in next_reports(name)]


def test_the_figure_after_an_agents_compaction_is_its_next_report(tmp_path):
    # Every agent's transcripts, those of an agent whose corpus holds no such compaction (pi,
    # today) included: the test below keeps this from passing empty.
    reports = [report for agent in sorted(RULES) for report in reports_of(agent) if report.learnable]
    misses = []
    for number, report in enumerate(reports):
        figure = figure_before(report, tmp_path / str(number))
        if abs(figure - report.prompt) > TOLERANCE * report.prompt:
            misses.append(f"{report.name} line {report.answer_line}: figure {figure:,}, reported {report.prompt:,}")
    assert not misses


def test_the_corpus_holds_compactions_to_check():
    """The check above is not empty: Claude Code and Codex transcripts compact."""
    assert {agent for agent in RULES if any(r.learnable for r in reports_of(agent))} >= {"claude-code", "codex"}


def test_a_compaction_with_nothing_learned_before_it_is_never_overstated(tmp_path):
    """A transcript cut from a longer session (it opens with a tool result) teaches nothing
    about what the agent sends unseen: its first reports also hold history the file lacks.
    The figure then counts what it knows, never a guess above the provider's report."""
    unlearnable = [report for agent in RULES for report in reports_of(agent) if not report.learnable]
    assert unlearnable
    for number, report in enumerate(unlearnable):
        assert figure_before(report, tmp_path / str(number)) <= report.prompt
