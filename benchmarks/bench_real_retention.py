"""What a developer needs survives compaction of real agent sessions, and nothing stale
is presented as current.

    python benchmarks/bench_real_retention.py [--keep 4000] [--later 8] [--only NAME] [--show]

For each transcript of `tests/fixtures/real/` with a facts file in `benchmarks/real_facts/`
(written by reading the transcript, before looking at any summary of it), the transcript is
imported as a contextd session and compacted with the offline summarizer twice: first with
the last `--later` messages (and at least keepRecentTokens/2 tokens) not yet appended, then again once they are (the second summary
updates the first). Compaction is the pure core (`prepare_compaction`), as the daemon runs it.

After each compaction the context is the standing instructions (AGENTS.md, CLAUDE.md, an
environment context: never summarized, always sent), the summary and the kept tail. A fact
counts when the context before the compaction held it (one of its strings, case and spacing
aside); it is kept "in summary" when the summary holds it, "in tail" when only the kept
messages do, "in instr" when only the standing instructions do, else lost. A stale item (a
fixed error, a rejected hypothesis, a reverted decision) is presented as current when the
summary shows it under Goal, In Progress, Blocked or Next Steps, once the transcript has
made it stale (its optional `staleWhen` strings mark that moment).

Targets: >= 85% of facts kept after one compaction on the autonomous single-request runs
(`"autonomous": true` in the corpus MANIFEST), >= 90% after each compaction on the rest;
no stale item presented as current; each summary within its token budget.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextd.compaction.context import build_context, instructions_text
from contextd.compaction.request import max_summary_tokens
from contextd.compaction.prepare import (
    CompactionPreparation,
    assemble_compaction_summary,
    prepare_compaction,
)
from contextd.compaction.serialize import serialize_conversation
from contextd.importers import IMPORTERS
from contextd.model import (
    CompactionEntry,
    Entry,
    MessageEntry,
    Settings,
    SummarizerInfo,
)
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.checkpoint import count_tokens
from contextd.summarizers.offline import OfflineSummarizer, summarize_offline
from contextd.tokens import count_entry

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.corpus
from tests.corpus import MANIFEST, read_text  # noqa: E402

FACTS = Path(__file__).resolve().parent / "real_facts"
ENCODING = "o200k_base"
# (first, second compaction) targets: autonomous single-request runs keep >= 85% after one
# compaction; conversational sessions >= 90% after each.
TARGETS = {"autonomous": (0.85, 0.85), "conversational": (0.90, 0.90)}
AUTONOMOUS = {file.removesuffix(".jsonl.gz") for file, item in MANIFEST.items() if item.get("autonomous")}
CURRENT_SECTIONS = ("goal", "in progress", "blocked", "next steps")
HEADING = re.compile(r"^#{2,3} (.+?)\s*$", re.MULTILINE)


AGENT_SECTION = re.compile(
    r"^\s*(?:#{1,3}\s*)?\d+\.\s+(Primary Request and Intent|Key Technical Concepts|Files and Code Sections|"
    r"Errors and fixes|Problem Solving|All user messages|Pending Tasks|Current Work|Optional Next Step)\b.*$",
    re.MULTILINE | re.IGNORECASE,
)
"""The sections of Claude Code's own compaction summary."""
AGENT_CURRENT = ("primary request and intent", "pending tasks", "current work", "optional next step")
"""Its sections that present things as current, as Goal / In Progress / Next Steps do ours."""
READABLE_AGENT_SUMMARIES = ("claude-code", "pi")
"""Agents whose own compaction summary is readable text (Codex's is stored encrypted)."""
AGENT_SIZE_RATIO = 1.5


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def found(strings: list[str], text: str) -> bool:
    haystack = normalized(text)
    return any(normalized(s) in haystack for s in strings)


def current_sections(summary: str) -> str:
    """The text of the summary's sections that present things as current."""
    parts: list[str] = []
    headings = list(HEADING.finditer(summary))
    for index, heading in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(summary)
        if heading.group(1).strip().lower() in CURRENT_SECTIONS:
            parts.append(summary[heading.end():end])
    return "\n".join(parts)


def agent_current_sections(summary: str) -> str:
    """The text of an agent's own summary under its sections that present things as current."""
    heads = list(AGENT_SECTION.finditer(summary))
    return "\n".join(
        summary[head.end():heads[i + 1].start() if i + 1 < len(heads) else len(summary)]
        for i, head in enumerate(heads)
        if head.group(1).lower() in AGENT_CURRENT
    )


