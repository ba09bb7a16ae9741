"""The client commands of `contextd`: demo, replay, import, sessions, show, tree, compact,
handoff, watch. The parser they share with `serve` is built in server/contextd/cli.py and
assembled with them in command.py.

Each command that needs a daemon attaches to the shared one of its data dir (starting it
when none runs; `CONTEXTD_SHARED=0`: a daemon of its own), unless `--tcp HOST:PORT` names a
running one; `show`, `sessions rm` and
`import` work on the data directory itself. Output is for people by default and JSON with
`--json`. Exit codes are listed in EXIT_CODES (and in the README).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from contextd.cli import AddCommand, Parser, UsageError, build_parser

from contextd_client import render
from contextd_client.agents.commands import add_agent_commands, agent_commands
from contextd_client.client import ContextdClient
from contextd_client.daemon import wants_shared_daemon
from contextd_client.replay import (
    ReplayFile,
    ReplayFileError,
    UsageDisplay,
    read_file,
    replay,
    with_window,
)
from contextd_client.rpc import (
    INTERNAL_ERROR,
    SESSION_LOCKED,
    ConnectionLost,
    ContextdError,
)
from contextd_client.transcripts import detect_agent

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_NO_DAEMON, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_REFUSED: "refused: the daemon answered with an error, a daemon holds the session, or no such session",
    EXIT_USAGE: "usage error: bad arguments, or an input file that cannot be read or used",
    EXIT_NO_DAEMON: "no daemon: it could not be started or reached, or it went away",
    EXIT_INTERNAL: "internal error: a bug in contextd (the message says where to look)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}
DEFAULT_DAEMON_LOG_LEVEL = "WARNING"
MIN_WINDOW, MAX_WINDOW = 4_096, 10_000_000
DEMO_MIN_WINDOW, DEMO_MAX_WINDOW = 16_000, 1_000_000
MAX_DELAY_SECONDS = 60.0

T = TypeVar("T")


class DaemonUnavailable(Exception):
    """No daemon to talk to: it could not be started or reached (exit 3)."""


# --- arguments ----------------------------------------------------------------------------


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from `low` to `high`, else a usage error naming the range."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", "").replace(",", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value:,} is out of range: use {low:,} to {high:,}")
        return value

    return parse


def seconds_in(low: float, high: float, *, inclusive_low: bool = True) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not (low <= value if inclusive_low else low < value) or value > high:
            bound = "from" if inclusive_low else "above"
            raise argparse.ArgumentTypeError(f"{value:g} is out of range: use {bound} {low:g} to {high:g} seconds")
        return value

    return parse


SESSION_HELP = "a session id, or a unique prefix of one (`contextd sessions` lists them)"
STATS_HELP = (
    "each session's compression statistics (contextd/session/stats): entries and tokens in the "
    "context against the whole branch, what compactions and prunes saved, the summary's size"
)


def add_client_commands(add_command: AddCommand, global_options: argparse.ArgumentParser) -> None:
    """Every client command, on the shared parser, in the order `contextd --help` lists them;
    `add_command(name, summary, epilog)` gives each the global options (`global_options`, for
    nested actions)."""
    add_demo_command(add_command)
    add_replay_command(add_command)
    add_import_command(add_command)
    add_sessions_command(add_command, global_options)
    add_config_command(add_command, global_options)
    add_completion_command(add_command)
    add_reading_commands(add_command)
    add_session_work_commands(add_command)
    add_daemon_commands(add_command)
    add_watch_command(add_command)
    add_agent_commands(add_command)


def add_demo_command(add_command: AddCommand) -> None:
    """`contextd demo`: the shipped session, replayed into a small window."""
    demo = add_command(
        "demo", "replay a shipped coding session into a small window and watch it compact",
        epilog="examples:\n  contextd demo\n  contextd demo --window 60000 --delay 0\n\n"
        "The session is kept in your data directory under the workspace `demo`:\n"
        "`contextd sessions --workspace demo` lists it, `contextd sessions rm ID` deletes it.\n",
    )
    demo.add_argument(
        "--delay", type=seconds_in(0, MAX_DELAY_SECONDS), default=0.05, metavar="SECONDS", help="seconds between steps"
    )
    demo.add_argument(
        "--window", type=int_in(DEMO_MIN_WINDOW, DEMO_MAX_WINDOW), default=40_000, metavar="TOKENS",
        help="the demo model's context window in tokens",
    )


def add_replay_command(add_command: AddCommand) -> None:
    """`contextd replay FILE`: a file of messages into a new session."""
    replay_cmd = add_command(
        "replay", "replay a JSONL file of messages into a new session, showing the usage bar",
        epilog="examples:\n  contextd replay conversation.jsonl --window 8000\n"
        "  contextd replay DATA_DIR/workspaces/W/sessions/ID.jsonl --no-usage\n\n"
        "Each line is a message ({\"role\": ...}, see protocol.md) or a contextd session line;\n"
        "every message is checked before the session is created.\n",
    )
    replay_cmd.add_argument("file", type=Path, help="the JSONL file to replay")
    replay_cmd.add_argument("--name", help="the new session's name (default: the file's name)")
    replay_cmd.add_argument("--workspace", help="the session's workspace (default: the current directory)")
    replay_cmd.add_argument("--model", help="the model the session talks to (default: the settings' defaultModel)")
    replay_cmd.add_argument("--window", type=int_in(MIN_WINDOW, MAX_WINDOW), metavar="TOKENS", help="override the model's context window (tokens)")
    replay_cmd.add_argument("--delay", type=seconds_in(0, MAX_DELAY_SECONDS), default=0.0, metavar="SECONDS", help="seconds between steps")
    replay_cmd.add_argument(
        "--no-usage", action="store_true",
        help="drop recorded provider usage, so the daemon counts (recorded usage describes the uncompacted original)",
    )


def add_import_command(add_command: AddCommand) -> None:
    """`contextd import FILE`: another agent's transcript as a session."""
    import_cmd = add_command(
        "import", "import another agent's transcript as a contextd session",
        epilog="examples:\n  contextd import ~/.claude/projects/P/SESSION.jsonl\n"
        "  contextd import rollout-2025-01-01.jsonl.gz --from codex --name 'parser work'\n",
    )
    import_cmd.add_argument("file", type=Path, help="the agent's transcript (JSONL, or JSONL compressed with gzip)")
    import_cmd.add_argument(
        "--from", dest="source", choices=["claude-code", "codex", "pi"],
        help="the agent that wrote FILE (default: told from its records)",
    )
    import_cmd.add_argument("--name", help="the session's name (default: the file's name)")
    import_cmd.add_argument("--workspace", help="the session's workspace (default: the one recorded in the file)")
    import_cmd.add_argument(
        "--verbose", action="store_true",
        help="list every line that was not imported as it stood (default: one line per kind of problem)",
    )


