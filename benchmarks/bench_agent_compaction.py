"""What a model sees after an agent's own compaction, alone and with what contextd adds, and
what `history_search` finds of the rest.

    python benchmarks/bench_agent_compaction.py [--max-tokens 2000] [--limit 10] [--show]

For each transcript of `tests/fixtures/real/` that holds an agent's own compaction and has a
facts file in `benchmarks/real_facts/` (written by reading the transcript, before looking at
any summary of it), every such compaction is measured on the facts the context held just
before it (one of a fact's strings, case and spacing aside):
- agent: the share the model sees after the agent's compaction alone (its summary, what it
  kept, the standing instructions);
- + contextd: the same with the context `contextd hook` adds (contextd's offline summary of
  the span, the agent's messages of the span, and contextd's summary of the span before when
  the agent's summary of it holds almost nothing; less what the model still sees after the
  compaction, within --max-tokens; --show prints it and the facts still missing);
- search: the share a `history_search` with the fact's key words finds (one of the top
  --limit hits holds one of its strings), on the SQLite FTS5 index the daemon uses.
Goals: >= 90% with contextd, >= 95% found by search.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_real_retention import (  # noqa: E402 -- a sibling script's helpers
    FACTS,
    context_text,
    found,
    load_transcript,
)
from contextd.compaction.prepare import NothingToCompact, offline_summary, prepare_span  # noqa: E402
from contextd.history import HistoryIndex, entry_text  # noqa: E402
from contextd.model import CompactionEntry, Settings  # noqa: E402
from contextd.store import EntryTree  # noqa: E402
from contextd.tokens import count_entry  # noqa: E402
from contextd_client.agents.added_context import added_context, holds_almost_nothing  # noqa: E402

import json  # noqa: E402

ENCODING = "o200k_base"
GOALS = {"with contextd": 0.90, "search": 0.95}


@dataclass
class Row:
    name: str
    compaction: int
    facts: int
    agent: int
    with_contextd: int
    searched: int


def measure(name: str, agent: str, facts: list[dict], max_tokens: int, limit: int, show: bool) -> list[Row]:
    entries, _ = load_transcript(name, agent)
    tree = EntryTree()
    for entry in entries:
        tree.add(entry)
    tokens = {entry.id: count_entry(entry, ENCODING) for entry in entries}
    compactions = [e for e in entries if isinstance(e, CompactionEntry)]  # imported: all the agent's own
    index_dir = tempfile.mkdtemp(prefix="bench-history-")
    index = HistoryIndex(Path(index_dir))
    index.sync(name, "bench", tree.entries)
    texts = {entry.id: (found_text.text if (found_text := entry_text(entry)) else "") for entry in entries}
    rows = []
    for number, compaction in enumerate(compactions, 1):
        before = tree.path_to(compaction.parentId)
        before_text = context_text(before, tokens)
        held = [fact for fact in facts if found(fact["any"], before_text)]
        after_text = context_text(tree.path_to(compaction.id), tokens)
        prepared = prepare_span(before, tokens, Settings(), compaction.firstKeptEntryId)
        ours = summary_of(before, tokens, compaction.firstKeptEntryId)
        previous = compactions[number - 2] if number > 1 else None
        earlier = ""
        if previous is not None and holds_almost_nothing(previous.summary):
            earlier = summary_of(tree.path_to(previous.parentId), tokens, previous.firstKeptEntryId)
        span = [] if isinstance(prepared, NothingToCompact) else span_rows(entries, prepared.summarize_entry_ids)
        added = added_context(ours, after_text, max_tokens, span_entries=span, earlier_span=earlier) if ours else ""
        before_ids = {entry.id for entry in before}
        searched = 0
        for fact in held:
            hits = index.search(name, " ".join(fact["any"]), limit * 4)
            on_path = [hit for hit in hits if hit.entry_id in before_ids][:limit]
            searched += any(found(fact["any"], texts[hit.entry_id]) for hit in on_path)
        row = Row(
            name, number, len(held),
            sum(found(f["any"], after_text) for f in held),
            sum(found(f["any"], after_text + "\n" + added) for f in held),
            searched,
        )
        rows.append(row)
        if show:
            print(f"--- {name} #{number}: added context ---\n{added}\n")
            missing = [f["fact"] for f in held if not found(f["any"], after_text + "\n" + added)]
            print(f"missing: {missing}\n")
    index.close()
    return rows


def summary_of(path: list, tokens: dict[str, int], first_kept: str | None) -> str:
    """contextd's offline summary of `path` up to `first_kept`, as `contextd/history/summarize`
    gives it ("" when nothing comes before it)."""
    prepared = prepare_span(path, tokens, Settings(), first_kept)
    return "" if isinstance(prepared, NothingToCompact) else offline_summary(prepared)


def span_rows(entries: list, ids: list[str]) -> list[dict]:
    """The span's entries as `contextd/history/get` gives them to the hook."""
    wanted = set(ids)
    return [
        {"role": text.role, "tool": text.tool, "text": text.text}
        for entry in entries
        if entry.id in wanted and (text := entry_text(entry))
    ]


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "   - "


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-tokens", type=int, default=2000, help="the budget of the added context")
    parser.add_argument("--limit", type=int, default=10, help="history_search hits looked at")
    parser.add_argument("--show", action="store_true", help="print each added context")
    args = parser.parse_args()
    rows: list[Row] = []
    for path in sorted(FACTS.glob("*.json")):
        described = json.loads(path.read_text())
        try:
            rows += measure(described["transcript"], described["agent"], described["facts"],
                            args.max_tokens, args.limit, args.show)
        except FileNotFoundError as error:
            print(f"skipped {described['transcript']}: {error}", file=sys.stderr)
    print(f"{'transcript':<34} {'#':>2} {'facts':>5} {'agent':>7} {'+contextd':>9} {'search':>7}")
    for row in rows:
        print(f"{row.name:<34} {row.compaction:>2} {row.facts:>5} {share(row.agent, row.facts):>7} "
              f"{share(row.with_contextd, row.facts):>9} {share(row.searched, row.facts):>7}")
    facts = sum(row.facts for row in rows)
    totals = {
        "agent": sum(row.agent for row in rows),
        "with contextd": sum(row.with_contextd for row in rows),
        "search": sum(row.searched for row in rows),
    }
    print(f"{'all':<34} {len(rows):>2} {facts:>5} {share(totals['agent'], facts):>7} "
          f"{share(totals['with contextd'], facts):>9} {share(totals['search'], facts):>7}")
    met = facts > 0 and all(totals[name] >= goal * facts for name, goal in GOALS.items())
    print("goals (>= 90% with contextd, >= 95% by search):", "met" if met else "NOT met")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
