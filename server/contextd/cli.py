"""The daemon's part of the `contextd` command: `serve`, the options every command takes, and
the parser they share. The client package assembles the whole command from it
(clients/contextd_client/command.py); nothing here imports the client package."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from contextd import __version__

if TYPE_CHECKING:
    from contextd.model import Settings

SUMMARY = "contextd: the daemon that owns the context of LLM coding sessions, and its commands."
EPILOG = """\
examples:
  contextd demo                        watch a long session compact in a small window
  contextd sessions                    the sessions of this user, newest first
  contextd show SESSION                the latest summary (or a message) in full
  contextd serve                       the daemon on stdio, for an editor
  contextd COMMAND --help              what a command takes
"""
AddCommand = Callable[..., argparse.ArgumentParser]
"""Adds one subcommand: its name, one-line summary, examples and argparse's own arguments."""
AddCommands = Callable[[AddCommand, argparse.ArgumentParser], None]
"""Adds the commands besides `serve`, given `AddCommand` and the options they all take."""
LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]
SERVE_LOG_LEVEL = "INFO"


class UsageError(Exception):
    """A mistake in the command line or its input: exit code 2. `usage` is the command's."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.usage = usage


class HelpFormatter(argparse.HelpFormatter):
    """Prose is wrapped to the terminal between words; indented lines (examples, lists) keep
    their lines; an option's default is shown when it has a meaningful one."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        lines = []
        for line in text.splitlines():
            if not line.strip() or line.startswith(" "):
                lines.append(indent + line)
            else:
                lines.append(textwrap.fill(
                    line, width, initial_indent=indent, subsequent_indent=indent,
                    break_long_words=False, break_on_hyphens=False,
                ))
        return "\n".join(lines)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            action.option_strings
            and default not in (None, False, argparse.SUPPRESS)
            and "%(default)" not in text
            and "default" not in text
        ):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """Usage errors raise UsageError instead of exiting, so `--json` can report them as JSON."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


def global_options(defaults: bool) -> Parser:
    """Options that may stand before or after the command (`contextd --data-dir D tree X` and
    `contextd tree X --data-dir D`); after it they override what was given before."""
    options = Parser(add_help=False)
    # After a command they are the same options: its help names them once, in GLOBAL_NOTE.
    keep: dict[str, Any] = {"default": argparse.SUPPRESS, "help": argparse.SUPPRESS} if not defaults else {}
    add = global_adder(options, keep)
    add(
        "--data-dir", metavar="DIR",
        help="where sessions live (default: $XDG_DATA_HOME/contextd, else ~/.local/share/contextd)",
    )
    add(
        "--log-level", choices=LOG_LEVELS, type=str.upper,
        help=f"the daemon's log level on stderr (default: {SERVE_LOG_LEVEL} for serve, "
        "WARNING for a daemon a client command starts)",
    )
    add(
        "--tcp", metavar="HOST:PORT",
        help="serve: listen on TCP instead of stdio; other commands: use the daemon listening there",
    )
    add(
        "--json", action="store_true",
        help="client commands: machine-readable output, and errors as a JSON object on stderr",
    )
    add(
        "--settings", metavar="FILE",
        help="client commands: a JSON file of settings for the daemon (protocol.md, Settings); "
        "serve: the daemon-wide settings of a daemon serving many clients",
    )
    return options


GLOBAL_NOTE = (
    "global options, before or after the command: --data-dir DIR, --log-level LEVEL, "
    "--tcp HOST:PORT, --json, --settings FILE (`contextd --help` says what each does)"
)


def global_adder(options: argparse.ArgumentParser, keep: dict[str, Any]) -> Any:
    """`add_argument` with `keep` laid over each option's own keywords."""

    def add(*names: str, **kwargs: Any) -> None:
        options.add_argument(*names, **{**kwargs, **keep})

    return add


