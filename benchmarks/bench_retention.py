"""What survives compaction: planted facts and tokens, through the real daemon.

    python benchmarks/bench_retention.py [--sizes 60000,120000,200000,300000] [--seed 0]
        [--window 32768 --reserve 8192 --keep 8000]

Generated coding sessions of 60k to 300k tokens (seeded, see coding_session.py) carry
planted facts: user constraints, assistant decisions, files edited once, and exact error
strings from tracebacks in tool results. Each session is appended message by message to a
real `contextd serve` with the default offline summarizer and automatic compaction; the
model's window is small (`--window`, via the `models` setting), so the threshold compacts
many times. After each append that crosses the threshold the client waits for the
compaction to finish, as an agent would before its next model call.

At the end of the run, and again after one final manual `contextd/compact`, it reads the
rebuilt context (`contextd/session/context`) and checks which facts are still in it,
verbatim. "Needed the summary" counts the facts whose message is no longer in the context
itself, so only the summary could have kept them.
It also checks the status the summary gives the planted errors that needed it: an error
fixed later should not be listed under "### Blocked", one never fixed should.
Targets: at least 90% of facts kept, at least 70% fewer tokens (appended vs final context).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from coding_session import FACT_KINDS, GeneratedSession, PlantedFact, generate_session
from live_daemon import model_settings, running_daemon
from contextd.compaction.context import COMPACTION_PREAMBLE
from contextd.tokens import count_text
from contextd_client import ContextdClient, ContextdError
from report import load_average, table_header

SIZES = (60_000, 120_000, 200_000, 300_000)
TOKENS_PER_FACT_OF_A_KIND = 25_000
BLOCKED_SECTION = re.compile(r"^### Blocked\n(.*?)(?=^#|\Z)", re.MULTILINE | re.DOTALL)
TARGET_KEPT = 0.90
NOTHING_TO_COMPACT = -32005
TARGET_REDUCTION = 0.70


@dataclass
class Snapshot:
    """The rebuilt context at one moment and the facts found in it."""

    tokens: int
    summary_tokens: int
    kept: list[PlantedFact]
    needed_summary: list[PlantedFact]
    kept_by_summary: list[PlantedFact]
    listed_blocked: list[PlantedFact]
    """Errors that needed the summary and are listed under its "### Blocked"."""


@dataclass
class SessionRun:
    session: GeneratedSession
    compactions: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    seconds: float = 0.0
    at_end: Snapshot | None = None
    after_final: Snapshot | None = None


def texts_of(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    texts = []
    for block in content or []:
        if block.get("type") == "toolCall":
            texts.append(json.dumps(block["arguments"], ensure_ascii=False))
        else:
            texts.append(block.get("text") or block.get("thinking") or "")
    return texts


def snapshot(context: dict[str, Any], facts: list[PlantedFact]) -> Snapshot:
    summaries, verbatim = [], []
    for message in context["messages"]:
        text = "\n".join(texts_of(message))
        is_summary = message["role"] == "user" and text.startswith(COMPACTION_PREAMBLE)
        (summaries if is_summary else verbatim).append(text)
    summary, rest = "\n".join(summaries), "\n".join(verbatim)
    needed = [fact for fact in facts if fact.text not in rest]
    blocked = "\n".join(BLOCKED_SECTION.findall(summary))
    return Snapshot(
        tokens=context["tokens"],
        summary_tokens=count_text(summary, "o200k_base"),
        kept=[fact for fact in facts if fact.text in summary or fact.text in rest],
        needed_summary=needed,
        kept_by_summary=[fact for fact in needed if fact.text in summary],
        listed_blocked=[fact for fact in needed if fact.kind == "error" and fact.text in blocked],
    )


async def replay(client: ContextdClient, session: GeneratedSession) -> SessionRun:
    run = SessionRun(session)
    events: list[tuple[str, dict[str, Any]]] = []
    opened = await client.session_open(name="retention")
    session_id = opened["sessionId"]
    remove = client.on(None, lambda method, params: events.append((method, params)))
    started = time.perf_counter()
    try:
        for message in session.messages:
            seen = len(events)
            reply = await client.append(session_id, [message])
            if reply["usage"]["tokens"] >= reply["usage"]["thresholdTokens"]:
                await settle_compaction(client, session_id, events, seen, run)
        run.seconds = time.perf_counter() - started
        run.at_end = snapshot(await client.context(session_id), session.facts)
        try:
            await client.compact(session_id)
        except ContextdError as error:
            if error.code != NOTHING_TO_COMPACT:
                raise
        run.after_final = snapshot(await client.context(session_id), session.facts)
    finally:
        remove()
    return run


async def settle_compaction(
    client: ContextdClient,
    session_id: str,
    events: list[tuple[str, dict[str, Any]]],
    seen: int,
    run: SessionRun,
) -> None:
    """Wait for the compaction the last append started; the daemon starts it before it
    answers the next request, so a state reply without a compactionStarted means none."""
    await client.state(session_id)
    started = [p for m, p in events[seen:] if m == "contextd/compactionStarted" and p["sessionId"] == session_id]
    if not started:
        run.skipped += 1
        return
    compaction_id = started[0]["compactionId"]
    finished = next(
        (p for m, p in events[seen:] if m == "contextd/compactionFinished" and p["compactionId"] == compaction_id),
        None,
    ) or await client.wait_for(
        "contextd/compactionFinished", lambda p: p["compactionId"] == compaction_id, timeout=120
    )
    run.compactions.append(finished)


def share(part: list[Any], whole: list[Any]) -> str:
    return f"{len(part)}/{len(whole)} ({len(part) / len(whole):.0%})" if whole else "0/0"


def context_cell(snap: Snapshot, appended: int) -> str:
    return f"{snap.tokens:,} (-{1 - snap.tokens / appended:.0%})"


def of_kind(facts: list[PlantedFact], kind: str) -> list[PlantedFact]:
    return [fact for fact in facts if fact.kind == kind]


def report(runs: list[SessionRun], args: argparse.Namespace) -> None:
    load = load_average()
    print(f"fact retention and token reduction, offline summarizer; window {args.window:,}, "
          f"reserveTokens {args.reserve:,}, keepRecentTokens {args.keep:,}, pruning defaults; "
          f"{os.cpu_count()} cores, load average {load}; {date.today().isoformat()}")
    print("'kept': planted facts found verbatim in the rebuilt context; 'via summary': of the "
          "facts whose own message had left the context, those the summary kept\n")
    print(table_header(
        "appended tokens", "messages", "auto compactions", "run s", "context at end", "kept", "via summary",
        "after a final compact", "kept", "via summary", "summary tokens", text_columns=0,
    ))
    for run in runs:
        appended, end, final = run.session.total_tokens, run.at_end, run.after_final
        assert end is not None and final is not None
        print(f"| {appended:,} | {len(run.session.messages):,} | {len(run.compactions)} | {run.seconds:.1f} "
              f"| {context_cell(end, appended)} | {share(end.kept, run.session.facts)} "
              f"| {share(end.kept_by_summary, end.needed_summary)} | {context_cell(final, appended)} "
              f"| {share(final.kept, run.session.facts)} | {share(final.kept_by_summary, final.needed_summary)} "
              f"| {final.summary_tokens:,} |")
    report_kinds(runs)
    report_error_status(runs)
    report_compactions(runs)
    report_lost(runs)
    verdict(runs)


def report_kinds(runs: list[SessionRun]) -> None:
    print("\nby kind, all sessions\n")
    print(table_header("kind", "kept at end", "via summary", "kept after a final compact", "via summary"))
    for kind in FACT_KINDS:
        planted = [f for run in runs for f in of_kind(run.session.facts, kind)]
        cells = []
        for snaps in ([run.at_end for run in runs], [run.after_final for run in runs]):
            cells += [
                share([f for s in snaps for f in of_kind(s.kept, kind)], planted),
                share([f for s in snaps for f in of_kind(s.kept_by_summary, kind)],
                      [f for s in snaps for f in of_kind(s.needed_summary, kind)]),
            ]
        print(f"| {kind} | " + " | ".join(cells) + " |")


def report_error_status(runs: list[SessionRun]) -> None:
    """Whether the summary calls a planted error open or not, against what happened."""
    print("\nplanted errors kept only by the summary, after a final compact: listed under Blocked\n")
    print(table_header("error was", "listed under Blocked", "elsewhere in the summary"))
    for label, fixed in (("fixed later in the session", True), ("never fixed", False)):
        errors = [f for run in runs for f in of_kind(run.after_final.kept_by_summary, "error")
                  if f.fixed is fixed]
        blocked = [f for run in runs for f in run.after_final.listed_blocked if f.fixed is fixed]
        print(f"| {label} | {share(blocked, errors)} | {len(errors) - len(blocked)} |")


def report_compactions(runs: list[SessionRun]) -> None:
    print("\ncompactions (tokensBefore -> tokensAfter, k tokens):")
    for run in runs:
        steps = ", ".join(f"{c['tokensBefore'] / 1000:.1f}->{c['tokensAfter'] / 1000:.1f}"
                          for c in run.compactions if c["outcome"] == "compacted")
        failed = Counter(c["outcome"] for c in run.compactions if c["outcome"] != "compacted")
        extra = f"; not compacted: {dict(failed)}" if failed else ""
        extra += f"; threshold crossed without a compaction: {run.skipped}" if run.skipped else ""
        print(f"- {run.session.total_tokens / 1000:.0f}k: {steps}{extra}")


def report_lost(runs: list[SessionRun]) -> None:
    print("\nlost facts (session, kind, planted at message, text):")
    for run in runs:
        assert run.after_final is not None and run.at_end is not None
        for fact in run.session.facts:
            if fact not in run.after_final.kept:
                when = "lost after the final compact only" if fact in run.at_end.kept else "lost"
                print(f"- {run.session.total_tokens / 1000:.0f}k, {fact.kind}, "
                      f"{fact.message_index}/{len(run.session.messages)}, {when}: {fact.text}")


def verdict(runs: list[SessionRun]) -> None:
    for label, snaps in (("at the end of the run", [run.at_end for run in runs]),
                         ("after a final compact", [run.after_final for run in runs])):
        kept = sum(len(s.kept) for s in snaps) / sum(len(run.session.facts) for run in runs)
        worst = min(1 - s.tokens / run.session.total_tokens for s, run in zip(snaps, runs))
        print(f"\n{label}: facts kept {kept:.0%} (target {TARGET_KEPT:.0%}: "
              f"{'met' if kept >= TARGET_KEPT else 'NOT met'}); smallest reduction {worst:.0%} "
              f"(target {TARGET_REDUCTION:.0%}: {'met' if worst >= TARGET_REDUCTION else 'NOT met'})")


async def run_all(args: argparse.Namespace) -> None:
    settings = model_settings(args.window, reserveTokens=args.reserve, keepRecentTokens=args.keep)
    sizes = [int(size) for size in args.sizes.split(",")]
    sessions = [
        generate_session(seed=tokens + args.seed, tokens=tokens,
                         facts_per_kind=min(15, max(3, tokens // TOKENS_PER_FACT_OF_A_KIND)))
        for tokens in sizes
    ]
    runs = []
    async with running_daemon(settings) as client:
        for session in sessions:
            runs.append(await replay(client, session))
    report(runs, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(size) for size in SIZES),
                        help="session lengths in tokens (facts: one of each kind per 25k, 3 to 15)")
    parser.add_argument("--seed", type=int, default=0, help="added to each session's seed (its length)")
    parser.add_argument("--window", type=int, default=32_768, help="the model's context window")
    parser.add_argument("--reserve", type=int, default=8_192, help="compaction.reserveTokens")
    parser.add_argument("--keep", type=int, default=8_000, help="compaction.keepRecentTokens")
    asyncio.run(run_all(parser.parse_args()))


if __name__ == "__main__":
    main()
