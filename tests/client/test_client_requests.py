"""Every request and notification of the protocol, through the Python client, on a real daemon.

A method the daemon lost fails its test (-32601), it is never skipped.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from contextd_client import ContextdClient, ContextdError
from contextd_client import types as t

from tests.client.helpers import (
    SETTINGS,
    long_conversation,
    tool_turn,
    user,
)

SMALL_WINDOW_SETTINGS = {
    "defaultModel": "tiny-model",
    "models": {"tiny-model": {"contextWindow": 16000, "maxOutputTokens": 2048, "encoding": "o200k_base"}},
    "compaction": {"reserveTokens": 2048, "keepRecentTokens": 3000},
}


async def test_handshake_reports_the_server_and_applies_initialization_options(tmp_path: Path) -> None:
    async with await ContextdClient.spawn(data_dir=tmp_path, settings=SMALL_WINDOW_SETTINGS) as client:
        assert client.server_info["name"] == "contextd"
        opened = await client.session_open(workspace=tmp_path)
    assert opened["model"] == "tiny-model"
    assert opened["contextWindow"] == 16000
    assert opened["usage"]["thresholdTokens"] == 16000 - 2400  # 15% of the window beats the reserve


async def test_open_append_context_state_round_trip(client: ContextdClient, tmp_path: Path) -> None:
    opened = await client.session_open(workspace=tmp_path, name="round trip")
    session_id = opened["sessionId"]
    first = await client.append(session_id, [user("Read app.py please.")])
    second = await client.append(session_id, tool_turn("call_1", "read", {"path": "app.py"}, "print('hi')\n" * 50))
    assert len(second["entryIds"]) == 2
    assert second["leafId"] == second["entryIds"][-1]
    assert second["usage"]["tokens"] > first["usage"]["tokens"] > 0
    assert second["usage"]["source"] == "estimated"  # a Claude model: o200k x calibration

    state = await client.state(session_id)
    assert state["leafId"] == second["leafId"]
    assert state["name"] == "round trip"
    assert state["usage"]["tokens"] == second["usage"]["tokens"]

    stats = await client.stats(session_id)
    assert stats["context"] == stats["history"] == {"entries": 3, "tokens": stats["history"]["tokens"]}
    assert stats["context"]["tokens"] == second["usage"]["tokens"]

    neutral = await client.context(session_id)
    assert [message["role"] for message in neutral["messages"]] == ["user", "assistant", "toolResult"]
    assert neutral["tokens"] == second["usage"]["tokens"]
    anthropic = await client.context(session_id, "anthropic")
    assert anthropic["messages"][1]["content"][0]["type"] == "tool_use"
    openai = await client.context(session_id, "openai")
    assert openai["messages"][1]["tool_calls"][0]["function"]["name"] == "read"
    assert openai["messages"][2]["role"] == "tool"


async def test_usage_reported_by_the_provider_is_the_figure(client: ContextdClient, tmp_path: Path) -> None:
    session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
    answer = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Done."}],
        "usage": {"input": 5000, "output": 120, "cacheRead": 30000, "cacheWrite": 900},
    }
    result = await client.append(session_id, [user("Go."), answer])
    assert result["usage"]["tokens"] == 5000 + 120 + 30000 + 900
    assert result["usage"]["source"] == "usage"


async def test_list_set_model_close_and_reopen(client: ContextdClient, tmp_path: Path) -> None:
    session_id = (await client.session_open(workspace=tmp_path, name="listed"))["sessionId"]
    appended = await client.append(session_id, [user("hello")])
    listed = {session["sessionId"]: session for session in (await client.session_list())["sessions"]}
    assert listed[session_id]["name"] == "listed"
    assert listed[session_id]["workspace"] == str(tmp_path)

    changed = await client.set_model(session_id, "gpt-4.1")
    assert changed["model"] == "gpt-4.1"
    assert changed["contextWindow"] > 200000

    assert (await client.close_session(session_id))["closed"] is True
    reopened = await client.session_open(session_id=session_id)
    assert reopened["model"] == "gpt-4.1"
    context = await client.context(session_id)
    assert context["messages"] == [{"role": "user", "content": "hello"}]
    assert reopened["leafId"] != appended["leafId"]  # the model change came after the message


async def test_notifications_arrive_as_stream_and_callbacks(client: ContextdClient, tmp_path: Path) -> None:
    seen: list[str] = []
    client.on(t.SESSION_CHANGED, lambda method, params: seen.append(params["cause"]))
    with client.notifications(t.TOKEN_USAGE) as stream:
        session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
        appended = await client.append(session_id, [user("count me")])
        figures = []
        async for notification in stream:
            figures.append(notification.params["tokens"])
            if notification.params["tokens"] == appended["usage"]["tokens"]:
                break
        assert notification.params["sessionId"] == session_id
        assert figures[0] == 0 < figures[-1]
    assert "append" in seen


async def test_daemon_errors_are_typed(client: ContextdClient, tmp_path: Path) -> None:
    with pytest.raises(ContextdError) as missing:
        await client.state("no-such-session")
    assert missing.value.code == -32001
    assert missing.value.data == {"sessionId": "no-such-session"}

    session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
    with pytest.raises(ContextdError) as invalid:
        await client.append(session_id, [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}])
    assert invalid.value.code == -32602
    assert any(error["field"].startswith("messages.1") for error in invalid.value.data["errors"])

    orphan = {"role": "toolResult", "toolCallId": "nobody", "toolName": "read", "content": "?"}
    with pytest.raises(ContextdError) as unanswered:
        await client.append(session_id, [orphan])
    assert unanswered.value.code == -32602
    assert (await client.context(session_id))["messages"] == []


async def test_settings_change_at_run_time(client: ContextdClient, tmp_path: Path) -> None:
    session_id = (await client.session_open(workspace=tmp_path, model="my-model"))["sessionId"]
    await client.change_settings({"models": {"my-model": {"contextWindow": 12345}}})
    for _ in range(50):
        if (await client.state(session_id))["contextWindow"] == 12345:
            break
        await asyncio.sleep(0.05)
    assert (await client.state(session_id))["contextWindow"] == 12345


async def test_a_bad_setting_sent_by_notification_is_shown_and_changes_nothing(
    client: ContextdClient, tmp_path: Path
) -> None:
    """A notification has no reply: the error naming the key comes as window/showMessage."""
    session_id = (await client.session_open(workspace=tmp_path, model="my-model"))["sessionId"]
    window = (await client.state(session_id))["contextWindow"]
    with client.notifications("window/showMessage") as shown:
        await client.change_settings({"models": {"my-model": {"contextWindow": "huge"}}})
        message = (await shown.get(timeout=10)).params
    assert message["type"] == 1
    assert "models.my-model.contextWindow" in message["message"]
    assert (await client.state(session_id))["contextWindow"] == window


# --- compaction and the tree: these wait for the server -------------------------------------


async def filled_session(client: ContextdClient, tmp_path: Path, turns: int = 12) -> str:
    session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
    messages = long_conversation(turns)
    for start in range(0, len(messages), 4):
        await client.append(session_id, messages[start : start + 4])
    return session_id


async def test_manual_compaction_shrinks_the_context_and_notifies(client: ContextdClient, tmp_path: Path) -> None:
    session_id = await filled_session(client, tmp_path)
    before = (await client.state(session_id))["usage"]["tokens"]
    with client.notifications(t.COMPACTION_STARTED, t.COMPACTION_FINISHED) as stream:
        result = await client.compact(session_id, instructions="Focus on the modules read.")
        started = await stream.get(timeout=10)
        finished = await stream.get(timeout=10)
    assert result["tokensBefore"] == before
    assert result["tokensAfter"] < result["tokensBefore"]
    assert result["summary"]
    assert started.method == t.COMPACTION_STARTED and started.params["reason"] == "manual"
    assert finished.params["outcome"] == "compacted"
    assert finished.params["entryId"] == result["entryId"]
    context = await client.context(session_id)
    assert context["tokens"] == result["tokensAfter"]


async def test_compact_dry_run_changes_nothing_and_foretells_the_compaction(
    client: ContextdClient, tmp_path: Path
) -> None:
    session_id = await filled_session(client, tmp_path)
    state = await client.state(session_id)
    plan = await client.compact(session_id, dry_run=True)
    assert plan["summarizeEntryIds"] and plan["keptEntryIds"]
    assert plan["tokensBefore"] == state["usage"]["tokens"]
    assert (await client.state(session_id))["leafId"] == state["leafId"]
    done = await client.compact(session_id)
    assert done["firstKeptEntryId"] == plan["firstKeptEntryId"]
    assert done["tokensAfter"] <= plan["tokensAfter"]  # the plan's figure is an upper bound


async def test_compact_on_an_empty_session_is_nothing_to_compact(client: ContextdClient, tmp_path: Path) -> None:
    session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
    with pytest.raises(ContextdError) as error:
        await client.compact(session_id)
    assert error.value.code == -32005


async def test_threshold_compaction_happens_while_appending(tmp_path: Path) -> None:
    async with await ContextdClient.spawn(data_dir=tmp_path, settings=SMALL_WINDOW_SETTINGS) as client:
        with client.notifications(t.COMPACTION_FINISHED) as stream:
            session_id = await filled_session(client, tmp_path, turns=20)
            finished = await stream.get(timeout=30)
        assert finished.params["reason"] == "threshold"
        assert finished.params["outcome"] == "compacted"
        state = await client.state(session_id)
        assert state["usage"]["tokens"] < state["usage"]["thresholdTokens"]


async def test_compact_abort_answers(client: ContextdClient, tmp_path: Path) -> None:
    session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
    assert await client.compact_abort(session_id) == {"aborted": False}


async def test_handoff_starts_a_new_session(client: ContextdClient, tmp_path: Path) -> None:
    session_id = await filled_session(client, tmp_path, turns=4)
    result = await client.handoff(session_id, goal="Write the tests for module 3")
    assert result["sessionId"] != session_id
    assert result["document"]
    context = await client.context(result["sessionId"])
    assert result["document"] in context["messages"][0]["content"]
    listed = {s["sessionId"]: s for s in (await client.session_list())["sessions"]}
    assert listed[result["sessionId"]]["parentSession"]["id"] == session_id


async def test_tree_label_navigate_and_fork(client: ContextdClient, tmp_path: Path) -> None:
    session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
    first = await client.append(session_id, [user("first question")])
    await client.append(session_id, [{"role": "assistant", "content": [{"type": "text", "text": "first answer"}]}])
    second = await client.append(session_id, [user("second question")])

    tree = await client.tree(session_id)
    ids = {node["id"]: node for node in tree["nodes"]}
    assert tree["leafId"] == second["leafId"]
    assert ids[second["leafId"]]["parentId"] in ids

    assert await client.label(session_id, first["leafId"], "start") == {"entryId": first["leafId"], "label": "start"}
    tree = await client.tree(session_id)
    assert {node["id"]: node for node in tree["nodes"]}[first["leafId"]].get("label") == "start"

    moved = await client.navigate(session_id, second["leafId"])
    assert moved["editorText"] == "second question"
    assert (await client.state(session_id))["leafId"] == moved["leafId"]

    forked = await client.fork(session_id, first["leafId"])
    assert forked["sessionId"] != session_id
    assert [m["content"] for m in (await client.context(forked["sessionId"]))["messages"]] == ["first question"]


async def test_idle_configure_arms_the_idle_timer(client: ContextdClient, tmp_path: Path) -> None:
    session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
    with client.notifications(t.IDLE_TIMER) as stream:
        configured = await client.idle_configure(
            session_id=session_id, enabled=True, timeout_seconds=30, threshold_tokens=1
        )
        assert configured["effectiveThresholdTokens"] == 1 and configured["timeoutSeconds"] == 30
        await client.append(session_id, [user("something to compact later")])
        armed = await stream.get(timeout=10)
    assert armed.params["sessionId"] == session_id
    assert armed.params["state"] == "armed"


async def test_before_compact_hook_supplies_the_summary_or_cancels(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []
    answers = [{"summary": "The client's own summary."}, {"cancel": True}]

    async def before_compact(params: dict[str, Any]) -> dict[str, Any] | None:
        asked.append(params)
        return answers[len(asked) - 1]

    async with await ContextdClient.spawn(
        data_dir=tmp_path, settings=SETTINGS, before_compact=before_compact
    ) as client:
        session_id = await filled_session(client, tmp_path)
        result = await client.compact(session_id)
        assert result["summary"].startswith("The client's own summary.")
        assert asked[0]["sessionId"] == session_id and asked[0]["summarizeEntryIds"]
        await client.append(session_id, long_conversation(6))
        with client.notifications(t.COMPACTION_FINISHED) as stream:
            with pytest.raises(ContextdError):
                await client.compact(session_id)
            finished = await stream.get(timeout=10)
        assert finished.params["outcome"] == "cancelled"


async def test_before_navigate_hook_cancels_or_supplies_the_branch_summary(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []
    answers = [{"cancel": True}, {"summary": "Read module 1; nothing to change there."}]

    async def before_navigate(params: dict[str, Any]) -> dict[str, Any] | None:
        asked.append(params)
        return answers[len(asked) - 1]

    async with await ContextdClient.spawn(data_dir=tmp_path, before_navigate=before_navigate) as client:
        session_id = (await client.session_open(workspace=tmp_path))["sessionId"]
        first = await client.append(session_id, long_conversation(1))
        second = await client.append(session_id, long_conversation(2)[4:])
        with pytest.raises(ContextdError) as cancelled:
            await client.navigate(session_id, first["leafId"], summarize=True)
        assert cancelled.value.code == -32800
        assert (await client.state(session_id))["leafId"] == second["leafId"]
        assert asked[0]["leftBehindEntryIds"] == second["entryIds"] and asked[0]["leafId"] == second["leafId"]

        moved = await client.navigate(session_id, first["leafId"], summarize=True)
        tree = {node["id"]: node for node in (await client.tree(session_id))["nodes"]}
        assert tree[moved["branchSummaryId"]]["shortSummary"] == "Read module 1; nothing to change there."
        assert tree[moved["branchSummaryId"]]["parentId"] == first["leafId"]


async def test_work_done_progress_during_a_compaction(tmp_path: Path) -> None:
    async with await ContextdClient.spawn(data_dir=tmp_path, settings=SETTINGS, work_done_progress=True) as client:
        session_id = await filled_session(client, tmp_path)
        with client.notifications("$/progress") as stream:
            await client.compact(session_id)
            kinds = []
            while "end" not in kinds:
                kinds.append((await stream.get(timeout=10)).params["value"]["kind"])
    assert kinds[0] == "begin" and kinds[-1] == "end"


class StallingSummarizer:
    """A `remote` summarizer endpoint on 127.0.0.1 that takes requests and never answers."""

    def __init__(self) -> None:
        self.requests = 0
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.requests += 1
        await reader.read(65536)
        await asyncio.sleep(3600)

    async def __aenter__(self) -> dict[str, Any]:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return {
            **SETTINGS,
            "summarizer": {"provider": "remote", "remoteEndpoint": f"http://127.0.0.1:{port}/summarize",
                           "maxRetries": 0, "timeoutSeconds": 60},
        }

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()


@pytest.mark.parametrize("stop", ["cancel the awaiting task", "compact_abort"])
async def test_a_running_compaction_stops_and_leaves_the_session_as_it_was(tmp_path: Path, stop: str) -> None:
    async with StallingSummarizer() as settings, await ContextdClient.spawn(data_dir=tmp_path, settings=settings) as client:
        session_id = await filled_session(client, tmp_path)
        before = await client.state(session_id)
        with client.notifications(t.COMPACTION_STARTED, t.COMPACTION_FINISHED) as stream:
            compacting = asyncio.create_task(client.compact(session_id))
            assert (await stream.get(timeout=10)).method == t.COMPACTION_STARTED
            if stop == "compact_abort":
                assert await client.compact_abort(session_id) == {"aborted": True}
                with pytest.raises(ContextdError) as error:
                    await compacting
                assert error.value.code == -32800
            else:
                compacting.cancel()
            finished = await stream.get(timeout=10)
        assert finished.params["outcome"] == ("aborted" if stop == "compact_abort" else "cancelled")
        after = await client.state(session_id)
        assert after["leafId"] == before["leafId"]
        assert after["usage"]["tokens"] == before["usage"]["tokens"]
