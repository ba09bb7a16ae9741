"""The client's process and connection handling: clean shutdown, no orphaned daemons, a
daemon that dies, cancellation on the wire, and the blocking wrapper."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from contextd.rpc.framing import FrameReader
from contextd.rpc.messages import framed, read_values
from contextd_client import ConnectionLost, ContextdClient, SyncContextdClient
from contextd_client import types as t


def process_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as gone: it has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.05)
    return False


async def test_close_shuts_the_daemon_down(tmp_path: Path) -> None:
    client = await ContextdClient.spawn(data_dir=tmp_path)
    assert client.daemon is not None
    await client.close()
    assert client.daemon.process.returncode == 0


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from contextd_client import SyncContextdClient
    client = SyncContextdClient.spawn(data_dir=sys.argv[1])
    client.session_open(name="orphan")
    print(client.client.daemon.pid, flush=True)
    if sys.argv[2] == "hang":
        time.sleep(600)
    sys.stdin.readline()  # exit only once the test has seen the daemon running
    """
)


@pytest.mark.parametrize("ending", ["killed", "exits-without-close"])
def test_no_daemon_outlives_its_script(tmp_path: Path, ending: str) -> None:
    script = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(tmp_path), "hang" if ending == "killed" else "exit"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert script.stdin is not None and script.stdout is not None and script.stderr is not None
    first_line = script.stdout.readline()
    assert first_line.strip().isdigit(), (first_line, script.stderr.read())
    daemon_pid = int(first_line)
    assert process_alive(daemon_pid)
    if ending == "killed":
        script.kill()  # no atexit, no finally: only the parent-death signal can help
    else:
        script.stdin.write("\n")
        script.stdin.flush()
    script.wait(timeout=30)
    # Generous: on a loaded 2-core machine the kernel and the script's exit can be slow.
    assert wait_gone(daemon_pid, seconds=30), (
        f"daemon {daemon_pid} outlived its script; script stderr: {script.stderr.read()[-2000:]}"
    )


async def test_a_dying_daemon_fails_pending_requests_and_ends_streams(tmp_path: Path) -> None:
    client = await ContextdClient.spawn(data_dir=tmp_path)
    try:
        stream = client.notifications()
        assert client.daemon is not None
        os.kill(client.daemon.pid, signal.SIGKILL)
        with pytest.raises(ConnectionLost):
            for _ in range(100):  # the first requests may still be written before the pipe breaks
                await client.session_list()
                await asyncio.sleep(0.05)
        with pytest.raises(StopAsyncIteration):
            await stream.get(timeout=5)
    finally:
        await client.close()


class RecordingPeer:
    """A minimal JSON-RPC peer on a real socket: it answers the handshake, never answers
    `contextd/compact`, and records every message the client sends."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.cancelled = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = FrameReader(reader)
        async for message in read_values(frames):
            self.received.append(message)
            method = message.get("method")
            if method == "$/cancelRequest":
                self.cancelled.set()
                reply = {"jsonrpc": "2.0", "id": message["params"]["id"], "error": {"code": -32800, "message": "cancelled"}}
                writer.write(framed(reply))
            elif "id" in message and method in ("initialize", "shutdown"):
                writer.write(framed({"jsonrpc": "2.0", "id": message["id"], "result": {"serverInfo": {"name": "peer"}}}))
            await writer.drain()
        writer.close()


async def test_cancelling_an_awaiting_task_sends_cancel_request() -> None:
    peer = RecordingPeer()
    server = await asyncio.start_server(peer.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        client = await ContextdClient.connect("127.0.0.1", port)
        task = asyncio.create_task(client.compact("s1"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(peer.cancelled.wait(), 5)
        await client.close()
    compact = next(m for m in peer.received if m.get("method") == "contextd/compact")
    cancel = next(m for m in peer.received if m.get("method") == "$/cancelRequest")
    assert cancel["params"] == {"id": compact["id"]}
    assert peer.received[-1]["method"] == "exit"


@pytest.mark.parametrize(
    ("broken", "named"),
    [
        (b"Content-Length: 5\r\n\r\n{oops", "parse error"),
        (b"Content-Length: 1000000000000\r\n\r\n", "larger than the maximum"),
        (b"Content-Length: 2\r\n\r\n[]", "must be a JSON object"),
    ],
)
async def test_a_reply_the_client_cannot_read_fails_the_request_and_says_why(broken: bytes, named: str) -> None:
    """The client reads with the daemon's framing (its limits included): what it cannot
    read ends the connection, so a request fails at once instead of waiting forever."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = FrameReader(reader)
        async for message in read_values(frames):
            if message.get("method") == "initialize":
                writer.write(framed({"jsonrpc": "2.0", "id": message["id"], "result": {"serverInfo": {"name": "peer"}}}))
            elif message.get("method") == "contextd/session/list":
                writer.write(broken)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        client = await ContextdClient.connect("127.0.0.1", server.sockets[0].getsockname()[1])
        with pytest.raises(ConnectionLost, match=named):
            await asyncio.wait_for(client.session_list(), 30)
        await client.close()


