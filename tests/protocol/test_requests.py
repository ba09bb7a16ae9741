"""Issue 13's cases, each against a real daemon over stdio: one correct reply, the daemon
keeps serving, and a request that fails stores nothing."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest_asyncio

from tests.factories import coding_turn
from tests.protocol.wire import WireDaemon, frame

INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, PARSE_ERROR = -32600, -32601, -32602, -32700


@pytest_asyncio.fixture
async def wire(tmp_path):
    daemon = await WireDaemon.start(tmp_path / "data")
    yield daemon
    await daemon.stop()


async def open_session(wire: WireDaemon) -> tuple[str, Path]:
    opened = await wire.result("contextd/session/open", {"name": "kept"})
    await wire.result("contextd/session/append", {"sessionId": opened["sessionId"], "messages": coding_turn(0)})
    return opened["sessionId"], Path(opened["path"])


async def still_serving(wire: WireDaemon) -> None:
    assert "sessions" in await wire.result("contextd/session/list", {})


async def test_1_a_request_without_params_is_answered(wire):
    listed = await wire.call("contextd/session/list")
    assert "sessions" in listed["result"]
    state = await wire.call("contextd/session/state")
    assert state["error"]["code"] == INVALID_PARAMS
    assert state["error"]["data"]["errors"][0]["field"] == "sessionId"
    opened = await wire.call("contextd/session/open")
    assert opened["result"]["sessionId"]


async def test_2_a_jsonrpc_key_inside_tool_arguments_is_stored_as_written(wire):
    session, _ = await open_session(wire)
    arguments = {
        "path": "server.py",
        "body": {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"jsonrpc": "1.0"}},
        "jsonrpc": "2.0",
    }
    messages = [
        {"role": "user", "content": "send the handshake"},
        {"role": "assistant", "stopReason": "toolUse",
         "content": [{"type": "toolCall", "id": "c1", "name": "write", "arguments": arguments}]},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "write",
         "content": '{"jsonrpc": "2.0", "result": null, "id": 7}', "isError": False},
    ]
    appended = await wire.result("contextd/session/append", {"sessionId": session, "messages": messages})
    assert len(appended["entryIds"]) == 3
    context = await wire.result("contextd/session/context", {"sessionId": session})
    call = context["messages"][-2]["content"][0]
    assert call["arguments"] == arguments
    assert context["messages"][-1]["content"] == '{"jsonrpc": "2.0", "result": null, "id": 7}'


async def test_3_an_object_or_array_id_is_refused_and_nothing_is_done(wire):
    session, path = await open_session(wire)
    size = path.stat().st_size
    for bad_id in ({"x": 1}, [1, 2], True, 1.5):
        wire.send({"jsonrpc": "2.0", "id": bad_id, "method": "contextd/session/append",
                   "params": {"sessionId": session, "messages": coding_turn(1)}})
        wire.send({"jsonrpc": "2.0", "id": bad_id, "method": "contextd/compact", "params": {"sessionId": session}})
    await wire.drain()
    await wire.wait_until(lambda: len(wire.replies_to(None)) >= 8)
    assert {r["error"]["code"] for r in wire.replies_to(None)} == {INVALID_REQUEST}
    await still_serving(wire)
    assert path.stat().st_size == size


async def test_4_envelopes_methods_batches_and_the_lifecycle(wire):
    assert (await wire.call(5, {}))["error"]["code"] == INVALID_REQUEST
    assert (await wire.call(None, {}))["error"]["code"] == INVALID_REQUEST
    for version in ("1.0", None, 2):
        message = {"id": f"v{version}", "method": "contextd/session/list", "params": {}}
        if version is not None:
            message["jsonrpc"] = version
        wire.send(message)
        assert (await wire.reply_to(f"v{version}"))["error"]["code"] == INVALID_REQUEST

    wire.send_bytes(frame(b'{"jsonrpc": "2.0", "id": 1, "method": '))
    await wire.wait_until(lambda: wire.replies_to(None))
    assert wire.replies_to(None)[0]["error"]["code"] == PARSE_ERROR

    wire.send([
        {"jsonrpc": "2.0", "id": "b1", "method": "contextd/session/list", "params": {}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": "b2", "method": "textDocument/hover", "params": {}},
        7,
    ])
    await wire.wait_until(lambda: any(isinstance(r, list) for r in wire.replies))
    batch = next(r for r in wire.replies if isinstance(r, list))
    assert [r["id"] for r in batch] == ["b1", "b2", None]
    assert "sessions" in batch[0]["result"]
    assert batch[1]["error"]["code"] == METHOD_NOT_FOUND
    assert batch[2]["error"]["code"] == INVALID_REQUEST
    wire.send([])
    await wire.wait_until(lambda: len(wire.replies_to(None)) >= 2)

    assert (await wire.call("textDocument/hover", {}))["error"]["code"] == METHOD_NOT_FOUND
    assert (await wire.call("initialize", {"capabilities": {}}))["error"]["code"] == INVALID_REQUEST

    assert (await wire.call("shutdown"))["result"] is None
    after = await wire.call("contextd/session/list", {})
    assert after["error"]["code"] == INVALID_REQUEST
    wire.send({"jsonrpc": "2.0", "method": "exit"})
    await wire.drain()
    assert await wire.process.wait() == 0


async def test_4_initialize_with_bad_params_is_answered_and_can_be_retried(tmp_path):
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contextd", "--data-dir", str(tmp_path / "data"), "serve",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    raw = WireDaemon(process)
    assert (await raw.call("contextd/session/list", {}))["error"]["code"] == -32002
    for bad in (5, {"capabilities": "all"}, {"initializationOptions": {"compaction": {"reserveTokens": "lots"}}}):
        error = (await raw.call("initialize", bad))["error"]
        assert error["code"] == INVALID_PARAMS
    assert "compaction.reserveTokens" in error["message"]
    assert (await raw.call("initialize", {"capabilities": {}}))["result"]["serverInfo"]["name"] == "contextd"
    await still_serving(raw)
    assert await raw.stop() == 0


async def test_5_a_batch_too_deep_to_store_is_refused_whole(wire):
    session, path = await open_session(wire)
    size = path.stat().st_size

    def nested(levels: int) -> dict:
        value: dict = {"leaf": True}
        for _ in range(levels):
            value = {"next": value}
        return value

    def turn(arguments: dict) -> list[dict]:
        return [
            {"role": "user", "content": "go"},
            {"role": "assistant", "stopReason": "toolUse",
             "content": [{"type": "toolCall", "id": "d1", "name": "x", "arguments": arguments}]},
        ]

    for levels in (256, 980, 5000):
        # Written by hand: the json module itself cannot encode 5,000 levels.
        arguments = '{"next":' * levels + '{"leaf":true}' + "}" * levels
        body = json.dumps({"jsonrpc": "2.0", "id": f"deep{levels}", "method": "contextd/session/append",
                           "params": {"sessionId": session, "messages": turn({"a": "ARGS"})}})
        wire.send(body.replace('{"a": "ARGS"}', arguments).encode())
        reply = await wire.reply_to(f"deep{levels}")
        assert reply["error"]["code"] in (INVALID_PARAMS, PARSE_ERROR), reply
        assert path.stat().st_size == size
    refused = await wire.call("contextd/session/append", {"sessionId": session, "messages": turn(nested(256))})
    assert "messages" in refused["error"]["data"]["errors"][0]["field"]
    assert "64 levels" in refused["error"]["message"]
    kept = await wire.result("contextd/session/append", {"sessionId": session, "messages": turn(nested(50))})
    assert len(kept["entryIds"]) == 2
    await still_serving(wire)


async def test_7_error_data_has_no_traceback_or_path(wire, tmp_path):
    session, _ = await open_session(wire)
    replies = [
        await wire.call("contextd/session/append", {"sessionId": session, "messages": [{"role": "x"}]}),
        await wire.call("contextd/session/open", {"sessionId": "../../etc/passwd"}),
        await wire.call("contextd/session/state", {"sessionId": "nope"}),
        await wire.call("contextd/navigate", {"sessionId": session, "targetId": "zz"}),
    ]
    for reply in replies:
        text = json.dumps(reply["error"])
        assert "Traceback" not in text and str(tmp_path) not in text and ".py" not in text, text
    await wire.stop()
    log = await wire.stderr()
    assert "Traceback" not in log


async def test_9_closing_a_session_this_daemon_does_not_hold(wire):
    session, _ = await open_session(wire)
    assert (await wire.result("contextd/session/close", {"sessionId": session})) == {"closed": True}
    assert (await wire.result("contextd/session/close", {"sessionId": session})) == {"closed": False}
    unknown = await wire.call("contextd/session/close", {"sessionId": "never-was"})
    assert unknown["error"]["code"] == -32001