def add_sessions_command(add_command: AddCommand, global_options: argparse.ArgumentParser) -> None:
    """`contextd sessions` and its actions `list` and `rm`."""
    sessions = add_command(
        "sessions", "list sessions, newest first (`sessions rm` deletes)",
        epilog="examples:\n  contextd sessions\n  contextd sessions --workspace demo --json\n"
        "  contextd sessions --stats\n  contextd sessions rm 01a2140f\n",
    )
    sessions.add_argument("--workspace", help="only this workspace's sessions")
    sessions.add_argument("--stats", action="store_true", help=STATS_HELP)
    actions = sessions.add_subparsers(dest="action", metavar="ACTION", title="actions")
    listing = actions.add_parser(
        "list", help="list sessions (what `contextd sessions` does)", parents=[global_options],
        description="list sessions, newest first",
    )
    listing.add_argument("--workspace", default=argparse.SUPPRESS, help="only this workspace's sessions")
    listing.add_argument("--stats", action="store_true", default=argparse.SUPPRESS, help=STATS_HELP)
    remove = actions.add_parser(
        "rm", help="delete sessions from the data directory", parents=[global_options],
        description="Delete sessions from the data directory. While the shared daemon runs, it "
        "deletes them, closing them for its clients (which it tells); a session another daemon "
        "has open is refused (exit 1): close it there first.",
    )
    remove.add_argument("sessions", nargs="+", metavar="SESSION", help=SESSION_HELP)


def add_config_command(add_command: AddCommand, global_options: argparse.ArgumentParser) -> None:
    """`contextd config` and its actions `set` and `unset`."""
    config = add_command(
        "config", "the settings in force here and where each comes from (`config set` changes them)",
        description="The settings in force for the sessions of this folder, each with where its value "
        "comes from: built in, the user file ($XDG_CONFIG_HOME/contextd/settings.json), the daemon's "
        "--settings, a change made at run time, or an editor that has the folder open. A running "
        "daemon reloads the user file when it changes.",
        epilog="examples:\n  contextd config\n  contextd config set compaction.thresholdPercent 0.5\n"
        "  contextd config set summarizer.provider anthropic\n  contextd config unset compaction.thresholdPercent\n",
    )
    config.add_argument("--workspace", help="the settings of this folder's sessions (default: the current directory)")
    config_actions = config.add_subparsers(dest="action", metavar="ACTION", title="actions")
    set_action = config_actions.add_parser(
        "set", help="write KEY in the user settings file", parents=[global_options],
        description="Write KEY (dotted, e.g. compaction.thresholdPercent) in the user settings file. "
        "VALUE is read as JSON when it reads as JSON (0.5, true, [\"a\"]), else taken as text.",
    )
    set_action.add_argument("key", metavar="KEY")
    set_action.add_argument("value", metavar="VALUE")
    unset_action = config_actions.add_parser(
        "unset", help="remove KEY from the user settings file", parents=[global_options],
        description="Remove KEY from the user settings file; its value falls back to the built-in one.",
    )
    unset_action.add_argument("key", metavar="KEY")


def add_completion_command(add_command: AddCommand) -> None:
    """`contextd completion SHELL`."""
    completion = add_command(
        "completion", "print a shell completion script for contextd's commands and options",
        epilog="examples:\n  eval \"$(contextd completion bash)\"     # in ~/.bashrc\n"
        "  eval \"$(contextd completion zsh)\"      # in ~/.zshrc\n"
        "  contextd completion fish | source       # in ~/.config/fish/config.fish\n",
    )
    completion.add_argument("shell", choices=["bash", "zsh", "fish"])


