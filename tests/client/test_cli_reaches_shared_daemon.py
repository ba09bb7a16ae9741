"""A client command (and an agent's hook) reaches a running shared daemon on its socket
itself, with no `serve --shared` child forwarding for it; when nobody answers there it
spawns one as before (which starts the shared daemon)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import struct
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from contextd.rpc.listen import socket_in_use
from contextd.rpc.shared import socket_path
from contextd_client.cli import DaemonUnavailable, connect_running_shared_daemon

from tests.shared_daemon import contextd, shared_environment, stop_daemon


@pytest.fixture
def shared_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    with shared_environment() as env:
        monkeypatch.setenv("XDG_RUNTIME_DIR", env["XDG_RUNTIME_DIR"])  # socket_path here agrees
        yield env


def peer_pid(writer: asyncio.StreamWriter) -> int:
    credentials = writer.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", credentials)[0])


@pytest_asyncio.fixture
async def daemon_behind_recorder(tmp_path: Path, shared_env: dict[str, str]) -> AsyncIterator[list[int]]:
    """A real daemon, reached through the shared socket by a relay that records the pid of
    each process connecting there."""
    real = Path(shared_env["XDG_RUNTIME_DIR"]) / "real.sock"
    daemon = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contextd", "--data-dir", str(tmp_path / "data"), "serve", "--socket", str(real),
        stderr=asyncio.subprocess.DEVNULL,
    )
    for _ in range(1200):
        if socket_in_use(real):
            break
        await asyncio.sleep(0.05)
    peers: list[int] = []

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(peer_pid(writer))
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(str(real))

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while chunk := await source.read(2**16):
                sink.write(chunk)
                await sink.drain()
            sink.close()

        await asyncio.gather(pump(reader, upstream_writer), pump(upstream_reader, writer), return_exceptions=True)

    shared = socket_path(tmp_path / "data")
    shared.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    server = await asyncio.start_unix_server(relay, str(shared))
    yield peers
    server.close()
    daemon.terminate()
    await daemon.wait()


async def test_a_command_against_a_running_shared_daemon_starts_no_process(daemon_behind_recorder, tmp_path, shared_env):
    command = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contextd", "--data-dir", str(tmp_path / "data"), "sessions", "--json",
        env=shared_env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(command.communicate(), 120)
    assert command.returncode == 0, err.decode()
    assert json.loads(out) is not None
    assert daemon_behind_recorder == [command.pid], "the command itself, and only it, connected"


def test_a_stale_socket_file_falls_back_to_starting_the_shared_daemon(tmp_path, shared_env):
    data = tmp_path / "data"
    stale = socket_path(data)
    stale.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(stale))
    leftover.close()  # the file stays, nobody listens: a daemon that died
    assert stale.exists() and not socket_in_use(stale)

    listed = contextd(shared_env, data, "sessions", "--json")

    assert listed.returncode == 0, listed.stderr
    assert socket_in_use(stale), "the spawned forwarder started the shared daemon"
    status = contextd(shared_env, data, "status", "--json")
    stop_daemon(json.loads(status.stdout)["pid"])


async def test_a_daemon_gone_during_the_handshake_means_spawning(tmp_path, shared_env):
    """The daemon stopped between accepting and answering: the caller spawns instead of failing."""
    path = socket_path(tmp_path / "data")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_unix_server(hang_up, str(path))
    args = argparse.Namespace(data_dir=str(tmp_path / "data"))
    try:
        assert await connect_running_shared_daemon(args, {}, None) is None
    finally:
        server.close()
    os.unlink(path)
    assert await connect_running_shared_daemon(args, {}, None) is None, "no socket at all"


async def test_a_socket_folder_open_to_others_is_refused_not_used(tmp_path, shared_env):
    path = socket_path(tmp_path / "data")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.parent.chmod(0o755)
    with pytest.raises(DaemonUnavailable, match="open to other users"):
        await connect_running_shared_daemon(argparse.Namespace(data_dir=str(tmp_path / "data")), {}, None)
