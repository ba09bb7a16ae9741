"""`contextd ...`: `serve` runs the daemon; every other command is a client of it."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from contextd import __version__

CLIENT_COMMANDS = ("demo", "replay", "import", "sessions", "tree", "compact", "handoff", "watch")


def global_options(defaults: bool) -> argparse.ArgumentParser:
    """Options that may stand before or after the command (`contextd --data-dir D serve` and
    `contextd serve --data-dir D`); after it they only override what was given before."""
    options = argparse.ArgumentParser(add_help=False)
    default: dict[str, Any] = {} if defaults else {"default": argparse.SUPPRESS}
    options.add_argument(
        "--data-dir", help="where sessions live (default $XDG_DATA_HOME/contextd)", **default
    )
    options.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        **({"default": "INFO"} if defaults else default),
    )
    return options


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="contextd", description=__doc__, parents=[global_options(defaults=True)]
    )
    parser.add_argument("--version", action="version", version=f"contextd {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve", help="run the daemon (stdio by default)", parents=[global_options(defaults=False)]
    )
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    return parser.parse_args(argv)


def parse_host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit(f"contextd: --tcp wants HOST:PORT, got {value!r}")
    return host, int(port)


class ClientErrorFilter(logging.Filter):
    """pygls logs a traceback for every error reply; a client's bad request is not our fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        from pygls.exceptions import JsonRpcException, JsonRpcInternalError

        error = record.exc_info[1] if record.exc_info else None
        return not (
            isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError)
        )


def configure_logging(level: str) -> None:
    """Logs go to stderr: stdout is the protocol channel."""
    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # pygls and the HTTP stack log every message at INFO, contents included: only when debugging.
    for chatty in ("pygls", "httpx", "httpx2", "httpcore", "httpcore2", "anthropic", "openai"):
        logging.getLogger(chatty).setLevel(level if level == "DEBUG" else "WARNING")
    for handler in logging.getLogger().handlers:
        handler.addFilter(ClientErrorFilter())


def serve(args: argparse.Namespace) -> int:
    from contextd.server import create_server

    configure_logging(args.log_level)
    server = create_server(data_dir=args.data_dir)
    if args.tcp:
        host, port = parse_host_port(args.tcp)
        server.start_tcp(host, port)
    else:
        server.start_io()
    return 0


GLOBAL_OPTIONS_WITH_VALUE = ("--data-dir", "--log-level")


def command_name(argv: list[str]) -> str | None:
    """The first word that is neither a global option nor its value."""
    skip_next = False
    for arg in argv:
        if skip_next:
            skip_next = False
        elif arg in GLOBAL_OPTIONS_WITH_VALUE:
            skip_next = True
        elif not arg.startswith("-"):
            return arg
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if command_name(argv) in CLIENT_COMMANDS:
        from contextd_client.cli import main as client_main

        return client_main(argv)
    args = parse_args(argv)
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