def add_reading_commands(add_command: AddCommand) -> None:
    """`contextd show` and `contextd tree`: what a session holds."""
    show = add_command(
        "show", "print a summary, hand-off document or message of a session in full",
        epilog="examples:\n  contextd show 01a2140f             the latest summary on the current branch\n"
        "  contextd show 01a2140f e3f2         one entry (ids from `contextd tree`)\n"
        "  contextd show 01a2140f --json\n",
    )
    show.add_argument("session", help=SESSION_HELP)
    show.add_argument(
        "entry", nargs="?",
        help="an entry id or unique prefix (default: the latest summary on the path to the leaf, else the leaf)",
    )

    tree = add_command(
        "tree", "show a session's entry tree",
        epilog="examples:\n  contextd tree 01a2140f\n  contextd tree 01a2140f --json | jq .leafId\n",
    )
    tree.add_argument("session", help=SESSION_HELP)


def add_session_work_commands(add_command: AddCommand) -> None:
    """`contextd compact` and `contextd handoff`: work done on a session."""
    compact = add_command(
        "compact", "compact a session now",
        epilog="examples:\n  contextd compact 01a2140f --dry-run\n"
        "  contextd compact 01a2140f --instructions 'keep the API decisions'\n",
    )
    compact.add_argument("session", help=SESSION_HELP)
    compact.add_argument("--instructions", help="what the summary should focus on")
    compact.add_argument("--dry-run", action="store_true", help="only show what would be summarized, kept and pruned")

    handoff = add_command(
        "handoff", "hand a session's work off to a fresh session",
        epilog="examples:\n  contextd handoff 01a2140f --goal 'write the migration'\n",
    )
    handoff.add_argument("session", help=SESSION_HELP)
    handoff.add_argument("--goal", help="what the new session should do next (also its name)")


def add_daemon_commands(add_command: AddCommand) -> None:
    """`contextd status` and `contextd follow`: the shared daemon and the agents' sessions it mirrors."""
    add_command(
        "status", "which shared daemon runs: its socket, clients and sessions",
        epilog="examples:\n  contextd status\n  contextd status --json\n",
    )

    follow = add_command(
        "follow", "follow the Claude Code, Codex and pi sessions of this workspace as they run",
        description=(
            "Turn following on in the shared daemon (for every client of it: see protocol.md, "
            "contextd/follow) and print one line per change of a mirrored agent session of the "
            "current directory's workspace (every workspace with --all): the agent, the session, "
            "tokens/window, percent and the compactions the agent made. Runs until interrupted "
            "(Ctrl-C: exit 130); following stays on in the daemon."
        ),
        epilog="examples:\n  contextd follow\n  contextd follow --all --json\n",
    )
    follow.add_argument("--all", action="store_true", help="follow the agents' sessions of every workspace")
    follow.add_argument("--workspace", help="the workspace to follow (default: the current directory)")


def add_watch_command(add_command: AddCommand) -> None:
    """`contextd watch`: the daemon's notifications as they come."""
    watch = add_command(
        "watch", "print the daemon's notifications as they come",
        description=(
            "Print every notification of a daemon as it arrives. A daemon notifies a client of "
            "the sessions it has open, so watch opens one: with SESSION it opens that session "
            "(and prints what any client of the shared daemon does to it); "
            "with --replay FILE it replays FILE into SESSION (or a new session) and exits when "
            "done unless --follow; with --idle SECONDS it arms idle compaction on the session. "
            "Without --replay it runs until interrupted (Ctrl-C: exit 130; the daemon going away: exit 3)."
        ),
        epilog="examples:\n  contextd watch 01a2140f --idle 300\n"
        "  contextd watch --replay conversation.jsonl --window 8000 --json\n",
    )
    watch.add_argument("session", nargs="?", help=SESSION_HELP + " (default: a new session)")
    watch.add_argument("--replay", type=Path, metavar="FILE", help="replay FILE's messages while watching")
    watch.add_argument("--window", type=int_in(MIN_WINDOW, MAX_WINDOW), metavar="TOKENS", help="override the model's context window (tokens)")
    watch.add_argument("--idle", type=seconds_in(0, 7 * 24 * 3600, inclusive_low=False), metavar="SECONDS",
                       help="compact the session after SECONDS idle")
    watch.add_argument(
        "--idle-threshold", type=int_in(1, MAX_WINDOW), metavar="TOKENS",
        help="with --idle: only when the context holds at least TOKENS (default: the daemon's idle setting)",
    )
    watch.add_argument("--follow", action="store_true", help="keep watching after the replay")


# --- shared plumbing ----------------------------------------------------------------------


def load_settings(args: argparse.Namespace) -> dict[str, Any]:
    """`--settings FILE`, checked here: a bad key or value is a usage error (exit 2) naming it."""
    if not args.settings:
        return {}  # without importing contextd.settings (and the model tables it loads)
    from contextd.settings import SettingsFileError, read_settings_option

    try:
        return read_settings_option(args.settings)
    except SettingsFileError as error:
        raise UsageError(f"cannot use the settings file {error}") from None


