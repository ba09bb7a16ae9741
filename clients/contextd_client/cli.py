"""The client commands of `contextd`: demo, replay, import, sessions, tree, compact, handoff, watch.

Each command starts its own daemon (`contextd serve` on stdio, with the same `--data-dir`)
unless `--tcp HOST:PORT` names a running one. Output is for people by default and JSON with
`--json`. Exit codes: 0 success, 1 the daemon refused or failed (its message on stderr),
2 a usage error (bad arguments, unreadable input file), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any

from contextd_client import render
from contextd_client.client import ContextdClient
from contextd_client.replay import ReplayFileError, UsageDisplay, read_file, replay
from contextd_client.rpc import ConnectionLost, ContextdError

EXIT_OK, EXIT_DAEMON, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_DAEMON_LOG_LEVEL = "WARNING"


class UsageError(Exception):
    """A mistake in the command line or its input: exit code 2."""


# --- arguments ----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="contextd", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", help="where sessions live (default $XDG_DATA_HOME/contextd)")
    parser.add_argument(
        "--log-level",
        default=DEFAULT_DAEMON_LOG_LEVEL,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help=f"the daemon's log level on stderr (default {DEFAULT_DAEMON_LOG_LEVEL} for client commands)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        sub.add_argument("--tcp", metavar="HOST:PORT", help="use a daemon started with `contextd serve --tcp`")
        sub.add_argument("--settings", type=Path, metavar="FILE", help="a JSON file of settings for the daemon")
        return sub

    demo = command("demo", "replay the shipped coding session in a small window and watch it compact")
    demo.add_argument("--delay", type=float, default=0.05, help="seconds between steps (default 0.05)")
    demo.add_argument("--window", type=int, default=40_000, help="the demo model's context window")

    replay_cmd = command("replay", "replay a JSONL file of messages into a new session")
    replay_cmd.add_argument("file", type=Path)
    replay_cmd.add_argument("--name", help="the new session's name")
    replay_cmd.add_argument("--workspace", help="the session's workspace (default: the current directory)")
    replay_cmd.add_argument("--model", help="the model the session talks to")
    replay_cmd.add_argument("--window", type=int, help="override the model's context window (tokens)")
    replay_cmd.add_argument("--delay", type=float, default=0.0, help="seconds between steps")
    replay_cmd.add_argument(
        "--no-usage", action="store_true",
        help="drop recorded provider usage, so the daemon counts (recorded usage describes the uncompacted original)",
    )

    import_cmd = command("import", "import another agent's session file as a contextd session")
    import_cmd.add_argument("file", type=Path)
    import_cmd.add_argument("--from", dest="source", required=True, choices=["claude-code", "codex", "pi"])
    import_cmd.add_argument("--name", help="the session's name")
    import_cmd.add_argument("--workspace", help="the session's workspace (default: the one recorded in the file)")

    sessions = command("sessions", "list sessions, newest first")
    sessions.add_argument("--workspace", help="only this workspace's sessions")

    tree = command("tree", "show a session's entry tree")
    tree.add_argument("session", help="a session id, or a unique prefix of one")

    compact = command("compact", "compact a session now")
    compact.add_argument("session", help="a session id, or a unique prefix of one")
    compact.add_argument("--instructions", help="what the summary should focus on")
    compact.add_argument("--dry-run", action="store_true", help="only show what would be summarized, kept and pruned")

    handoff = command("handoff", "hand a session's work off to a fresh session")
    handoff.add_argument("session", help="a session id, or a unique prefix of one")
    handoff.add_argument("--goal", help="what the new session should do next")

    watch = command("watch", "print the daemon's notifications as they come (see --help)")
    watch.description = (
        "Print every notification of a daemon as it arrives. A daemon only notifies its own "
        "clients, so watch drives the activity itself: with SESSION it opens that session; "
        "with --replay FILE it replays FILE into SESSION (or a new session) and exits when "
        "done unless --follow; with --idle SECONDS it arms idle compaction on the session. "
        "Without --replay it runs until interrupted (Ctrl-C: exit 0)."
    )
    watch.add_argument("session", nargs="?", help="a session id, or a unique prefix of one")
    watch.add_argument("--replay", type=Path, metavar="FILE", help="replay FILE's messages while watching")
    watch.add_argument("--window", type=int, help="override the model's context window (tokens)")
    watch.add_argument("--idle", type=float, metavar="SECONDS", help="compact the session after SECONDS idle")
    watch.add_argument(
        "--idle-threshold", type=int, metavar="TOKENS",
        help="with --idle: only when the context holds at least TOKENS (default: the daemon's idle setting)",
    )
    watch.add_argument("--follow", action="store_true", help="keep watching after the replay")
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    try:
        return build_parser().parse_args(argv)
    except SystemExit as exit:
        raise UsageError() if exit.code else exit from None


# --- shared plumbing ----------------------------------------------------------------------


def load_settings(args: argparse.Namespace) -> dict[str, Any]:
    if args.settings is None:
        return {}
    try:
        settings = json.loads(args.settings.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read {args.settings}: {error.strerror}") from None
    except ValueError as error:
        raise UsageError(f"{args.settings} is not valid JSON: {error}") from None
    if not isinstance(settings, dict):
        raise UsageError(f"{args.settings} must hold a JSON object of settings")
    return settings


def with_window(settings: dict[str, Any], model: str, window: int | None) -> dict[str, Any]:
    """Settings that give `model` a context window of `window` tokens.

    The compaction reserve and kept tail scale down with the window (a tenth and a fifth of
    it) unless the settings choose them: the defaults (16,384 and 20,000) would leave no room
    for compaction in a small window.
    """
    if window is None:
        return settings
    if window <= 0:
        raise UsageError("--window must be a positive number of tokens")
    models = dict(settings.get("models") or {})
    models[model] = {**models.get(model, {}), "contextWindow": window}
    scaled = {"reserveTokens": max(window // 10, 1), "keepRecentTokens": max(window // 5, 1)}
    compaction = {**scaled, **(settings.get("compaction") or {})}
    return {**settings, "models": models, "compaction": compaction}


async def connect(args: argparse.Namespace, settings: dict[str, Any]) -> ContextdClient:
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError(f"--tcp wants HOST:PORT, got {args.tcp!r}")
        return await ContextdClient.connect(host, int(port), settings=settings)
    return await ContextdClient.spawn(data_dir=args.data_dir, settings=settings, log_level=args.log_level)


async def resolve_session(client: ContextdClient, wanted: str) -> str:
    """A full session id from an id or a unique prefix of one."""
    ids = [session["sessionId"] for session in (await client.session_list())["sessions"]]
    if wanted in ids:
        return wanted
    matches = [session_id for session_id in ids if session_id.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UsageError(f"{wanted!r} matches several sessions: {', '.join(matches)}")
    return wanted  # let the daemon say it does not exist (exit 1, -32001)


def emit_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def default_model(settings: dict[str, Any]) -> str:
    return str(settings.get("defaultModel") or "claude-sonnet-4-5")


# --- commands -----------------------------------------------------------------------------


async def run_sessions(args: argparse.Namespace) -> int:
    async with await connect(args, load_settings(args)) as client:
        result = await client.session_list(workspace=args.workspace)
    if args.json:
        emit_json(result)
    else:
        print(render.sessions_table(result["sessions"]))
    return EXIT_OK


async def run_tree(args: argparse.Namespace) -> int:
    async with await connect(args, load_settings(args)) as client:
        result = await client.tree(await resolve_session(client, args.session))
    if args.json:
        emit_json(result)
    else:
        print("\n".join(render.tree_lines(result)))
    return EXIT_OK


async def run_compact(args: argparse.Namespace) -> int:
    async with await connect(args, load_settings(args)) as client:
        session_id = await resolve_session(client, args.session)
        if args.dry_run:
            plan = await client.compact(session_id, instructions=args.instructions, dry_run=True)
            if args.json:
                emit_json(plan)
            else:
                print(
                    f"Would summarize {len(plan['summarizeEntryIds'])} entries, keep "
                    f"{len(plan['keptEntryIds'])} (from {plan['firstKeptEntryId']}) and prune "
                    f"{len(plan['pruneEntryIds'])} tool results: "
                    f"{render.tokens(plan['tokensBefore'])} → about {render.tokens(plan['tokensAfter'])} "
                    f"tokens (at most {render.tokens(plan['tokensAfterMax'])})"
                )
            return EXIT_OK
        result = await client.compact(session_id, instructions=args.instructions)
    if args.json:
        emit_json(result)
    else:
        print(
            f"Compacted {session_id}: {render.tokens(result['tokensBefore'])} → "
            f"{render.tokens(result['tokensAfter'])} tokens (entry {result['entryId']}, "
            f"keeping from {result['firstKeptEntryId']})\n"
        )
        print(result["summary"])
    return EXIT_OK


async def run_handoff(args: argparse.Namespace) -> int:
    async with await connect(args, load_settings(args)) as client:
        session_id = await resolve_session(client, args.session)
        result = await client.handoff(session_id, goal=args.goal)
    if args.json:
        emit_json(result)
    else:
        print(f"Handed {session_id} off to the new session {result['sessionId']} (entry {result['entryId']})\n")
        print(result["document"])
    return EXIT_OK


async def run_replay(args: argparse.Namespace) -> int:
    messages = read_file(args.file, keep_usage=not args.no_usage)
    if not messages:
        raise UsageError(f"{args.file} holds no messages")
    settings = load_settings(args)
    model = args.model or default_model(settings)
    settings = with_window(settings, model, args.window)
    async with await connect(args, settings) as client:
        opened = await client.session_open(
            workspace=args.workspace or str(Path.cwd()), name=args.name or args.file.name, model=model
        )
        session_id = opened["sessionId"]
        display = None if args.json else UsageDisplay()
        if display:
            print(f"Replaying {len(messages)} messages of {args.file} into session {session_id}")
        report = await replay(client, session_id, messages, display=display, delay=args.delay)
        if display:
            display.finish()
        state = await client.state(session_id)
    if args.json:
        emit_json({"sessionId": session_id, "appended": report.appended, "compactions": report.compactions, "state": state})
    else:
        print(f"{report.appended} messages appended, {len(report.compactions)} compactions.")
        print(f"Session file: {state.get('path', '(not reported)')}")
    return EXIT_OK


async def run_import(args: argparse.Namespace) -> int:
    from contextd.importers import IMPORTERS, save
    from contextd.store import default_data_dir

    if args.tcp:
        raise UsageError("import writes into a data directory; use --data-dir, not --tcp")
    try:
        with args.file.open(encoding="utf-8", errors="replace") as handle:
            imported = IMPORTERS[args.source](handle)
    except OSError as error:
        raise UsageError(f"cannot read {args.file}: {error.strerror}") from None
    problems = sorted(imported.problems, key=lambda problem: problem.line)
    if not imported.entries:
        for problem in problems:
            print(f"{args.file}: {problem}", file=sys.stderr)
        raise UsageError(f"{args.file} holds no {args.source} conversation")
    workspace = args.workspace or imported.workspace or str(Path.cwd())
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    name = args.name or (None if imported.name else f"{args.source}: {args.file.name}")
    session_id, path = save(imported, data_dir, workspace=workspace, name=name)
    async with await connect(args, load_settings(args)) as client:
        opened = await client.session_open(session_id=session_id)
        state = await client.state(session_id)
    report = [{"line": problem.line, "kind": problem.kind, "message": problem.message} for problem in problems]
    if args.json:
        emit_json({"sessionId": session_id, "source": args.source, "sourceSessionId": imported.source_id,
                   "messages": imported.message_count, "entries": len(imported.entries), "problems": report,
                   "usage": opened["usage"], "state": state})
        return EXIT_OK
    for problem in problems:
        print(f"{args.file}: {problem}", file=sys.stderr)
    print(f"Imported {imported.message_count} messages ({len(imported.entries)} entries) from {args.file}")
    print(f"Session {session_id} in {workspace}")
    print(render.usage_bar(opened["usage"]))
    print(f"Session file: {path}")
    if problems:
        print(f"{len(problems)} lines were not imported as they stood (listed on stderr).")
    return EXIT_OK


async def run_watch(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    settings = with_window(settings, default_model(settings), args.window)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def show(method: str, params: dict[str, Any]) -> None:
        if args.json:
            print(json.dumps({"method": method, "params": params}, ensure_ascii=False), flush=True)
        else:
            print(render.notification_line(method, params, datetime.now()), flush=True)

    async with await connect(args, settings) as client:
        client.on(None, show)
        if args.session:
            session_id = (await client.session_open(session_id=await resolve_session(client, args.session)))["sessionId"]
        else:
            session_id = (await client.session_open(name=args.replay.name if args.replay else "watch"))["sessionId"]
        if args.idle is not None:
            await client.idle_configure(
                session_id=session_id, enabled=True, timeout_seconds=args.idle, threshold_tokens=args.idle_threshold
            )
        if args.replay is not None:
            messages = read_file(args.replay)
            replaying = asyncio.ensure_future(replay(client, session_id, messages, display=None))
            await asyncio.wait([replaying, asyncio.ensure_future(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
            if not replaying.done():
                replaying.cancel()
                return EXIT_OK
            replaying.result()
            if not args.follow:
                return EXIT_OK
        await stop.wait()
    return EXIT_OK


async def run_demo(args: argparse.Namespace) -> int:
    from contextd_client.demo import run_demo as demo

    return await demo(args, load_settings(args), connect)


COMMANDS: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "demo": run_demo,
    "replay": run_replay,
    "import": run_import,
    "sessions": run_sessions,
    "tree": run_tree,
    "compact": run_compact,
    "handoff": run_handoff,
    "watch": run_watch,
}


def main(argv: list[str]) -> int:
    """Run one client command; returns the exit code (see the module doc)."""
    try:
        args = parse_args(argv)
        return asyncio.run(COMMANDS[args.command](args))
    except UsageError as error:
        if str(error):
            print(f"contextd: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except ReplayFileError as error:
        print(f"contextd: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except ContextdError as error:
        detail = f" {json.dumps(error.data)}" if error.data else ""
        print(f"contextd: the daemon refused: {error.message} (code {error.code}){detail}", file=sys.stderr)
        return EXIT_DAEMON
    except (ConnectionLost, ConnectionError, OSError) as error:
        print(f"contextd: lost the daemon: {error}", file=sys.stderr)
        return EXIT_DAEMON
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
