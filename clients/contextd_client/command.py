"""`contextd ...`, the installed command (and `python -m contextd`): the daemon's `serve` and
the client commands in one parser. It is assembled here, on the client side, so that the
dependency runs from the client package to the daemon package and never back."""

from __future__ import annotations

import sys

from contextd.cli import UsageError, parse_args, serve

from contextd_client.cli import contextd_parser, report_error, run_client_command


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv, contextd_parser())
        if args.command == "serve":
            return serve(args)
    except UsageError as error:
        return report_error(error, as_json="--json" in argv)
    return run_client_command(args)


if __name__ == "__main__":
    sys.exit(main())