async def test_initialize_carries_settings_workspace_and_capabilities(tmp_path: Path) -> None:
    peer = RecordingPeer()
    server = await asyncio.start_server(peer.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def before_compact(params: dict[str, Any]) -> dict[str, Any] | None:
        return None

    async with server:
        client = await ContextdClient.connect(
            "127.0.0.1", port, settings={"idle": {"enabled": True}}, workspace=tmp_path, before_compact=before_compact
        )
        await client.close()
    initialize = peer.received[0]["params"]
    assert initialize["initializationOptions"] == {"idle": {"enabled": True}}
    assert initialize["workspaceFolders"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
    assert initialize["capabilities"]["experimental"]["contextd"]["beforeCompact"] is True
    assert [m.get("method") for m in peer.received[1:]] == ["initialized", "shutdown", "exit"]


def test_sync_client_for_scripts(tmp_path: Path) -> None:
    with SyncContextdClient.spawn(data_dir=tmp_path) as client:
        usages = client.notifications(t.TOKEN_USAGE)
        session_id = client.session_open(workspace=tmp_path, name="script")["sessionId"]
        result = client.append(session_id, [{"role": "user", "content": "from a script"}])
        assert client.state(session_id)["usage"]["tokens"] == result["usage"]["tokens"]
        assert client.context(session_id)["messages"] == [{"role": "user", "content": "from a script"}]
        seen = []
        while not seen or seen[-1]["tokens"] != result["usage"]["tokens"]:
            seen.append(usages.get(timeout=5).params)
        daemon = client.client.daemon
    assert daemon is not None and daemon.process.returncode == 0
    assert json.dumps(seen)  # plain JSON values, not namedtuples


def test_sync_client_serves_the_workspace_instruction_delete_follow_and_status_requests(tmp_path: Path) -> None:
    with SyncContextdClient.spawn(data_dir=tmp_path / "data") as client:
        listed = client.watch_workspace(tmp_path)
        assert listed == {"sessions": []}
        session_id = client.session_open(workspace=tmp_path, name="script")["sessionId"]
        set_ = client.set_instructions(session_id, "Run make check.", source="AGENTS.md")
        assert set_["leafId"] == set_["entryId"]
        assert client.context(session_id)["system"] == "Run make check."
        assert [row["sessionId"] for row in client.watch_workspace(tmp_path)["sessions"]] == [session_id]
        assert client.daemon_status()["sessions"][0]["sessionId"] == session_id
        assert client.follow()["enabled"] is False  # no argument only reads
        client.unwatch_workspace(tmp_path)
        deleted = client.delete_session(session_id)
        assert deleted["deleted"] is True and not Path(deleted["path"]).exists()
        assert client.session_list(workspace=tmp_path)["sessions"] == []
