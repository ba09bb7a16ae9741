"""Issue 23, the JSON-RPC layer: every request answered, bounded memory per client, LSP's
progress handshake, one running request per id. Each test runs over a daemon's own stdio
and over the shared daemon's socket (through `contextd serve --shared`)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.client.helpers import SETTINGS, long_conversation

from tests.protocol.wire import TRANSPORTS, WireDaemon, frame, open_wire
from tests.shared_daemon import shared_environment

over_both = pytest.mark.parametrize("transport", TRANSPORTS)
"""Most tests run over stdio and the shared daemon's socket alike; a few need a daemon that
outlives a client, which only the shared one is."""


def list_request(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "contextd/session/list", "params": {}}


async def daemon_log(wire: WireDaemon, transport: str) -> str:
    """What the daemon logged; a stdio daemon's stderr can be read only once it has ended."""
    if transport == "shared":
        return wire.daemon_log()
    await wire.stop()
    return await wire.stderr()


def in_batches(wire: WireDaemon, request_id: str) -> list[dict[str, Any]]:
    return [r for batch in wire.replies if isinstance(batch, list) for r in batch if r["id"] == request_id]


# --- 1: $/cancelRequest with an id that is an object or an array ----------------------------


@over_both
async def test_1_a_cancel_with_an_unusable_id_costs_no_reply(transport, tmp_path):
    async with open_wire(transport, tmp_path / "data", "--log-level", "DEBUG") as wire:
        for bad_id in ({"x": 1}, [1, 2], None, True):
            cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": bad_id}}
            wire.send([cancel, list_request(f"in-batch-{bad_id!r}")])
            wire.send(cancel)
            wire.send(list_request(f"after-{bad_id!r}"))
            await wire.drain()
            assert "sessions" in (await wire.reply_to(f"after-{bad_id!r}"))["result"]
            await wire.wait_until(lambda: in_batches(wire, f"in-batch-{bad_id!r}"))
            assert "sessions" in in_batches(wire, f"in-batch-{bad_id!r}")[0]["result"]
        log = await daemon_log(wire, transport)
    assert "Traceback" not in log and "without a usable id" in log


@over_both
async def test_1_a_batch_member_cancelled_before_it_began_is_answered(transport, tmp_path):
    """The cancel comes in the same read as its batch: the member is cancelled before its
    first step, so the code that answers a cancelled request never ran; it is answered all
    the same, inside its batch (the fuzz found the whole batch went unanswered)."""
    async with open_wire(transport, tmp_path / "data") as wire:
        for round_number in range(5):
            victim = f"victim{round_number}"
            cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": victim}}
            wire.send_bytes(frame([list_request(victim), list_request(f"next{round_number}")]) + frame(cancel))
            await wire.drain()
            await wire.wait_until(lambda: in_batches(wire, f"next{round_number}"))
            [answer] = in_batches(wire, victim)
            assert answer.get("error", {}).get("code") == -32800 or "sessions" in answer.get("result", {}), answer


# --- 2: a header with a short or missing body ---------------------------------------------


@over_both
async def test_2_a_short_or_missing_body_does_not_eat_the_next_request(transport, tmp_path):
    async with open_wire(transport, tmp_path / "data") as wire:
        for number, broken in enumerate([
            b"Content-Length: 5\r\n\r\n",  # no body at all: the next frame starts at its offset 0
            b"Content-Length: 0\r\n\r\n",
            b"Content-Length: 7\r\n\r\n{}",  # a body two bytes long, then the next frame
            b"Content-Length: 40\r\n\r\n",  # longer than the whole next header
        ]):
            wire.send_bytes(broken + frame(list_request(f"kept{number}")))
            await wire.drain()
            assert "sessions" in (await wire.reply_to(f"kept{number}"))["result"], broken
        refused = wire.replies_to(None)
        assert len(refused) == 4 and all(r["error"]["code"] == -32700 for r in refused)


# --- 3: settings nested too deeply ------------------------------------------------------------


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