async def connect(
    args: argparse.Namespace, settings: dict[str, Any], workspace: str | None = None
) -> ContextdClient:
    """The daemon at --tcp, else the shared daemon on its socket when it answers there, else
    a new stdio daemon (`serve --shared` forwarding to the shared daemon, which it starts);
    DaemonUnavailable when none works. `workspace` is the connection's workspace folder
    (default: the daemon's directory)."""
    if args.tcp:
        from contextd.cli import parse_host_port

        host, port = parse_host_port(args.tcp)
        try:
            return await ContextdClient.connect(host, port, settings=settings, workspace=workspace)
        except OSError as error:
            raise DaemonUnavailable(f"cannot reach the daemon at {args.tcp}: {error.strerror or error}") from None
    if wants_shared_daemon(settings):
        client = await connect_running_shared_daemon(args, settings, workspace)
        if client is not None:
            return client
    data_dir = Path(args.data_dir).expanduser().resolve() if args.data_dir else None
    try:
        return await ContextdClient.spawn(
            data_dir=data_dir, settings=settings, workspace=workspace,
            log_level=args.log_level or DEFAULT_DAEMON_LOG_LEVEL,
        )
    except OSError as error:
        raise DaemonUnavailable(f"cannot start the daemon ({sys.executable} -m contextd serve): {error}") from None


async def connect_running_shared_daemon(
    args: argparse.Namespace, settings: dict[str, Any], workspace: str | None
) -> ContextdClient | None:
    """The shared daemon reached on its socket directly, with no forwarding process in
    between (what `serve --shared` would do, minus a second interpreter); None when nobody
    answers there (no socket, a dead daemon's leftover file, a daemon that just stopped)
    so the caller spawns one instead."""
    from contextd.rpc.access import AccessRefused, private_folder

    path = shared_socket_path(args)
    try:
        private_folder(path.parent)  # as `serve --shared` checks before sending anything there
        return await ContextdClient.connect_unix(path, settings=settings, workspace=workspace)
    except AccessRefused as error:
        raise DaemonUnavailable(f"cannot use the shared daemon: {error}") from None
    except OSError:  # refused, missing, or lost during the handshake
        return None


def shared_socket_path(args: argparse.Namespace) -> Path:
    """The shared daemon's socket for this data dir (`serve --shared` picks the same)."""
    from contextd.paths import default_data_dir
    from contextd.rpc.shared import socket_path

    return socket_path(Path(args.data_dir) if args.data_dir else default_data_dir())


def shared_daemon_socket(args: argparse.Namespace) -> tuple[Path, bool]:
    """The shared daemon's socket for this data dir, and whether a daemon answers on it."""
    from contextd.rpc.listen import socket_in_use

    path = shared_socket_path(args)
    return path, socket_in_use(path)


async def run_status(args: argparse.Namespace) -> int:
    """Which shared daemon runs for this data dir: its socket, clients and sessions."""
    path, running = shared_daemon_socket(args)
    if not running:
        raise DaemonUnavailable(f"no shared daemon runs (its socket would be {path})")
    async with await ContextdClient.connect_unix(path) as client:
        status = await client.daemon_status()
    if args.json:
        emit_json(status)
    else:
        print(render.daemon_status(status))
    return EXIT_OK


def contextd_parser() -> Parser:
    """The whole `contextd` command: the daemon's `serve` and these client commands."""
    return build_parser(add_client_commands, EXIT_CODES)


async def run_completion(args: argparse.Namespace) -> int:
    from contextd_client.completion import script

    print(script(args.shell, contextd_parser()), end="")
    return EXIT_OK


async def run_config(args: argparse.Namespace) -> int:
    if args.action in ("set", "unset"):
        return change_user_file(args)
    workspace = str(Path(args.workspace or os.getcwd()).resolve())
    async with await connect(args, load_settings(args)) as client:
        answer = await client.request("contextd/settings", {"workspace": workspace})
    if args.json:
        emit_json(answer)
    else:
        print(render.settings_in_force(answer))
    return EXIT_OK


def change_user_file(args: argparse.Namespace) -> int:
    """`config set` / `config unset`: the user file, checked before it is written."""
    from contextd import settings as layers

    path = layers.user_settings_path()
    try:
        layer = layers.read_layer_file(path)
    except layers.SettingsFileError as error:
        raise UsageError(f"the settings file {error}; fix it or remove it first") from None
    if not layers.is_known(args.key):
        close = layers.suggestion(args.key)
        raise UsageError(f"no setting is called {args.key}" + (f" (did you mean {close}?)" if close else ""))
    if args.action == "unset":
        if not layers.unset_key(layer, args.key):
            print(f"{args.key} is not set in {path}", file=sys.stderr)
            return EXIT_OK
    else:
        layers.set_key(layer, args.key, layers.parse_value(args.value))
        try:
            layers.check_layer(layer, f"{args.key} to {args.value}")
        except layers.SettingsFileError as error:
            raise UsageError(f"cannot set {error}".replace(f": {args.key}: ", ": ", 1)) from None
    layers.write_layer_file(path, layer)
    done = "removed from" if args.action == "unset" else "written to"
    print(f"{args.key} {done} {path} (a running daemon applies it within a second)", file=sys.stderr)
    return EXIT_OK


def data_dir_only(args: argparse.Namespace, command: str) -> None:
    if args.tcp:
        raise UsageError(f"{command} works on a data directory; use --data-dir, not --tcp")


