"""`contextd demo`: a long coding session replayed into a small window, compacting as it goes.

No API key and no network: the daemon summarizes with its offline summarizer (unless
`--settings` chooses another) and counts tokens itself. The session is kept with the user's
other sessions, in the workspace `demo` of the data directory, so `contextd sessions`,
`tree` and `show` find it afterwards and `contextd sessions rm` deletes it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from rich.text import Text

from contextd_client import render
from contextd_client import types as t
from contextd_client.client import ContextdClient
from contextd_client.replay import (
    ReplayFile,
    UsageDisplay,
    read_messages,
    replay,
    steps,
    with_window,
)

DEMO_MODEL = "contextd-demo"
DEMO_WORKSPACE = "demo"
DEMO_SESSION_NAME = "contextd demo: ledger backlog"
DEMO_FILE = "session.jsonl"
OUTPUT_RESERVE_TOKENS = 4096
SUMMARY_LINES_SHOWN = 40


def demo_messages(check: bool = False) -> ReplayFile:
    """The shipped session's messages, not checked one by one here (120 ms of the demo's
    start, pydantic imported for it): tests/cli check them (`check=True`)."""
    text = resources.files("contextd").joinpath("demo", DEMO_FILE).read_text(encoding="utf-8")
    return read_messages(text.splitlines(), source=DEMO_FILE, check=check)


def demo_settings(user_settings: dict[str, Any], window: int) -> dict[str, Any]:
    """A small window so the session has to compact; the user's settings layered on top."""
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

    for message in messages[:3]:  # instructions may come first
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and content.startswith(COMPACTION_PREAMBLE):
            return content[len(COMPACTION_PREAMBLE) :]
    return None


async def run_demo(
    args: argparse.Namespace,
    user_settings: dict[str, Any],
    connect: Callable[[argparse.Namespace, dict[str, Any]], Awaitable[ContextdClient]],
) -> int:
    source = demo_messages()
    settings = demo_settings(user_settings, args.window)
    display = None if args.json else UsageDisplay()
    if display:
        display.note(
            f"contextd demo: a coding session of {len(steps(source.messages))} steps "
            f"({len(source.messages)} messages)\nreplayed into a {render.tokens(args.window)}-token window."
        )
    async with await connect(args, settings) as client:
        opened = await client.session_open(workspace=DEMO_WORKSPACE, name=DEMO_SESSION_NAME, model=DEMO_MODEL)
        session_id = opened["sessionId"]
        if display:
            display.note(f"Session {session_id}\n(kept in the workspace `{DEMO_WORKSPACE}` of your data directory)\n")
        try:
            report = await replay(client, session_id, source, display=display, delay=args.delay)
        finally:
            if display:
                display.finish()
        state = await client.state(session_id)
        context = await client.context(session_id)
    summary = latest_summary(context["messages"])
    if args.json:
        print(json.dumps({
            "sessionId": session_id, "workspace": DEMO_WORKSPACE, "path": state.get("path"),
            "appended": report.appended, "compactions": report.compactions, "state": state,
            "contextMessages": len(context["messages"]), "contextTokens": context["tokens"], "summary": summary,
        }, indent=2, ensure_ascii=False))
        return 0
    assert display is not None
    data_dir = f" --data-dir {args.data_dir}" if args.data_dir else ""
    print_ending(display, report.appended, report.compactions, state, context, summary, f"{data_dir} {session_id}")
    return 0


def print_ending(
    display: UsageDisplay,
    appended: int,
    compactions: list[t.CompactionFinished],
    state: t.StateResult,
    context: t.ContextResult,
    summary: str | None,
    session_argument: str,
) -> None:
    """The recap; `session_argument` is what the follow-up commands need (the session id and
    the data directory, if not the default one)."""
    from rich.table import Table

    console = display.console
    done = [event for event in compactions if event.get("outcome") == "compacted"]
    console.print(f"\nReplayed {appended} messages; the daemon compacted {len(done)} times.", markup=False)
    if compactions:
        table = Table(box=None, pad_edge=False, show_edge=False)
        for header, justify in (("#", "right"), ("why", "left"), ("outcome", "left"),
                                ("tokens before", "right"), ("after", "right")):
            table.add_column(header, justify=justify)  # type: ignore[arg-type]
        for number, event in enumerate(compactions, start=1):
            after = event.get("tokensAfter")
            outcome = event["outcome"] if event["outcome"] == "compacted" else f"{event['outcome']}: {event.get('error', '')}"
            table.add_row(str(number), event["reason"], outcome, render.tokens(event["tokensBefore"]),
                          render.tokens(after) if after is not None else "")
        console.print(table)
    else:
        console.print("  (no compaction happened: compaction may be off in your settings)", markup=False)
    console.print(
        f"\nThe context now: {len(context['messages'])} messages, {render.tokens(context['tokens'])} tokens",
        markup=False,
    )
    console.print(render.usage_line(state["usage"], console.width), markup=False)
    if summary:
        # On a terminal laid out to its width; piped, the text as stored.
        lines = (
            render.markdown_lines(summary.strip(), console.width, indent=4)
            if console.is_terminal
            else ["    " + line for line in summary.strip().splitlines()]
        )
        console.print("\nThe summary the model now sees in place of the early history:\n", markup=False)
        console.print(Text.from_ansi("\n".join(lines[:SUMMARY_LINES_SHOWN])), no_wrap=True, crop=False)
        if len(lines) > SUMMARY_LINES_SHOWN:
            console.print(f"    … {len(lines) - SUMMARY_LINES_SHOWN} more lines", markup=False)
    console.print(f"\nSession file:  {state.get('path', '(not reported)')}", markup=False)
    for label, command in (
        ("The summary:  ", f"contextd show{session_argument}"),
        ("Its tree:     ", f"contextd tree{session_argument}"),
        ("Delete it:    ", f"contextd sessions rm{session_argument}"),
    ):
        console.print(f"{label}{command}", markup=False)