@over_both
async def test_3_settings_nested_900_levels_are_refused_and_the_daemon_keeps_serving(transport, tmp_path):
    async with open_wire(transport, tmp_path / "data") as wire:
        wire.send({
            "jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
            "params": {"settings": {"contextd": {"unknownKey": nested(900)}}},
        })
        await wire.drain()
        await wire.wait_until(lambda: any(n["method"] == "window/showMessage" for n in wire.notifications))
        shown = next(n for n in wire.notifications if n["method"] == "window/showMessage")
        assert "settings.unknownKey" in shown["params"]["message"] and "deeper than 64" in shown["params"]["message"]
        for number in range(3):
            opened = await wire.call("contextd/session/open", {"name": f"after {number}"})
            assert "sessionId" in opened["result"], opened


# --- 13: a client that stops reading --------------------------------------------------------


LIMIT = 300_000


def context_requests(session_id: str, count: int) -> bytes:
    return b"".join(
        frame({"jsonrpc": "2.0", "id": f"c{n}", "method": "contextd/session/context", "params": {"sessionId": session_id}})
        for n in range(count)
    )


async def big_session(wire: WireDaemon) -> str:
    session = await wire.result("contextd/session/open", {"name": "big"})
    text = "word " * 40_000  # a 200 kB reply per context request
    await wire.result("contextd/session/append", {"sessionId": session["sessionId"], "messages": [{"role": "user", "content": text}]})
    return str(session["sessionId"])


@over_both
async def test_13_a_client_that_stops_reading_is_dropped(transport, tmp_path):
    limit = ("--max-write-buffer-bytes", str(LIMIT))
    async with open_wire(transport, tmp_path / "data", *limit) as wire:
        session_id = await big_session(wire)
        if transport == "stdio":
            await wire.stop()  # lets go of the session for the next daemon
            await stdio_client_that_never_reads(tmp_path, session_id)
            return
        assert wire.address is not None
        stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stuck.connect(wire.address)
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
        stuck.sendall(frame(initialize) + context_requests(session_id, 200))
        # The stuck client never reads; the daemon lets it go and keeps serving the others.
        await wire.wait_until_true(lambda: "dropped" in wire.daemon_log(), timeout=60)
        status = await wire.result("contextd/daemon/status", {})
        assert len(status["connections"]) == 1
        assert "sessions" in (await wire.result("contextd/session/list", {}))
        stuck.close()
        assert f"(the limit is {LIMIT})" in wire.daemon_log()


STUCK_CLIENTS = 5
STUCK_REPLIES = 18
TOTAL_LIMIT = 4 * 2**20
"""Test 13b's daemon-wide limit: one stuck client's 18 unread context replies of 200 kB (less
what its socket holds) fit under it, two clients' do not."""


async def test_13b_stuck_clients_together_are_held_to_the_daemon_wide_limit(tmp_path):
    """Each stuck client is far under its own limit; together they are dropped, the one
    holding the most unread bytes first, until what the rest hold fits the daemon-wide
    limit, while a client that reads is served throughout."""
    limits = ("--max-write-buffer-bytes", str(2**30), "--max-total-write-buffer-bytes", str(TOTAL_LIMIT))
    async with open_wire("shared", tmp_path / "data", *limits) as wire:
        session_id = await big_session(wire)
        assert wire.address is not None
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
        stuck = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(STUCK_CLIENTS)]
        for client in stuck:
            client.connect(wire.address)
            client.sendall(frame(initialize) + context_requests(session_id, STUCK_REPLIES))

        def drops() -> list[str]:
            return [line for line in wire.daemon_log().splitlines() if "daemon-wide limit" in line]

        # One at a time, so that the reader never holds much unsent itself.
        for n in range(10):
            context = await wire.result("contextd/session/context", {"sessionId": session_id})
            assert len(context["messages"][0]["content"]) >= 200_000, n
        await wire.wait_until_true(lambda: len(drops()) >= STUCK_CLIENTS - 1, timeout=60)
        status = await wire.result("contextd/daemon/status", {})
        assert len(status["connections"]) == 2  # the reader and the one stuck client that fits
        for line in drops():
            found = re.search(r"unread bytes, (\d+) of the (\d+) all connections left \(the daemon-wide limit is (\d+)\)", line)
            assert found is not None, line
            held, total, limit = (int(number) for number in found.groups())
            # Past the limit by one write at most (a client's replies of one turn), never by all
            # five clients' 17 MB; each dropped client held part of it.
            assert limit == TOTAL_LIMIT < total <= TOTAL_LIMIT + STUCK_REPLIES * 210_000 and 0 < held < total
        assert (await wire.result("contextd/session/context", {"sessionId": session_id}))["tokens"] > 0
        for client in stuck:
            client.close()


