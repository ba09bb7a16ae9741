"""A command run on a pseudo-terminal of a given size and its output played into pyte, a
terminal emulator, so that a test sees the screen a person would."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios

import pyte


def record(argv: list[str], columns: int, rows: int) -> tuple[int, bytes]:
    """Run `argv` on a pseudo-terminal of the given size; its exit code and every byte it wrote."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    process = subprocess.Popen(argv, stdin=secondary, stdout=secondary, stderr=secondary,
                               env={**env, "TERM": "xterm-256color"})
    os.close(secondary)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    return process.wait(timeout=60), b"".join(chunks)


def screen_lines(recording: bytes, columns: int) -> list[str]:
    """What the terminal shows at the end, scrollback included (a tall screen keeps it all)."""
    screen = pyte.Screen(columns, 4000)
    pyte.ByteStream(screen).feed(recording)
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return lines