def load_transcript(name: str, agent: str) -> tuple[list[Entry], str | None]:
    imported = IMPORTERS[agent](read_text(f"{name}.jsonl.gz").splitlines())
    return imported.entries, imported.leaf_id


def path_to(entries: list[Entry], leaf: str | None) -> list[Entry]:
    by_id = {entry.id: entry for entry in entries}
    path: list[Entry] = []
    while leaf is not None:
        entry = by_id[leaf]
        path.append(entry)
        leaf = entry.parentId
    return path[::-1]


def context_text(path: list[Entry], tokens: dict[str, int]) -> str:
    """What the model sees at the end of `path`: the standing instructions and the messages."""
    messages = serialize_conversation(item.message for item in build_context(path, tokens))
    return "\n\n".join(filter(None, [instructions_text(path), messages]))


@dataclass
class Measure:
    present: int
    in_summary: int
    in_tail: int
    in_instructions: int
    stale_current: list[str]
    tokens_before: int
    tokens_after: int
    summary_tokens: int
    budget: int

    @property
    def kept(self) -> float:
        kept = self.in_summary + self.in_tail + self.in_instructions
        return kept / self.present if self.present else 1.0

    @property
    def lost(self) -> int:
        return self.present - self.in_summary - self.in_tail - self.in_instructions


async def compact(
    path: list[Entry], tokens: dict[str, int], settings: Settings, number: int
) -> tuple[CompactionEntry, CompactionPreparation]:
    preparation = prepare_compaction(path, tokens, settings)
    assert isinstance(preparation, CompactionPreparation), preparation
    summarizer = OfflineSummarizer()
    history = turn = None
    if preparation.history_request:
        history = await summarizer.summarize(preparation.history_request)
    if preparation.turn_prefix_request:
        turn = await summarizer.summarize(preparation.turn_prefix_request)
    summary = assemble_compaction_summary(
        preparation, history_summary=history, turn_prefix_summary=turn
    )
    entry = CompactionEntry(
        id=f"bench-compaction-{number}",
        parentId=path[-1].id,
        timestamp=path[-1].timestamp,
        summary=summary,
        firstKeptEntryId=preparation.first_kept_entry_id,
        tokensBefore=preparation.tokens_before,
        tokensAfter=preparation.tokens_after,
        reason="manual",
        summarizer=SummarizerInfo(provider="offline"),
        details=preparation.files,
    )
    return entry, preparation


def _stale_by_then(item: dict[str, Any], before: str, tail: str) -> bool:
    """Whether the summarized messages made the item stale: its `staleWhen` string (the
    fix, the reversal) came before the compaction and is not only in the kept tail, where
    the next session reads it anyway."""
    when = item.get("staleWhen")
    if when is None:
        return True
    return found(when, before) and not found(when, tail)


def measure(
    facts: dict[str, Any],
    before: str,
    entry: CompactionEntry,
    preparation: CompactionPreparation,
    after_path: list[Entry],
    tokens: dict[str, int],
) -> tuple[Measure, list[str]]:
    after = build_context(after_path, tokens)
    tail = serialize_conversation(item.message for item in after[1:])
    instructions = instructions_text(after_path) or ""
    present = in_summary = in_tail = in_instructions = 0
    lost: list[str] = []
    for fact in facts["facts"]:
        if not found(fact["any"], before):
            continue
        present += 1
        if found(fact["any"], entry.summary):
            in_summary += 1
        elif found(fact["any"], tail):
            in_tail += 1
        elif found(fact["any"], instructions):
            in_instructions += 1
        else:
            lost.append(fact["fact"])
    current = current_sections(entry.summary)
    # A stale item counts once it was stale: `staleWhen` is a string whose appearance marks
    # the moment (the fix, the reversal); before it, the item was still current.
    stale = [
        item["item"]
        for item in facts.get("stale", [])
        if found(item["any"], current) and _stale_by_then(item, before, tail)
    ]
    budget = sum(r.max_tokens for r in preparation.requests)
    return Measure(
        present=present,
        in_summary=in_summary,
        in_tail=in_tail,
        in_instructions=in_instructions,
        stale_current=stale,
        tokens_before=preparation.tokens_before,
        tokens_after=sum(tokens.get(item.entry_id, 0) for item in after[1:])
        + count_entry(entry, ENCODING),
        summary_tokens=count_tokens(entry.summary),
        budget=budget,
    ), lost