def build_parser(add_commands: AddCommands, exit_codes: Mapping[int, str]) -> Parser:
    """The whole command: `serve`, then what `add_commands` adds; `exit_codes` are listed in
    the help."""
    codes = "\n".join(f"  {code:<3} {meaning}" for code, meaning in exit_codes.items())
    parser = Parser(
        prog="contextd", description=SUMMARY, epilog=f"{EPILOG}\nexit codes:\n{codes}\n",
        formatter_class=HelpFormatter,
        parents=[global_options(defaults=True)],
    )
    parser.add_argument("--version", action="version", version=f"contextd {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    after = global_options(defaults=False)

    def add_command(name: str, summary: str, epilog: str = "", **extra: Any) -> argparse.ArgumentParser:
        """A subcommand with a one-line summary, its examples and the global options."""
        return commands.add_parser(
            name, help=summary, description=extra.pop("description", summary),
            epilog=f"{epilog}\n{GLOBAL_NOTE}" if epilog else GLOBAL_NOTE,
            formatter_class=HelpFormatter, parents=[after], **extra,
        )

    serve = add_command(
        "serve", "run the daemon (LSP base protocol, JSON-RPC 2.0; stdio unless --tcp, --socket or --shared)",
        epilog="examples:\n  contextd serve\n  contextd serve --shared\n"
        "  contextd serve --tcp 127.0.0.1:7777 --log-level DEBUG\n",
    )
    add_serve_options(serve)
    add_commands(add_command, after)
    return parser


def add_serve_options(serve: argparse.ArgumentParser) -> None:
    from contextd.rpc.framing import (
        DEFAULT_MAX_FRAME_BYTES,
        DEFAULT_MAX_TOTAL_WRITE_BUFFER_BYTES,
        DEFAULT_MAX_WRITE_BUFFER_BYTES,
    )

    where = serve.add_mutually_exclusive_group()
    where.add_argument("--socket", metavar="PATH", help="serve many clients on a Unix socket")
    where.add_argument(
        "--shared", action="store_true",
        help="speak stdio, forwarded to the per-user shared daemon (started if none runs)",
    )
    serve.add_argument(
        "--allow-remote", action="store_true",
        help="--tcp: accept a host that is not a loopback address (127.0.0.1, ::1, localhost)",
    )
    serve.add_argument(
        "--grace", metavar="SECONDS", type=float,
        help="a daemon serving many clients stops after this long with none "
        "(default: never; 300 for the shared daemon)",
    )
    serve.add_argument(
        "--max-frame-bytes", metavar="N", type=int, default=DEFAULT_MAX_FRAME_BYTES,
        help="larger messages are refused with an error",
    )
    serve.add_argument(
        "--max-write-buffer-bytes", metavar="N", type=int, default=DEFAULT_MAX_WRITE_BUFFER_BYTES,
        help="a client that leaves more than this unread is disconnected",
    )
    serve.add_argument(
        "--max-total-write-buffer-bytes", metavar="N", type=int, default=DEFAULT_MAX_TOTAL_WRITE_BUFFER_BYTES,
        help="when all clients together leave more than this unread, the one leaving the most is disconnected",
    )


def parse_args(argv: list[str], parser: Parser) -> argparse.Namespace:
    if not argv:
        raise UsageError("a command is needed", parser.format_help())
    args = parser.parse_args(argv)
    if args.command is None:
        raise UsageError("a command is needed", parser.format_usage())
    check_data_dir(args.data_dir)
    return args


def check_data_dir(data_dir: str | None) -> None:
    """A --data-dir that is not a directory is refused before anything runs on it."""
    if data_dir is None:
        return
    from pathlib import Path

    path = Path(data_dir).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(f"--data-dir {data_dir} is a file, not a directory")


def parse_host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--tcp wants HOST:PORT, got {value!r}")
    return host, int(port)


HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "anthropic", "openai", "urllib3")
"""They log request and response headers at DEBUG, and a server may echo the key there."""


class RedactSecrets(logging.Filter):
    """No record leaves with a fragment of an API key this process has read."""

    def filter(self, record: logging.LogRecord) -> bool:
        from contextd.summarizers.errors import redact

        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        record.msg, record.args = redact(text), ()
        return True


def configure_logging(level: str) -> None:
    """Logs go to stderr: stdout is the protocol channel."""
    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # Even at DEBUG: the HTTP stack's header logging is never worth a leaked key.
    for chatty in HTTP_LOGGERS:
        logging.getLogger(chatty).setLevel("WARNING")
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactSecrets())


def serve(args: argparse.Namespace) -> int:
    from contextd.rpc import access

    if args.json:
        raise UsageError("--json is for client commands")
    if args.tcp and args.shared:
        raise UsageError("--tcp and --shared exclude each other")
    address = parse_host_port(args.tcp) if args.tcp else None
    remote = address is not None and not access.is_loopback(address[0])
    if remote and not args.allow_remote:
        raise UsageError(
            f"--tcp {args.tcp} is not a loopback address: other machines could reach the "
            "daemon (with its token); add --allow-remote if that is what you want"
        )
    configure_logging(args.log_level or SERVE_LOG_LEVEL)
    if remote:
        assert address is not None
        logging.getLogger("contextd").warning(
            "listening on %s, beyond this machine: anyone who can reach it and holds the token "
            "reads and writes every session (the connection is not encrypted)", address[0],
        )
    try:
        return serve_where_asked(args, address)
    except access.AccessRefused as refused:
        print(f"contextd: refused: {refused}", file=sys.stderr)
        return 1


def serve_where_asked(args: argparse.Namespace, address: tuple[str, int] | None) -> int:
    import asyncio
    from pathlib import Path

    from contextd.rpc import listen, shared
    from contextd.server import create_daemon

    settings = read_settings(args.settings)
    if args.shared:
        return shared.forward_stdio(args)
    many = bool(address or args.socket)
    daemon = create_daemon(
        args.data_dir, settings, dedicated=not many, max_frame_bytes=args.max_frame_bytes,
        max_write_buffer_bytes=args.max_write_buffer_bytes,
        max_total_write_buffer_bytes=args.max_total_write_buffer_bytes,
    )
    if address:
        return asyncio.run(listen.serve_sockets(daemon, tcp=address, grace_seconds=args.grace))
    if args.socket:
        path = Path(args.socket)
        if path.exists() and listen.socket_in_use(path):
            raise UsageError(f"a daemon already listens on {path}")
        path.unlink(missing_ok=True)
        return asyncio.run(listen.serve_sockets(daemon, unix_path=path, grace_seconds=args.grace))
    return asyncio.run(listen.serve_stdio(daemon))


def read_settings(path: str | None) -> Settings | None:
    """`--settings FILE` for serve; a file that cannot be used is a usage error (exit 2)."""
    from contextd.model import Settings
    from contextd.settings import SettingsFileError, read_settings_option

    if path is None:
        return None
    try:
        return Settings.model_validate(read_settings_option(path))
    except SettingsFileError as error:
        raise UsageError(f"cannot use the settings file {error}") from None