async def resolve_session(client: ContextdClient, wanted: str) -> str:
    """A full session id from an id or a unique prefix of one."""
    from contextd_client.datadir import NotFound, find_by_prefix

    ids = [session["sessionId"] for session in (await client.session_list())["sessions"]]
    try:
        return find_by_prefix(wanted, ids, "session")
    except NotFound:
        return wanted  # let the daemon say it does not exist (exit 1, -32001)


def emit_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def default_model(settings: dict[str, Any]) -> str:
    """The model of the sessions this command creates: its --settings' choice, else the user
    file's, else the built-in one (the daemon decides the same way)."""
    from contextd.settings import SettingsFile, resolve, user_settings_path

    return resolve([SettingsFile(user_settings_path()).layer, settings]).defaultModel


# --- commands -----------------------------------------------------------------------------


async def run_sessions(args: argparse.Namespace) -> int:
    if args.action == "rm":
        return await remove_sessions(args)
    fitted = sys.stdout.isatty() and not args.json
    async with await connect(args, load_settings(args)) as client:
        result = await client.session_list(workspace=args.workspace)
        if args.stats:
            rows = await sessions_with_stats(client, result["sessions"])
        # A prefix shown is unique among every session, not only the listed ones.
        every = await client.session_list() if fitted and args.workspace else result
    ids = [session["sessionId"] for session in every["sessions"]]
    if args.stats:
        if args.json:
            emit_json({"sessions": rows})
            return EXIT_OK
        print(render.stats_table(rows, shutil.get_terminal_size().columns, ids) if fitted else render.stats_table(rows))
        for row in rows:
            if "error" in row:
                print(f"{row['sessionId']}: no statistics: {row['error']['message']} (code {row['error']['code']})",
                      file=sys.stderr)
        return EXIT_OK
    if args.json:
        emit_json(result)
    elif result["sessions"] and fitted:
        print(render.sessions_fitted(result["sessions"], shutil.get_terminal_size().columns, ids))
    else:
        print(render.sessions_table(result["sessions"]))
    return EXIT_OK


async def sessions_with_stats(client: ContextdClient, sessions: list[Any]) -> list[dict[str, Any]]:
    """Each listed session with its `stats`, or the `error` that kept them (a session another
    daemon holds is refused with -32003): one refusal does not hide the other sessions.
    Sessions the daemon loaded only for this are closed again, so a shared daemon does not
    keep them locked."""
    held = {session["sessionId"] for session in (await client.daemon_status())["sessions"]}
    rows: list[dict[str, Any]] = []
    for session in sessions:
        session_id = session["sessionId"]
        try:
            rows.append({**session, "stats": await client.stats(session_id)})
        except ContextdError as error:
            rows.append({**session, "error": {"code": error.code, "message": error.message}})
            continue
        if session_id not in held:
            await client.close_session(session_id)
    return rows


async def remove_sessions(args: argparse.Namespace) -> int:
    """Every name is resolved before anything is deleted. While the shared daemon runs, it
    deletes them (closing them for its clients, which it tells); else they go from the data
    directory, refused for a session a daemon has open."""
    from contextd_client import datadir

    data_dir_only(args, "sessions rm")
    store = datadir.store_of(args.data_dir)
    removed = datadir.find_sessions(store, args.sessions)
    socket, running = shared_daemon_socket(args)
    if running:
        async with await ContextdClient.connect_unix(socket) as client:
            for listing in removed:
                await delete_through(client, listing.session_id)
    else:
        datadir.remove_listings(store, removed)
    if args.json:
        emit_json({"removed": [{"sessionId": listing.session_id, "path": str(listing.path)} for listing in removed]})
    else:
        for listing in removed:
            print(f"Deleted session {listing.session_id} ({listing.path})")
    return EXIT_OK


async def delete_through(client: ContextdClient, session_id: str) -> None:
    """contextd/session/delete; a session another daemon holds is refused as `rm` refuses it."""
    from contextd.store import SessionLocked

    try:
        await client.delete_session(session_id)
    except ContextdError as error:
        if error.code == SESSION_LOCKED and isinstance(error.data, dict):
            raise SessionLocked(session_id, error.data.get("pid")) from None
        raise


async def run_show(args: argparse.Namespace) -> int:
    from contextd_client import datadir

    data_dir_only(args, "show")
    store = datadir.store_of(args.data_dir)
    contents = datadir.read_session(store, args.session)
    entry = contents.entry(args.entry)
    usage = datadir.context_usage(store, contents.listing, load_settings(args))
    if args.json:
        emit_json({"sessionId": contents.listing.session_id, "path": str(contents.listing.path),
                   "entry": datadir.entry_json(entry), "usage": usage})
    else:
        print(datadir.entry_heading(entry, contents.listing.session_id))
        print(render.figure_lines(usage))
        print()
        text = datadir.entry_text(entry)
        # On a terminal laid out to its width; piped, the text as stored (ready to paste).
        print("\n".join(render.markdown_lines(text, shutil.get_terminal_size().columns)) if sys.stdout.isatty() else text)
    return EXIT_OK


