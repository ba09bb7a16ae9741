"""`contextd demo`: a long coding session replayed into a small window, compacting as it goes.

No API key and no network: the daemon summarizes with its offline summarizer (unless
`--settings` chooses another), counts tokens itself, and the session lands in a fresh data
directory (or `--data-dir`) that stays for exploring afterwards.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from contextd_client import render
from contextd_client import types as t
from contextd_client.client import ContextdClient
from contextd_client.replay import UsageDisplay, read_messages, replay, steps

DEMO_MODEL = "contextd-demo"
DEMO_FILE = "session.jsonl"
OUTPUT_RESERVE_TOKENS = 4096
SUMMARY_LINES_SHOWN = 40


def demo_messages() -> list[dict[str, Any]]:
    text = resources.files("contextd").joinpath("demo", DEMO_FILE).read_text(encoding="utf-8")
    return read_messages(text.splitlines())


def demo_settings(user_settings: dict[str, Any], window: int) -> dict[str, Any]:
    """A small window so the session has to compact; the user's settings layered on top."""
    from contextd_client.cli import with_window

    model = {"maxOutputTokens": OUTPUT_RESERVE_TOKENS, "encoding": "o200k_base"}
    settings = {
        **user_settings,
        "defaultModel": DEMO_MODEL,
        "models": {DEMO_MODEL: model, **(user_settings.get("models") or {})},
    }
    return with_window(settings, DEMO_MODEL, window)


def latest_summary(messages: list[dict[str, Any]]) -> str | None:
    """The summary at the head of a compacted context, without its preamble."""
    from contextd.compaction.context import COMPACTION_PREAMBLE

    if messages and messages[0].get("role") == "user" and isinstance(messages[0].get("content"), str):
        content = messages[0]["content"]
        if content.startswith(COMPACTION_PREAMBLE):
            return content[len(COMPACTION_PREAMBLE) :]
    return None


async def run_demo(
    args: argparse.Namespace,
    user_settings: dict[str, Any],
    connect: Callable[[argparse.Namespace, dict[str, Any]], Awaitable[ContextdClient]],
) -> int:
    messages = demo_messages()
    if args.data_dir is None and not args.tcp:
        args.data_dir = tempfile.mkdtemp(prefix="contextd-demo-")
    settings = demo_settings(user_settings, args.window)
    display = None if args.json else UsageDisplay()
    if display:
        print(
            f"contextd demo: a {len(steps(messages))}-step coding session ({len(messages)} messages) "
            f"replayed into a {render.tokens(args.window)}-token window.\n"
            f"Data directory: {args.data_dir or '(the daemon at ' + args.tcp + ')'}\n"
        )
    async with await connect(args, settings) as client:
        opened = await client.session_open(name="contextd demo: ledger backlog", model=DEMO_MODEL)
        session_id = opened["sessionId"]
        report = await replay(client, session_id, messages, display=display, delay=args.delay)
        if display:
            display.finish()
        state = await client.state(session_id)
        context = await client.context(session_id)
    summary = latest_summary(context["messages"])
    if args.json:
        print(json.dumps({
            "sessionId": session_id, "dataDir": args.data_dir, "appended": report.appended,
            "compactions": report.compactions, "state": state, "contextMessages": len(context["messages"]),
            "contextTokens": context["tokens"], "summary": summary,
        }, indent=2, ensure_ascii=False))
        return 0
    print_ending(report.appended, report.compactions, state, context, summary, args.data_dir, session_id)
    return 0


def print_ending(
    appended: int,
    compactions: list[dict[str, Any]],
    state: t.StateResult,
    context: t.ContextResult,
    summary: str | None,
    data_dir: str | None,
    session_id: str,
) -> None:
    done = [event for event in compactions if event.get("outcome") == "compacted"]
    print(f"\nReplayed {appended} messages; the daemon compacted {len(done)} times.")
    for number, event in enumerate(done, start=1):
        print(f"  compaction {number} ({event['reason']}): {render.tokens(event['tokensBefore'])} → "
              f"{render.tokens(event.get('tokensAfter', 0))} tokens")
    failed = [event for event in compactions if event.get("outcome") != "compacted"]
    if failed:
        print(f"  {len(failed)} compaction attempts did not complete: " + ", ".join(
            f"{event['outcome']} ({event.get('error', 'no reason given')})" for event in failed))
    if not compactions:
        print("  (no compaction happened: this daemon may not compact yet, or compaction is off)")
    print(f"\nThe context now: {len(context['messages'])} messages, {render.tokens(context['tokens'])} tokens")
    print(render.usage_bar(state["usage"]))
    if summary:
        lines = summary.strip().splitlines()
        print("\nThe summary the model now sees in place of the early history:\n")
        print("\n".join("    " + line for line in lines[:SUMMARY_LINES_SHOWN]))
        if len(lines) > SUMMARY_LINES_SHOWN:
            print(f"    … {len(lines) - SUMMARY_LINES_SHOWN} more lines (`contextd tree` and the session file have all of it)")
    print(f"\nSession file: {state.get('path', '(not reported)')}")
    if data_dir:
        print(f"Explore it:   contextd --data-dir {data_dir} tree {session_id}")