def later_start(path: list[Entry], tokens: dict[str, int], messages: int, min_tokens: int) -> int:
    """Where the messages appended between the two compactions begin: at least `messages`
    messages and `min_tokens` tokens before the end, so that the second compaction has
    something new to summarize."""
    seen = added = 0
    for index in range(len(path) - 1, 0, -1):
        if isinstance(path[index], MessageEntry):
            seen += 1
            added += tokens[path[index].id]
            if seen >= messages and added >= min_tokens:
                return index
    return len(path)


async def run_one(facts: dict[str, Any], keep: int, later: int, show: bool) -> list[Measure]:
    entries, leaf = load_transcript(facts["transcript"], facts["agent"])
    path = path_to(entries, leaf)
    tokens = {entry.id: count_entry(entry, ENCODING) for entry in path}
    settings = Settings.model_validate({"compaction": {"keepRecentTokens": keep}})
    split = later_start(path, tokens, later, keep // 2)
    first_part = path[:split]
    results: list[Measure] = []
    # The facts a compaction could keep are those the original messages held by then, not
    # those an earlier summary still holds: a fact lost once stays lost.
    stages = ((first_part, path[:split], path[split:]), (None, path, []))
    compacted = first_part
    for number, (head, original, rest) in enumerate(stages, 1):
        current = head if head is not None else compacted
        before = context_text(original, tokens)
        entry, preparation = await compact(current, tokens, settings, number)
        tokens[entry.id] = count_entry(entry, ENCODING)
        after_path = [*current, entry]
        result, lost = measure(facts, before, entry, preparation, after_path, tokens)
        results.append(result)
        if show:
            print(f"\n--- {facts['transcript']} compaction {number} ---\n{entry.summary}")
        if lost:
            print(f"  {facts['transcript']} #{number} lost: " + "; ".join(lost), file=sys.stderr)
        if result.stale_current:
            print(f"  {facts['transcript']} #{number} stale as current: "
                  + "; ".join(result.stale_current), file=sys.stderr)
        if rest:
            rest = [rest[0].model_copy(update={"parentId": entry.id}), *rest[1:]]
        compacted = [*after_path, *rest]
    return results


@dataclass
class AgentComparison:
    """One of the agent's own compactions beside contextd's summary of the same span."""

    index: int
    present: int
    agent_facts: int
    agent_tokens: int
    agent_stale: int
    ours_facts: int
    ours_tokens: int
    ours_stale: int
    fitted_facts: int
    fitted_tokens: int
    fitted_stale: int


def compare_with_agent(facts: dict[str, Any], reserve: int = 16384) -> list[AgentComparison]:
    """For every compaction the agent wrote itself (readable ones only), contextd's offline
    summary of the same span, from the same earlier summary: at its default budget, and at
    AGENT_SIZE_RATIO times the agent's size. Facts count when the context before the
    agent's compaction held them; stale items when shown as current once stale."""
    entries, leaf = load_transcript(facts["transcript"], facts["agent"])
    path = path_to(entries, leaf)
    tokens = {entry.id: count_entry(entry, ENCODING) for entry in path}
    rows: list[AgentComparison] = []
    previous: int | None = None
    for index, entry in enumerate(path):
        if not isinstance(entry, CompactionEntry):
            continue
        start, earlier = (0, None) if previous is None else (previous + 1, path[previous])
        previous = index
        if entry.summarizer is None or entry.summarizer.provider not in READABLE_AGENT_SUMMARIES:
            continue
        before = context_text(path[:index], tokens)
        present = [f for f in facts["facts"] if found(f["any"], before)]
        messages = [e.message for e in path[start:index] if isinstance(e, MessageEntry)]
        agent_tokens = count_tokens(entry.summary)

        def ours(max_tokens: int) -> str:
            return summarize_offline(SummaryRequest(
                kind="compaction", messages=messages, system_prompt="", prompt="", max_tokens=max_tokens,
                previous_summary=earlier.summary if isinstance(earlier, CompactionEntry) else None,
            ))

        def stale(current: str) -> int:
            return sum(
                1 for item in facts.get("stale", []) if found(item["any"], current) and _stale_by_then(item, before, "")
            )

        default, fitted = ours(max_summary_tokens(reserve)), ours(int(agent_tokens * AGENT_SIZE_RATIO))
        rows.append(AgentComparison(
            index=index, present=len(present),
            agent_facts=sum(found(f["any"], entry.summary) for f in present), agent_tokens=agent_tokens,
            agent_stale=stale(agent_current_sections(entry.summary)),
            ours_facts=sum(found(f["any"], default) for f in present), ours_tokens=count_tokens(default),
            ours_stale=stale(current_sections(default)),
            fitted_facts=sum(found(f["any"], fitted) for f in present), fitted_tokens=count_tokens(fitted),
            fitted_stale=stale(current_sections(fitted)),
        ))
    return rows


def print_agent_comparisons(files: list[Path], only: str | None) -> int:
    """The table of the agent's own compactions beside contextd's; returns how many miss the
    target (at least the agent's facts, at most 1.5x its size, fewer stale items)."""
    print(f"\nthe agent's own compactions beside contextd's offline summary of the same span "
          f"(default budget, and {AGENT_SIZE_RATIO}x the agent's size)\n")
    print(f"{'transcript':30} {'entry':>5} {'facts':>5} | {'agent':>5} {'tok':>5} {'stale':>5} | "
          f"{'ours':>5} {'tok':>5} {'stale':>5} | {'1.5x':>5} {'tok':>5} {'stale':>5}")
    missed = 0
    for file in files:
        facts = json.loads(file.read_text())
        if only and facts["transcript"] != only:
            continue
        for row in compare_with_agent(facts):
            print(f"{facts['transcript']:30} {row.index:>5} {row.present:>5} | {row.agent_facts:>5} "
                  f"{row.agent_tokens:>5} {row.agent_stale:>5} | {row.ours_facts:>5} {row.ours_tokens:>5} "
                  f"{row.ours_stale:>5} | {row.fitted_facts:>5} {row.fitted_tokens:>5} {row.fitted_stale:>5}")
            missed += not (row.fitted_facts >= row.agent_facts and row.fitted_stale <= row.agent_stale
                           and (row.fitted_stale < row.agent_stale or row.agent_stale == 0))
    print(f"agent compactions where contextd at {AGENT_SIZE_RATIO}x keeps fewer facts or more stale items: "
          f"{missed} (target 0)")
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=int, default=4000, help="keepRecentTokens")
    parser.add_argument("--later", type=int, default=8, help="messages appended between the two compactions")
    parser.add_argument("--only", help="one transcript name")
    parser.add_argument("--show", action="store_true", help="print the summaries")
    args = parser.parse_args()
    files = sorted(FACTS.glob("*.json"))
    print(f"keepRecentTokens {args.keep}; second compaction after {args.later} more messages\n")
    header = (f"{'transcript':34} {'#':>1} {'facts':>5} {'summary':>7} {'tail':>4} {'instr':>5} {'lost':>4} "
              f"{'kept':>5} {'stale':>5} {'before':>7} {'after':>6} {'summ':>5} {'budget':>6}")
    print(header)
    worst: dict[tuple[str, int], float] = {}
    stale_total = 0
    over_budget = 0
    largest = 0
    for file in files:
        facts = json.loads(file.read_text())
        if args.only and facts["transcript"] != args.only:
            continue
        for number, m in enumerate(asyncio.run(run_one(facts, args.keep, args.later, args.show)), 1):
            print(f"{facts['transcript']:34} {number:>1} {m.present:>5} {m.in_summary:>7} {m.in_tail:>4} "
                  f"{m.in_instructions:>5} {m.lost:>4} {m.kept:>5.0%} {len(m.stale_current):>5} {m.tokens_before:>7} "
                  f"{m.tokens_after:>6} {m.summary_tokens:>5} {m.budget:>6}")
            kind = "autonomous" if facts["transcript"] in AUTONOMOUS else "conversational"
            key = (f"{facts['agent']} {kind}", number)
            worst[key] = min(worst.get(key, 1.0), m.kept)
            stale_total += len(m.stale_current)
            over_budget += m.summary_tokens > m.budget
            largest = max(largest, m.summary_tokens)
    print()
    for (group, number), kept in sorted(worst.items()):
        target = TARGETS[group.split()[1]][number - 1]
        verdict = "met" if kept >= target else "NOT met"
        print(f"{group:26} compaction {number}: worst {kept:.0%} (target {target:.0%}) {verdict}")
    print(f"stale items presented as current: {stale_total} (target 0)")
    print(f"summaries over budget: {over_budget} (target 0)")
    print(f"largest summary: {largest} tokens (target <= 6000)")
    print_agent_comparisons(files, args.only)


if __name__ == "__main__":
    main()
