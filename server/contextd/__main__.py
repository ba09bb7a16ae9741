"""`python -m contextd` runs the `contextd` command the installed distribution names. The
client package assembles that command (the daemon's `serve` and the client commands), and
the daemon package imports nothing from the client package: it is found by its entry point."""

import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, distribution


def installed_command() -> Callable[[], int]:
    try:
        (command,) = distribution("contextd-server").entry_points.select(group="console_scripts", name="contextd")
        main: Callable[[], int] = command.load()
    except (PackageNotFoundError, ValueError, ImportError, AttributeError):
        sys.exit(
            "contextd: the `contextd` command is not installed as it should be; install "
            "contextd-server again (`pip install -e .` in a checkout)"
        )
    return main


sys.exit(installed_command()())