async def run_tree(args: argparse.Namespace) -> int:
    async with await connect(args, load_settings(args)) as client:
        result = await client.tree(await resolve_session(client, args.session))
    if args.json:
        emit_json(result)
    else:
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
        print("\n".join(render.tree_lines(result, width)))
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
                    f"tokens (at most {render.tokens(plan['tokensAfterMax'])})\n"
                )
                print("Preview of the summary (written offline; nothing was stored):\n")
                print_fitting(plan["summary"], f"contextd compact {session_id} --dry-run | less")
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
        print_fitting(result["summary"], f"contextd show {session_id}")
    return EXIT_OK


def print_fitting(text: str, whole: str) -> None:
    """`text` in full when piped; on a terminal, as many lines as fit in it, then how to
    read the rest (`whole`), so a 250-line summary does not scroll its beginning away."""
    lines = text.splitlines()
    room = shutil.get_terminal_size().lines - 3 if sys.stdout.isatty() else len(lines)
    if len(lines) <= max(room, 1):
        print(text)
        return
    print("\n".join(lines[:room]))
    print(f"… {len(lines) - room} more lines: `{whole}` prints them all")


async def run_handoff(args: argparse.Namespace) -> int:
    async with await connect(args, load_settings(args)) as client:
        session_id = await resolve_session(client, args.session)
        result = await client.handoff(session_id, goal=args.goal)
    if args.json:
        emit_json(result)
    else:
        # The document alone on stdout, so `contextd handoff X > doc.md` is ready to paste.
        print(f"Handed {session_id} off to the new session {result['sessionId']} (entry {result['entryId']})", file=sys.stderr)
        print(result["document"])
    return EXIT_OK


async def run_replay(args: argparse.Namespace) -> int:
    source = read_file(args.file, keep_usage=not args.no_usage)
    if not source.messages:
        raise ReplayFileError(f"{args.file} holds no messages")
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
            display.note(f"Replaying {len(source.messages)} messages of {args.file} into session {session_id}")
        try:
            report = await replay(client, session_id, source, display=display, delay=args.delay)
        except ContextdError:
            await discard_if_empty(client, args, session_id)
            raise
        finally:
            if display:
                display.finish()
        state = await client.state(session_id)
    if args.json:
        emit_json({"sessionId": session_id, "appended": report.appended, "compactions": report.compactions, "state": state})
    else:
        print(f"{report.appended} messages appended, {len(report.compactions)} compactions.")
        print(f"Session file: {state.get('path', '(not reported)')}")
    return EXIT_OK


async def discard_if_empty(client: ContextdClient, args: argparse.Namespace, session_id: str) -> None:
    """A replay the daemon refused from its first message leaves no empty session behind."""
    if args.tcp:
        return  # another daemon's data directory: not ours to delete from
    if any(node.get("type") == "message" for node in (await client.tree(session_id))["nodes"]):
        return
    await client.delete_session(session_id)


async def run_import(args: argparse.Namespace) -> int:
    from contextd.importers import IMPORTERS, save
    from contextd.importers.common import grouped

    from contextd_client import datadir

    data_dir_only(args, "import")
    looks_like = read_transcript(args.file, detect_agent)
    source = args.source or looks_like
    if source is None:
        raise ReplayFileError(
            f"{args.file}: cannot tell which agent wrote it (no Claude Code, Codex or pi records "
            "in its first lines); name it with --from"
        )
    imported = read_transcript(args.file, IMPORTERS[source])
    problems = sorted(imported.problems, key=lambda problem: problem.line)
    report = [{"line": problem.line, "kind": problem.kind, "message": problem.message} for problem in problems]
    if (refusal := imported.refusal()) is not None:
        hint = f" (it looks like a {AGENT_NAMES[looks_like]} transcript: --from {looks_like})" if looks_like not in (None, source) else ""
        raise ReplayFileError(f"{args.file} {refusal}{hint}", {"problems": report})
    workspace = args.workspace or imported.workspace or str(Path.cwd())
    store = datadir.store_of(args.data_dir)
    session_id, path = save(imported, store.data_dir, workspace=workspace, name=args.name or args.file.name)
    async with await connect(args, load_settings(args)) as client:
        opened = await client.session_open(session_id=session_id)
        state = await client.state(session_id)
    if args.json:
        emit_json({"sessionId": session_id, "source": source, "sourceSessionId": imported.source_id,
                   "messages": imported.message_count, "entries": len(imported.entries), "problems": report,
                   "usage": opened["usage"], "state": state})
        return EXIT_OK
    for problem in problems if args.verbose else grouped(problems):
        print(f"{args.file}: {problem}", file=sys.stderr)
    print(f"Imported {imported.message_count} messages ({len(imported.entries)} entries) from {args.file}")
    print(f"Session {session_id} in {workspace}")
    print(render.usage_line(opened["usage"]))
    print(f"Session file: {path}")
    if problems:
        listed = "listed" if args.verbose else "by kind; --verbose lists every line"
        print(f"{len(problems)} lines were not imported as they stood ({listed}, on stderr).")
    return EXIT_OK


AGENT_NAMES = {"claude-code": "Claude Code", "codex": "Codex", "pi": "pi"}


