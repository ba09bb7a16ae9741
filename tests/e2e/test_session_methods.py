"""contextd/session/* over real stdio against the real daemon."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.factories import assistant, coding_turn, result, user


async def test_open_creates_a_session_file_and_reports_usage(daemon):
    opened = await daemon.open_session(name="fix tests", model="gpt-4o")
    assert opened["model"] == "gpt-4o"
    assert opened["contextWindow"] == 128_000
    assert opened["usage"]["tokens"] == 0
    path = Path(opened["path"])
    assert path.is_file() and path.is_relative_to(daemon.data_dir)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["type"] == "session" and header["id"] == opened["sessionId"]
    assert header["workspace"] == "/tmp/contextd-ws"  # the initialize workspace folder
    usage = await daemon.wait_for("contextd/tokenUsage", sessionId=opened["sessionId"])
    assert usage["contextWindow"] == 128_000


async def test_append_returns_ids_and_notifies_usage(daemon):
    session = (await daemon.open_session())["sessionId"]
    appended = await daemon.request(
        "contextd/session/append",
        {"sessionId": session, "messages": [user("hello there"), assistant("hi")]},
    )
    assert len(appended["entryIds"]) == 2
    assert appended["leafId"] == appended["entryIds"][-1]
    assert appended["usage"]["tokens"] > 0
    assert appended["usage"]["source"] == "estimated"  # a Claude model: o200k x calibration
    changed = await daemon.wait_for("contextd/sessionChanged", cause="append")
    assert changed["leafId"] == appended["leafId"]
    notified = [n for n in daemon.received("contextd/tokenUsage") if n["tokens"] > 0]
    assert notified[-1] == appended["usage"]


async def test_usage_rests_on_provider_figures_plus_counted_tail(daemon):
    session = (await daemon.open_session())["sessionId"]
    await daemon.request(
        "contextd/session/append",
        {
            "sessionId": session,
            "messages": [
                user("read it"),
                assistant(
                    "ok",
                    calls=[("c1", "read", {"path": "a.py"})],
                    usage={"input": 5000, "output": 100, "cacheRead": 2000, "cacheWrite": 0},
                ),
            ],
        },
    )
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    assert state["usage"]["tokens"] == 7100
    assert state["usage"]["source"] == "usage"
    appended = await daemon.request(
        "contextd/session/append",
        {"sessionId": session, "messages": [result("c1", "read", "x = 1\n" * 50)]},
    )
    assert appended["usage"]["source"] == "usage"
    assert appended["usage"]["tokens"] > 7100


async def test_failed_answers_do_not_set_the_figure(daemon):
    session = (await daemon.open_session())["sessionId"]
    appended = await daemon.request(
        "contextd/session/append",
        {
            "sessionId": session,
            "messages": [
                user("go"),
                assistant("", usage={"input": 999_999, "output": 0}, stop="aborted"),
            ],
        },
    )
    assert appended["usage"]["source"] == "estimated"  # a Claude model: o200k x calibration
    assert appended["usage"]["tokens"] < 1000


async def test_context_in_every_format(daemon):
    session = (await daemon.open_session())["sessionId"]
    messages = [
        user("list files"),
        assistant("Listing.", calls=[("c1", "ls", {"dir": "."}), ("c2", "cat", {"path": "x"})]),
        result("c1", "ls", "a.py b.py"),
        result("c2", "cat", "boom", error=True),
        assistant("Done."),
    ]
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": messages})

    neutral = await daemon.request("contextd/session/context", {"sessionId": session})
    assert [m["role"] for m in neutral["messages"]] == [
        "user", "assistant", "toolResult", "toolResult", "assistant",
    ]
    assert neutral["tokens"] > 0

    anthropic = await daemon.request(
        "contextd/session/context", {"sessionId": session, "format": "anthropic"}
    )
    roles = [m["role"] for m in anthropic["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    tool_uses = [b for b in anthropic["messages"][1]["content"] if b["type"] == "tool_use"]
    assert [b["id"] for b in tool_uses] == ["c1", "c2"]
    results = anthropic["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["c1", "c2"]
    assert results[1]["is_error"] is True

    openai = await daemon.request(
        "contextd/session/context", {"sessionId": session, "format": "openai"}
    )
    assert [m["role"] for m in openai["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
    call = openai["messages"][1]["tool_calls"][0]
    assert call["function"]["name"] == "ls"
    assert json.loads(call["function"]["arguments"]) == {"dir": "."}
    assert openai["messages"][2]["tool_call_id"] == "c1"


async def test_list_state_set_model_and_close(daemon):
    first = (await daemon.open_session(name="one"))["sessionId"]
    second = (await daemon.open_session(name="two", workspace="/tmp/other-ws"))["sessionId"]
    await daemon.request(
        "contextd/session/append", {"sessionId": first, "messages": coding_turn(1)}
    )
    listed = (await daemon.request("contextd/session/list", {}))["sessions"]
    assert {row["sessionId"] for row in listed} == {first, second}
    row = next(r for r in listed if r["sessionId"] == first)
    assert row["name"] == "one" and row["tokens"] > 0 and row["entries"] >= 6
    only_other = (await daemon.request("contextd/session/list", {"workspace": "/tmp/other-ws"}))
    assert [r["sessionId"] for r in only_other["sessions"]] == [second]

    changed = await daemon.request(
        "contextd/session/setModel", {"sessionId": first, "model": "gpt-4"}
    )
    assert changed["contextWindow"] == 8192
    assert changed["usage"]["model"] == "gpt-4"
    state = await daemon.request("contextd/session/state", {"sessionId": first})
    assert state["model"] == "gpt-4" and state["name"] == "one"

    assert await daemon.request("contextd/session/close", {"sessionId": first}) == {"closed": True}
    reopened = await daemon.open_session(sessionId=first)
    assert reopened["model"] == "gpt-4"
    assert reopened["leafId"] == state["leafId"]


async def test_a_restart_restores_the_exact_leaf_and_context(make_daemon, tmp_path):
    first = await make_daemon()
    session = (await first.open_session())["sessionId"]
    for turn in range(3):
        await first.request(
            "contextd/session/append", {"sessionId": session, "messages": coding_turn(turn)}
        )
    before = await first.request("contextd/session/context", {"sessionId": session})
    state_before = await first.request("contextd/session/state", {"sessionId": session})
    await first.stop()

    second = await make_daemon()
    reopened = await second.open_session(sessionId=session)
    assert reopened["leafId"] == state_before["leafId"]
    after = await second.request("contextd/session/context", {"sessionId": session})
    assert after == before


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, field",
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "sessionId"),
        ({"sessionId": 42, "messages": []}, "sessionId"),
        ({"sessionId": "s", "messages": "nope"}, "messages"),
        ({"sessionId": "s", "messages": [{"role": "wizard", "content": "x"}]}, "messages.0"),
        ({"sessionId": "s", "messages": [{"role": "user"}]}, "messages.0.user.content"),
        ({"sessionId": "s", "messages": [{"role": "user", "content": "x", "colour": 1}]}, "messages.0.user.colour"),
        ({"sessionId": "s", "messages": [{"role": "user", "content": "x" * 4_000_001}]}, "messages.0.user.content"),
        ({"sessionId": "s", "messages": [], "extra": True}, "extra"),
    ],
)
async def test_malformed_params_name_the_field(daemon, params, field):
    error = await daemon.error_of("contextd/session/append", params)
    assert error.code == -32602
    fields = [e["field"] for e in error.data["errors"]]
    assert any(f.startswith(field) for f in fields), fields


async def test_params_that_are_not_an_object_are_refused(daemon):
    error = await daemon.error_of("contextd/session/state", [1, 2])
    assert error.code == -32602


async def test_unknown_and_unsafe_session_ids(daemon):
    unknown = await daemon.error_of("contextd/session/state", {"sessionId": "does-not-exist"})
    assert unknown.code == -32001 and unknown.data == {"sessionId": "does-not-exist"}
    for bad in ("../../etc/passwd", "a/b", ".hidden", "x" * 200):
        error = await daemon.error_of("contextd/session/open", {"sessionId": bad})
        assert error.code == -32602, bad
    assert not any(p.name == "passwd" for p in daemon.data_dir.rglob("*"))


async def test_a_bad_batch_stores_nothing(daemon):
    opened = await daemon.open_session()
    session = opened["sessionId"]
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(0)})
    path = Path(opened["path"])
    size = path.stat().st_size
    error = await daemon.error_of(
        "contextd/session/append",
        {"sessionId": session, "messages": [user("fine"), result("nobody-called", "read", "x")]},
    )
    assert error.code == -32602
    assert error.data["errors"][0]["field"] == "messages.1.toolCallId"
    assert path.stat().st_size == size
    # The daemon keeps serving and the session is intact.
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    assert state["entries"] == 7


async def test_a_result_cannot_answer_the_same_call_twice(daemon):
    session = (await daemon.open_session())["sessionId"]
    await daemon.request(
        "contextd/session/append",
        {"sessionId": session, "messages": [user("x"), assistant(calls=[("c1", "read", {})]), result("c1", "read", "1")]},
    )
    error = await daemon.error_of(
        "contextd/session/append", {"sessionId": session, "messages": [result("c1", "read", "again")]}
    )
    assert error.code == -32602


async def test_a_second_daemon_cannot_write_an_open_session(make_daemon):
    first = await make_daemon()
    session = (await first.open_session())["sessionId"]
    second = await make_daemon()
    error = await second.error_of("contextd/session/open", {"sessionId": session})
    assert error.code == -32003
    assert isinstance(error.data["pid"], int) and error.data["pid"] > 0
    await first.request("contextd/session/close", {"sessionId": session})
    assert (await second.open_session(sessionId=session))["sessionId"] == session


async def test_bad_settings_are_an_error_naming_the_key(tmp_path):
    from tests.conftest import Daemon

    running = Daemon(tmp_path / "data")
    with pytest.raises(Exception) as raised:
        await running.start(settings={"compaction": {"reserveTokens": "lots"}})
    assert "compaction.reserveTokens" in str(raised.value)
    await running.stop()


async def test_settings_change_at_run_time(daemon):
    session = (await daemon.open_session())["sessionId"]
    daemon.notify(
        "workspace/didChangeConfiguration",
        lsp.DidChangeConfigurationParams(
            settings={"contextd": {"compaction": {"thresholdTokens": 1234}}}
        ),
    )
    usage = await daemon.wait_for("contextd/tokenUsage", sessionId=session, thresholdTokens=1234)
    assert usage["thresholdTokens"] == 1234


async def test_settings_are_pulled_from_clients_that_offer_them(make_daemon):
    capabilities = lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(configuration=True)
    )
    daemon = await make_daemon(
        capabilities=capabilities, pulled_settings={"compaction": {"thresholdTokens": 4321}}
    )
    for _ in range(50):
        opened = await daemon.open_session()
        if opened["usage"]["thresholdTokens"] == 4321:
            break
        await asyncio.sleep(0.05)
    assert opened["usage"]["thresholdTokens"] == 4321
    # A pull-model client's empty change notification makes the daemon ask again.
    daemon.client.set_configuration({"compaction": {"thresholdTokens": 999}}, section="contextd")
    daemon.notify("workspace/didChangeConfiguration", lsp.DidChangeConfigurationParams(settings=None))
    await daemon.wait_for("contextd/tokenUsage", sessionId=opened["sessionId"], thresholdTokens=999)
