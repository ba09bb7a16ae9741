"""Daemons for the storage tests, over stdio or over the shared daemon's socket, and the
small file systems (tmpfs) they run on, full or read-only."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from contextd_client import ContextdClient

from tests.shared_daemon import running, shared_command, shared_environment, stop_daemon

TRANSPORTS = ("stdio", "shared")
WAIT_SECONDS = 60.0


class Daemons:
    """Clients of a daemon on one transport: a dedicated `contextd serve` per client over
    stdio, or the shared daemon (one process, reached through its socket)."""

    def __init__(self, transport: str, env: dict[str, str]) -> None:
        self.transport = transport
        self.env = env
        self.clients: list[ContextdClient] = []

    async def start(
        self, data_dir: Path, workspace: Path, settings: dict[str, Any] | None = None, **options: Any
    ) -> ContextdClient:
        """A client of a daemon with daemon-wide `settings`: given at the handshake over
        stdio, in a settings file (`--settings`) to the shared daemon."""
        workspace.mkdir(parents=True, exist_ok=True)
        if self.transport == "shared":
            extra = []
            if settings is not None:
                settings_file = data_dir.parent / "daemon-settings.json"
                settings_file.write_text(json.dumps(settings))
                extra = ["--settings", str(settings_file)]
            options.setdefault("command", shared_command(data_dir, *extra))
        else:
            options["settings"] = settings
        client = await ContextdClient.spawn(
            data_dir=data_dir, workspace=workspace, env=self.env, shared=self.transport == "shared", **options
        )
        self.clients.append(client)
        return client

    async def stop(self) -> None:
        """Every client closed and every daemon ended (the shared one by its pid)."""
        pids = set()
        for client in self.clients:
            with contextlib.suppress(Exception):
                pids.add((await client.daemon_status())["pid"])
            with contextlib.suppress(Exception):
                await client.close()
        self.clients.clear()
        if self.transport == "shared":
            for pid in pids:
                stop_daemon(pid)
            await wait_until(lambda: not any(running(pid) for pid in pids), "the shared daemon to exit")


async def wait_until(condition: Any, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"waited {WAIT_SECONDS:g}s for {what}")
        await asyncio.sleep(0.05)


@pytest_asyncio.fixture(params=TRANSPORTS)
async def daemons(request: pytest.FixtureRequest) -> AsyncIterator[Daemons]:
    with shared_environment() as env:
        if request.param == "stdio":
            env = {**env, "CONTEXTD_SHARED": "0"}
        started = Daemons(request.param, env)
        try:
            yield started
        finally:
            await started.stop()


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


@contextlib.contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` for the test (the tests run as root)."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path))
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"cannot mount a tmpfs here (needs root and mount rights): {error}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


def make_read_only(path: Path) -> None:
    mount("-o", "remount,ro", str(path))


def make_writable(path: Path) -> None:
    mount("-o", "remount,rw", str(path))


def fill(filesystem: Path) -> Path:
    """Fill a file system up to its last byte; returns the file that fills it."""
    filler = filesystem / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as out:
        while chunk:
            try:
                out.write(chunk)
            except OSError:
                chunk = chunk[: len(chunk) // 2]
    return filler


def free_bytes(filesystem: Path) -> int:
    info = os.statvfs(filesystem)
    return info.f_bavail * info.f_frsize
