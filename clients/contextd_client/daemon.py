"""Starting a `contextd serve` child that cannot outlive the program that started it.

Three guards, because each covers a different death: `close()` shuts it down politely;
an atexit hook kills whatever is left when the interpreter exits normally; and on Linux
the child asks the kernel for SIGTERM when its parent dies (PR_SET_PDEATHSIG), which
covers SIGKILL and crashes. The daemon also exits when its stdin closes.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

PR_SET_PDEATHSIG = 1
STREAM_LIMIT_BYTES = 2**24
"""The longest line a client's stream reader takes, however the daemon is reached."""

_live_pids: set[int] = set()


def daemon_command(data_dir: str | Path | None, log_level: str, shared: bool = False) -> list[str]:
    """The command line of a stdio daemon run by this interpreter; with `shared`, of the
    forwarder to the per-user shared daemon (started if none runs)."""
    command = [sys.executable, "-m", "contextd", "--log-level", log_level]
    if data_dir is not None:
        command += ["--data-dir", str(data_dir)]
    return [*command, "serve", *(["--shared"] if shared else [])]


PER_CONNECTION_KEYS = {"defaultModel", "compaction.hookTimeoutSeconds"}


def wants_shared_daemon(settings: dict[str, Any] | None) -> bool:
    """The shared daemon by default (CONTEXTD_SHARED=0 turns it off), unless the settings
    carry daemon-wide keys: a shared daemon would not apply them, so such a client gets a
    daemon of its own."""
    if os.environ.get("CONTEXTD_SHARED", "1") == "0":
        return False
    return all(key in PER_CONNECTION_KEYS for key in dotted_keys(settings or {}))


def dotted_keys(settings: dict[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key, value in settings.items():
        if isinstance(value, dict) and value and key != "models":
            keys += dotted_keys(value, f"{prefix}{key}.")
        else:
            keys.append(f"{prefix}{key}")
    return keys


def _parent_death_signal() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    parent = os.getpid()

    def set_parent_death_signal() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        # The parent may have died between fork and prctl: then nobody will signal us.
        if os.getppid() != parent:
            os._exit(1)

    return set_parent_death_signal


@atexit.register
def _kill_leftovers() -> None:
    for pid in list(_live_pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _live_pids.clear()


class DaemonProcess:
    """A running `contextd serve` child and its stdio streams."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        _live_pids.add(process.pid)

    @classmethod
    async def start(
        cls,
        command: Sequence[str],
        *,
        cwd: str | Path | None = None,
        env: dict[str, str] | None = None,
        stderr: IO[Any] | int | None = None,
    ) -> DaemonProcess:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            env=env,
            # Its own session: a Ctrl-C in the terminal reaches the client, which then
            # shuts the daemon down in order instead of both dying at once.
            start_new_session=True,
            preexec_fn=_parent_death_signal(),
            limit=STREAM_LIMIT_BYTES,
        )
        return cls(process)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def reader(self) -> asyncio.StreamReader:
        assert self.process.stdout is not None
        return self.process.stdout

    @property
    def writer(self) -> asyncio.StreamWriter:
        assert self.process.stdin is not None
        return self.process.stdin

    async def wait(self, timeout: float) -> int | None:
        """The exit code, or None if it is still running after `timeout` seconds."""
        try:
            code = await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            return None
        _live_pids.discard(self.pid)
        return code

    async def stop(self, grace_seconds: float = 5.0) -> int:
        """Wait a little for a clean exit, then terminate, then kill."""
        code = await self.wait(grace_seconds)
        for send in (self.process.terminate, self.process.kill):
            if code is not None:
                break
            try:
                send()
            except ProcessLookupError:
                pass
            code = await self.wait(grace_seconds)
        _live_pids.discard(self.pid)
        return code if code is not None else -signal.SIGKILL
