"""Many clients, one daemon (issue 14): the Python client and the VS Code extension's
JSON-RPC stack attached to one shared daemon started on demand, and 20 clients at once."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from contextd_client import ContextdClient, ContextdError

from tests.factories import coding_turn, user
from tests.shared_daemon import (
    contextd,
    running,
    shared_command,
    stop_daemon,
)

REPO = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO / "editors" / "vscode" / "node_modules"


class NodeClient:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []

    async def next(self, kind: str, timeout: float = 60, **match: Any) -> dict[str, Any]:
        for line in self.lines:
            if line["kind"] == kind and all(line["params"].get(k) == v for k, v in match.items()):
                return line["params"]
        assert self.process.stdout is not None
        while True:
            raw = await asyncio.wait_for(self.process.stdout.readline(), timeout)
            assert raw, f"the vscode-jsonrpc client ended before {kind}"
            line = json.loads(raw)
            self.lines.append(line)
            assert line["kind"] != "error", line
            if line["kind"] == kind and all(line["params"].get(k) == v for k, v in match.items()):
                return line["params"]


@pytest_asyncio.fixture
async def python_client(tmp_path: Path, shared_env: dict[str, str]) -> AsyncIterator[ContextdClient]:
    client = await ContextdClient.spawn(data_dir=tmp_path / "data", workspace=tmp_path, env=shared_env, shared=True)
    pid = (await client.daemon_status())["pid"]
    yield client
    await client.close()
    stop_daemon(pid)


@pytest.mark.skipif(not NODE_MODULES.exists() or shutil.which("node") is None, reason="needs node and editors/vscode/node_modules")
async def test_a_script_and_the_vscode_stack_share_one_daemon(python_client, tmp_path, shared_env):
    client = python_client
    status = await client.daemon_status()
    assert status["dedicated"] is False and status["address"].startswith(shared_env["XDG_RUNTIME_DIR"])
    opened = await client.session_open(name="shared")
    session = opened["sessionId"]

    node = NodeClient(await asyncio.create_subprocess_exec(
        "node", str(Path(__file__).with_name("vscode_jsonrpc_client.js")), sys.executable,
        str(tmp_path / "data"), session,
        env={**shared_env, "VSCODE_NODE_MODULES": str(NODE_MODULES)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    ))
    seen_open = await node.next("opened")
    assert seen_open["sessionId"] == session
    assert (await client.daemon_status())["pid"] == status["pid"], "one daemon for both"

    appended = await client.append(session, [user("the script speaks")])
    usage = await node.next("contextd/tokenUsage", sessionId=session, tokens=appended["usage"]["tokens"])
    assert usage["tokens"] > opened["usage"]["tokens"]

    assert node.process.stdin is not None
    node.process.stdin.write(b"quit\n")
    await node.process.stdin.drain()
    assert (await node.next("quit"))["forwarderExit"] == 0
    assert await asyncio.wait_for(node.process.wait(), 30) == 0

    again = await client.append(session, [user("still here after the editor left")])
    assert again["usage"]["tokens"] > appended["usage"]["tokens"]
    for _ in range(3):
        listed = contextd(shared_env, tmp_path / "data", "sessions", "--json")
        assert listed.returncode == 0, listed.stderr
        assert session in listed.stdout
    shown = contextd(shared_env, tmp_path / "data", "status")
    assert shown.returncode == 0 and status["address"] in shown.stdout and session in shown.stdout
    assert (await client.daemon_status())["pid"] == status["pid"]


async def test_two_clients_starting_at_once_get_one_daemon(tmp_path, shared_env):
    clients = await asyncio.gather(*[
        ContextdClient.spawn(data_dir=tmp_path / "data", env=shared_env, shared=True) for _ in range(3)
    ])
    pids = {(await client.daemon_status())["pid"] for client in clients}
    assert len(pids) == 1
    for client in clients:
        await client.close()
    stop_daemon(pids.pop())


async def test_the_shared_daemon_stops_after_its_grace_period(tmp_path, shared_env):
    data_dir = tmp_path / "data"
    forwarder = await ContextdClient.spawn(
        data_dir=data_dir, env=shared_env,
        command=shared_command(data_dir, "--grace", "1"),
    )
    pid = (await forwarder.daemon_status())["pid"]
    await forwarder.close()
    # Watch the process, not `status`: every `status` is a client and restarts the grace period.
    for _ in range(600):
        if not running(pid):
            break
        await asyncio.sleep(0.1)
    shown = contextd(shared_env, data_dir, "status")
    if shown.returncode == 0:
        stop_daemon(pid)
    assert shown.returncode == 3 and "no shared daemon runs" in shown.stderr


@pytest_asyncio.fixture
async def socket_daemon(tmp_path: Path) -> AsyncIterator[Path]:
    runtime = Path(tempfile.mkdtemp(prefix="ctd-", dir="/tmp"))
    path = runtime / "d.sock"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contextd", "--data-dir", str(tmp_path / "data"), "serve", "--socket", str(path),
        stderr=asyncio.subprocess.DEVNULL,
    )
    for _ in range(600):
        if path.exists():
            break
        await asyncio.sleep(0.05)
    yield path
    process.terminate()
    await process.wait()
    shutil.rmtree(runtime, ignore_errors=True)


async def test_a_client_attached_to_a_socket_answers_its_hooks(socket_daemon, tmp_path):
    """connect_unix declares the hooks as spawn does: the daemon asks this client before it
    moves the leaf, and its cancel holds."""
    asked: list[dict[str, Any]] = []

    async def cancel(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"cancel": True}

    async with await ContextdClient.connect_unix(socket_daemon, workspace=tmp_path, before_navigate=cancel) as client:
        session = (await client.session_open(name="hooked"))["sessionId"]
        first = await client.append(session, coding_turn(0))
        second = await client.append(session, coding_turn(1))
        with pytest.raises(ContextdError) as refused:
            await client.navigate(session, first["leafId"])
        assert refused.value.code == -32800
        assert (await client.state(session))["leafId"] == second["leafId"]
    assert [params["targetId"] for params in asked] == [first["leafId"]]


async def test_twenty_clients_append_at_once(socket_daemon, tmp_path):
    clients = [await ContextdClient.connect_unix(socket_daemon, workspace=tmp_path) for _ in range(20)]
    streams = [client.notifications("contextd/tokenUsage") for client in clients]
    own = [(await client.session_open(name=f"own {i}"))["sessionId"] for i, client in enumerate(clients)]
    shared = (await clients[0].session_open(name="shared"))["sessionId"]
    for client in clients[1:]:
        await client.session_open(session_id=shared)

    async def work(index: int, client: ContextdClient) -> list[tuple[str, str, str]]:
        acknowledged = []
        for turn in range(5):
            for session in (own[index], shared):
                text = f"client {index} turn {turn} into {session}"
                reply = await client.append(session, [user(text)])
                assert reply["usage"]["sessionId"] == session
                acknowledged.append((session, reply["entryIds"][0], text))
        return acknowledged

    results = await asyncio.gather(*[work(i, client) for i, client in enumerate(clients)])
    for session in [*own, shared]:
        nodes = {node["id"] for node in (await clients[0].tree(session))["nodes"]}
        context = json.dumps((await clients[0].context(session))["messages"])
        mine = [(entry, text) for result in results for s, entry, text in result if s == session]
        assert mine and all(entry in nodes for entry, _ in mine)
        assert all(text in context for _, text in mine)
    assert len([a for result in results for a in result if a[0] == shared]) == 100
    for index, stream in enumerate(streams):
        heard = {n.params["sessionId"] for n in stream.drain()}
        assert heard == {own[index], shared}, "each client hears its own session and the shared one only"
    for client in clients:
        await client.close()