def read_transcript(path: Path, reader: Callable[[Any], T]) -> T:
    """`reader` over the lines of a transcript, plain or gzip; a file that cannot be read as
    text is a ReplayFileError (exit 2) saying why."""
    from contextd_client.transcripts import open_transcript

    try:
        with open_transcript(path) as handle:
            return reader(handle)
    except UnicodeDecodeError as error:
        raise ReplayFileError(f"{path} is not a UTF-8 text file (byte {error.start}); a transcript is JSONL") from None
    except EOFError:
        raise ReplayFileError(f"{path}: the gzip data is cut short") from None
    except OSError as error:
        raise ReplayFileError(f"cannot read {path}: {error.strerror or error}") from None


async def run_watch(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    settings = with_window(settings, default_model(settings), args.window)
    source: ReplayFile | None = read_file(args.replay) if args.replay is not None else None
    stop = StopSignals()

    def show(method: str, params: dict[str, Any]) -> None:
        try:
            if args.json:
                print(json.dumps({"method": method, "params": params}, ensure_ascii=False), flush=True)
            else:
                print(render.notification_line(method, params, datetime.now()), flush=True)
        except StdoutClosed:
            stop.stop()  # nobody reads any more: stop watching

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
        if source is not None:
            if not await stop.unless_stopped(replay(client, session_id, source, display=None)):
                return stop.exit_code
            if not args.follow:
                return EXIT_OK
        await until_stopped_or_gone(client, stop)
    return stop.exit_code


class StopSignals:
    """Ctrl-C (exit 130) or SIGTERM (exit 0) ends a command that runs until stopped."""

    def __init__(self) -> None:
        self._stopped = asyncio.Event()
        self.exit_code = EXIT_OK
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self.stop, EXIT_INTERRUPTED)
        loop.add_signal_handler(signal.SIGTERM, self.stop)

    def stop(self, exit_code: int = EXIT_OK) -> None:
        self.exit_code = exit_code
        self._stopped.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    async def wait(self) -> None:
        await self._stopped.wait()

    async def unless_stopped(self, work: Coroutine[Any, Any, Any]) -> bool:
        """Run `work` to its end (True; what it raised is raised) unless a stop comes first
        (False: `work` is cancelled)."""
        working = asyncio.ensure_future(work)
        stopped = asyncio.ensure_future(self.wait())
        await asyncio.wait([working, stopped], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not working.done():
            working.cancel()
            return False
        working.result()
        return True


async def until_stopped_or_gone(client: ContextdClient, stop: StopSignals) -> None:
    """Wait for a stop signal; DaemonUnavailable (exit 3) when the daemon goes away first."""
    stopped = asyncio.ensure_future(stop.wait())
    gone = asyncio.ensure_future(client.wait_closed())
    await asyncio.wait([stopped, gone], return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    gone.cancel()
    if not stop.stopped:
        raise daemon_gone(client)


def daemon_gone(client: ContextdClient) -> DaemonUnavailable:
    return DaemonUnavailable(
        f"the daemon went away ({client.closed_reason or 'connection closed'}); "
        "its log says why (`contextd status` finds the shared one)"
    )


async def run_follow(args: argparse.Namespace) -> int:
    """Enable following, watch the workspace, print each mirror's changes until interrupted."""
    if args.all and args.workspace:
        raise UsageError("give either --workspace or --all, not both")
    workspace = str(Path(args.workspace or os.getcwd()).resolve())
    # Its own signal handlers, as watch has: a follow started in the background (where
    # SIGINT is ignored, so Python raises no KeyboardInterrupt) still ends on SIGINT/SIGTERM.
    stop = StopSignals()
    async with await connect(args, load_settings(args)) as client:
        await stop.unless_stopped(show_mirrors(client, args, workspace))
    return stop.exit_code


async def show_mirrors(client: ContextdClient, args: argparse.Namespace, workspace: str) -> None:
    """Turn following on, then print each mirror of the workspace (or of all, --all) as it
    is now and at each change, until the daemon goes away."""
    changes = client.activity()
    following = await client.follow(enabled=True)
    if args.all:
        listed = await client.watch_workspace(all_workspaces=True)
    else:
        listed = await client.watch_workspace(workspace)
    mirrors = [row for row in listed["sessions"] if "source" in row]
    shown: dict[str, str | None] = {row["sessionId"]: None for row in mirrors}
    if not mirrors and not args.json:
        elsewhere = [row for row in (await client.session_list())["sessions"] if "source" in row]
        print(render.follow_watching(following["agents"], None if args.all else workspace, len(elsewhere)), file=sys.stderr)
    for row in mirrors:  # the mirrors as they are now (state carries the source too)
        await show_mirror(client, args, dict(await client.state(row["sessionId"])), shown)
    async for notification in changes:
        if notification.params.get("source"):
            await show_mirror(client, args, notification.params, shown)
    raise daemon_gone(client)  # the stream ends only when the connection does


async def show_mirror(
    client: ContextdClient, args: argparse.Namespace, activity: dict[str, Any], shown: dict[str, str | None]
) -> None:
    """One line for a mirrored session as it is now, fitted to the terminal, then where its
    agent compacts it when that is new; `shown`: the sessions shown so far (among which an
    id's prefix is unique), each with the agent's point last printed for it."""
    session_id = activity["sessionId"]
    compactions = (await client.stats(session_id))["compactions"]["count"]
    if args.json:
        print(json.dumps({**activity, "compactions": compactions}, ensure_ascii=False), flush=True)
        return
    printed, point = shown.get(session_id), render.follow_point_line(activity)
    shown[session_id] = point
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    print(render.follow_line(activity, compactions, datetime.now(), width, shown), flush=True)
    if point is not None and point != printed:
        print(point, flush=True)


async def run_demo(args: argparse.Namespace) -> int:
    from contextd_client.demo import run_demo as demo

    return await demo(args, load_settings(args), connect)


COMMANDS: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "demo": run_demo,
    "replay": run_replay,
    "import": run_import,
    "sessions": run_sessions,
    "show": run_show,
    "tree": run_tree,
    "compact": run_compact,
    "handoff": run_handoff,
    "watch": run_watch,
    "follow": run_follow,
    "status": run_status,
    **agent_commands(connect, load_settings),
    "config": run_config,
    "completion": run_completion,
}


# --- errors and the exit code -------------------------------------------------------------


class StdoutClosed(Exception):
    """Whoever read our output went away (`contextd tree X | head -2`): not an error."""


class GuardedStdout:
    """stdout that turns a broken pipe into StdoutClosed and remembers it, so the command
    ends quietly instead of blaming the daemon."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            self.broken = True
            raise StdoutClosed() from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self.broken = True
            raise StdoutClosed() from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@dataclass
class Failure:
    """What went wrong, for a person (one line on stderr) or a script (`--json`)."""

    kind: str
    message: str
    exit_code: int
    details: dict[str, Any] = field(default_factory=dict)

    def show(self, as_json: bool, usage: str = "") -> int:
        if as_json:
            body = {"kind": self.kind, "message": self.message, "exitCode": self.exit_code, **self.details}
            print(json.dumps({"error": body}, ensure_ascii=False), file=sys.stderr)
        else:
            print(f"{usage}contextd: error: {self.message}", file=sys.stderr)
        return self.exit_code


def classify(error: BaseException) -> Failure:
    from contextd.rpc.access import AccessRefused
    from contextd.store import SessionLocked

    from contextd_client.datadir import Ambiguous, NotFound, locked_message

    if isinstance(error, UsageError):
        return Failure("usage", str(error), EXIT_USAGE)
    if isinstance(error, ReplayFileError):
        return Failure("input", str(error.args[0]), EXIT_USAGE, error.args[1] if len(error.args) > 1 else {})
    if isinstance(error, Ambiguous):
        return Failure("usage", str(error), EXIT_USAGE)
    if isinstance(error, NotFound):
        return Failure("not-found", str(error), EXIT_REFUSED)
    if isinstance(error, SessionLocked):
        return Failure("locked", locked_message(error), EXIT_REFUSED, {"sessionId": error.session_id, "pid": error.pid})
    if isinstance(error, ContextdError) and error.code == INTERNAL_ERROR:
        first_line = (error.message or "no message").strip().splitlines()[0]
        return Failure(
            "daemon-internal",
            f"the daemon failed with an internal error: {first_line} (a bug in contextd; "
            "run the command with --log-level DEBUG to see the daemon's traceback)",
            EXIT_INTERNAL, {"code": error.code},
        )
    if isinstance(error, ContextdError):
        details: dict[str, Any] = {"code": error.code}
        if error.data is not None:
            details["data"] = error.data
        return Failure("refused", f"the daemon refused: {error.message} (code {error.code})", EXIT_REFUSED, details)
    if isinstance(error, DaemonUnavailable):
        return Failure("no-daemon", str(error), EXIT_NO_DAEMON)
    if isinstance(error, AccessRefused):
        return Failure("refused", f"refused: {error}", EXIT_REFUSED)
    if isinstance(error, ConnectionLost):
        return Failure("no-daemon", f"lost the daemon: {error}", EXIT_NO_DAEMON)
    if isinstance(error, OSError) and error.filename:
        return Failure("file", f"{error.filename}: {error.strerror}", EXIT_USAGE)
    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" at {Path(where.filename).name}:{where.lineno}" if where else ""
    return Failure(
        "internal",
        f"internal error: {type(error).__name__}: {error}{at} (a bug in contextd; "
        "--log-level DEBUG prints the traceback)",
        EXIT_INTERNAL,
    )


def report_error(error: BaseException, *, as_json: bool, debug: bool = False) -> int:
    usage = getattr(error, "usage", "") if not as_json else ""
    failure = classify(error)
    if debug and failure.kind in ("internal", "daemon-internal"):
        if isinstance(error, ContextdError) and error.data:
            print(error.data if isinstance(error.data, str) else json.dumps(error.data, indent=2), file=sys.stderr)
        traceback.print_exception(error, file=sys.stderr)
    return failure.show(as_json, usage)


def run_client_command(args: argparse.Namespace) -> int:
    """Run one client command; returns the exit code (EXIT_CODES)."""
    guarded = GuardedStdout(sys.stdout)
    sys.stdout = guarded  # type: ignore[assignment]
    try:
        return asyncio.run(COMMANDS[args.command](args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as error:  # noqa: BLE001 -- every failure becomes one clear line and its exit code
        if guarded.broken:
            return EXIT_OK  # the reader left; whatever failed after that is nobody's concern
        return report_error(error, as_json=args.json, debug=args.log_level == "DEBUG")
    finally:
        sys.stdout = guarded._stream
        if guarded.broken:
            quiet_end_of_output()


def quiet_end_of_output() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not complain either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