async def stdio_client_that_never_reads(tmp_path: Path, session_id: str) -> None:
    """On stdio the daemon serves one client: dropped, it ends (exit code 1)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contextd", "--data-dir", str(tmp_path / "data"), "serve",
        "--max-write-buffer-bytes", str(LIMIT),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stderr is not None
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    process.stdin.write(frame(initialize) + context_requests(session_id, 200))
    try:
        code = await asyncio.wait_for(process.wait(), 60)
    finally:
        if process.returncode is None:
            process.kill()
    log = (await process.stderr.read()).decode()
    assert code == 1 and "dropped" in log and f"(the limit is {LIMIT})" in log


# --- 14: $/progress waits for the client's answer to window/workDoneProgress/create ---------


async def compactable_session(wire: WireDaemon) -> str:
    session_id = (await wire.result("contextd/session/open", {"name": "compactable"}))["sessionId"]
    messages = long_conversation(12)
    for start in range(0, len(messages), 4):
        await wire.result("contextd/session/append", {"sessionId": session_id, "messages": messages[start : start + 4]})
    return str(session_id)


def server_requests(wire: WireDaemon, method: str) -> list[dict[str, Any]]:
    return [r for r in wire.replies if isinstance(r, dict) and r.get("method") == method]


def progress_kinds(wire: WireDaemon) -> list[str]:
    return [n["params"]["value"]["kind"] for n in wire.notifications if n["method"] == "$/progress"]


def finished(wire: WireDaemon) -> list[dict[str, Any]]:
    return [n["params"] for n in wire.notifications if n["method"] == "contextd/compactionFinished"]


@over_both
@pytest.mark.parametrize("answer", ["result", "error"])
async def test_14_progress_begins_only_after_the_token_is_created(transport, answer, tmp_path):
    progress = {"window": {"workDoneProgress": True}}
    async with open_wire(transport, tmp_path / "data", capabilities=progress, settings=SETTINGS) as wire:
        session_id = await compactable_session(wire)
        wire.send({"jsonrpc": "2.0", "id": "compact", "method": "contextd/compact", "params": {"sessionId": session_id}})
        await wire.drain()
        await wire.wait_until(lambda: finished(wire) and server_requests(wire, "window/workDoneProgress/create"))
        # The compaction is over, the create is still unanswered: nothing may use the token yet.
        assert progress_kinds(wire) == []
        create = server_requests(wire, "window/workDoneProgress/create")[0]
        if answer == "result":
            wire.send({"jsonrpc": "2.0", "id": create["id"], "result": None})
            await wire.drain()
            await wire.wait_until(lambda: "end" in progress_kinds(wire))
            assert progress_kinds(wire)[0] == "begin" and progress_kinds(wire)[-1] == "end"
            tokens = {n["params"]["token"] for n in wire.notifications if n["method"] == "$/progress"}
            assert tokens == {create["params"]["token"]}
        else:
            wire.send({"jsonrpc": "2.0", "id": create["id"], "error": {"code": -32603, "message": "no"}})
            await wire.call("contextd/session/list", {})  # the answer has been read by now
            assert progress_kinds(wire) == []
        assert "result" in await wire.reply_to("compact")


# --- 15: one running request per id; a connection's tasks end with it ------------------------


@over_both
async def test_15_a_second_request_with_a_running_id_is_refused(transport, tmp_path):
    hooks = {"experimental": {"contextd": {"beforeCompact": True}}}
    async with open_wire(transport, tmp_path / "data", capabilities=hooks, settings=SETTINGS) as wire:
        session_id = await compactable_session(wire)
        wire.send({"jsonrpc": "2.0", "id": "same", "method": "contextd/compact", "params": {"sessionId": session_id}})
        await wire.drain()
        await wire.wait_until(lambda: server_requests(wire, "contextd/beforeCompact"))
        # The compaction waits for our hook: its request is running under the id "same".
        wire.send(list_request("same"))
        wire.send([list_request("same")])
        await wire.drain()
        await wire.wait_until(lambda: len(wire.replies_to("same")) == 1 and any(isinstance(r, list) for r in wire.replies))
        refused = wire.replies_to("same")[0]
        assert refused["error"]["code"] == -32600 and "still running" in refused["error"]["message"]
        batch = next(r for r in wire.replies if isinstance(r, list))
        assert batch[0]["error"]["code"] == -32600
        hook = server_requests(wire, "contextd/beforeCompact")[0]
        wire.send({"jsonrpc": "2.0", "id": hook["id"], "result": None})
        await wire.drain()
        await wire.wait_until(lambda: len(wire.replies_to("same")) == 2)
        assert "summary" in wire.replies_to("same")[1]["result"]
        # The id is free again once its request has been answered.
        wire.send(list_request("same"))
        await wire.drain()
        await wire.wait_until(lambda: len(wire.replies_to("same")) == 3)
        assert "sessions" in wire.replies_to("same")[2]["result"]


async def test_15_a_leaving_connection_takes_its_running_requests_with_it(tmp_path):
    """The compaction a client started is cancelled when it leaves (it finishes once, as
    `cancelled`), instead of running on for nobody; another client can compact after it."""
    async with open_wire("shared", tmp_path / "data", settings=SETTINGS) as watcher:
        session_id = await compactable_session(watcher)
        assert watcher.address is not None
        reader, writer = await asyncio.open_unix_connection(watcher.address)
        hooks = {"experimental": {"contextd": {"beforeCompact": True}}}
        writer.write(
            frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": hooks}})
            + frame({"jsonrpc": "2.0", "id": 2, "method": "contextd/session/open", "params": {"sessionId": session_id}})
            + frame({"jsonrpc": "2.0", "id": 3, "method": "contextd/compact", "params": {"sessionId": session_id}})
        )
        await writer.drain()
        while b"contextd/beforeCompact" not in await reader.read(2**16):
            pass
        writer.close()  # leaves with its compaction waiting for its own hook
        await watcher.wait_until(lambda: finished(watcher))
        assert finished(watcher)[0]["outcome"] == "cancelled"
        again = await watcher.call("contextd/compact", {"sessionId": session_id})
        assert "summary" in again["result"], again


# --- 16: the forwarder reports a daemon that went away ----------------------------------------


async def test_16_serve_shared_exits_non_zero_when_its_daemon_is_killed(tmp_path):
    with shared_environment() as env:
        wire = await WireDaemon.start(tmp_path / "data", "--shared", env=env)
        pid = (await wire.result("contextd/daemon/status", {}))["pid"]
        os.kill(pid, signal.SIGKILL)
        code = await asyncio.wait_for(wire.process.wait(), 30)
        assert code == 1 and "ended" in await wire.stderr()
        # After a clean shutdown and exit the forwarder still leaves with 0.
        wire = await WireDaemon.start(tmp_path / "data", "--shared", env=env)
        pid = (await wire.result("contextd/daemon/status", {}))["pid"]
        assert await wire.stop() == 0
        os.kill(pid, signal.SIGTERM)
