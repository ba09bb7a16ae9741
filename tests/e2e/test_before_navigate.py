"""The beforeNavigate hook over real stdio: the client sees where the leaf goes and what it
leaves behind, and may cancel the navigation or write the branch summary itself."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from contextd_client import ContextdClient, ContextdError
from lsprotocol import types as lsp

from tests.factories import assistant, coding_turn, user
from tests.summarizers.fake_provider import FakeProvider, Reply


async def hooked_daemon(make_daemon, answer: Any, *, delay: float = 0.0, timeout: float = 10, settings=None):
    daemon = await make_daemon(
        capabilities=lsp.ClientCapabilities(experimental={"contextd": {"beforeNavigate": True}}),
        settings={**(settings or {}), "compaction": {"hookTimeoutSeconds": timeout}},
    )
    asked: list[dict[str, Any]] = []

    async def before_navigate(params: Any) -> Any:
        asked.append(params)
        await asyncio.sleep(delay)
        if isinstance(answer, Exception):
            raise answer
        return answer

    daemon.client.feature("contextd/beforeNavigate")(before_navigate)
    return daemon, asked


async def two_branches(daemon) -> dict[str, Any]:
    """Two turns of work, then the user asks again from the first turn's end: the first
    request's answer and the second turn become a branch that navigating back leaves."""
    opened = await daemon.open_session()
    session = opened["sessionId"]
    first = await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(0)})
    second = await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(1)})
    return {"session": session, "path": Path(opened["path"]), "fork_point": first["leafId"],
            "branch": second["entryIds"], "leaf": second["leafId"]}


async def state(daemon, session: str) -> dict[str, Any]:
    return await daemon.request("contextd/session/state", {"sessionId": session})


async def test_the_hook_sees_the_move_and_may_cancel_it(make_daemon):
    daemon, asked = await hooked_daemon(make_daemon, {"cancel": True})
    work = await two_branches(daemon)
    size = work["path"].stat().st_size

    error = await daemon.error_of("contextd/navigate", {
        "sessionId": work["session"], "targetId": work["fork_point"], "summarize": True, "instructions": "be brief",
    })
    assert error.code == -32800 and "beforeNavigate" in str(error)
    assert asked == [{
        "sessionId": work["session"], "targetId": work["fork_point"], "leafId": work["leaf"],
        "newLeafId": work["fork_point"], "commonAncestorId": work["fork_point"],
        "leftBehindEntryIds": work["branch"], "summarize": True, "instructions": "be brief",
    }]
    assert (await state(daemon, work["session"]))["leafId"] == work["leaf"]
    assert work["path"].stat().st_size == size  # nothing written
    assert not daemon.received("contextd/compactionStarted")
    assert "navigate" not in [p["cause"] for p in daemon.received("contextd/sessionChanged")]


async def test_navigating_to_a_user_message_tells_the_hook_the_leaf_goes_to_its_parent(make_daemon):
    daemon, asked = await hooked_daemon(make_daemon, {})
    work = await two_branches(daemon)
    second_request = work["branch"][0]
    moved = await daemon.request("contextd/navigate", {"sessionId": work["session"], "targetId": second_request})
    assert moved == {"leafId": work["fork_point"], "editorText": coding_turn(1)[0]["content"]}
    assert asked[0]["targetId"] == second_request and asked[0]["newLeafId"] == work["fork_point"]
    assert asked[0]["leftBehindEntryIds"] == work["branch"] and asked[0]["summarize"] is False
    assert "instructions" not in asked[0]


@pytest.mark.parametrize("summarize", [True, False])
async def test_the_hook_may_supply_the_branch_summary(make_daemon, summarize):
    provider = FakeProvider(default=Reply.hang(30)).start()  # a summarizer that never answers
    try:
        settings = {"summarizer": {"provider": "remote", "remoteEndpoint": provider.remote_url, "maxRetries": 0}}
        daemon, _ = await hooked_daemon(make_daemon, {"summary": "Tried module_1; it was the wrong file."},
                                        settings=settings)
        work = await two_branches(daemon)
        moved = await daemon.request("contextd/navigate", {
            "sessionId": work["session"], "targetId": work["fork_point"], "summarize": summarize,
        })
        assert provider.requests == []  # the summarizer was never asked
        tree = await daemon.request("contextd/tree", {"sessionId": work["session"]})
        summary = next(n for n in tree["nodes"] if n["id"] == moved["branchSummaryId"])
        assert summary["type"] == "branch_summary" and summary["parentId"] == work["fork_point"]
        assert summary["shortSummary"] == "Tried module_1; it was the wrong file."
        assert moved["leafId"] == moved["branchSummaryId"] == tree["leafId"]
        context = await daemon.request("contextd/session/context", {"sessionId": work["session"]})
        assert "Tried module_1; it was the wrong file." in context["messages"][-1]["content"]
        assert "src/module_1.py" in context["messages"][-1]["content"]  # the branch's files are listed
        finished = await daemon.wait_for("contextd/compactionFinished", reason="branch")
        assert finished["outcome"] == "compacted" and finished["entryId"] == moved["branchSummaryId"]
    finally:
        provider.stop()


@pytest.mark.parametrize(
    "answer, delay",
    [
        pytest.param({"cancel": True}, 3.0, id="an answer too late to count"),
        pytest.param(RuntimeError("the hook broke"), 0.0, id="an error answer"),
        pytest.param({"cancel": "perhaps", "colour": 1}, 0.0, id="nonsense"),
    ],
)
async def test_a_silent_or_failing_hook_lets_the_navigation_proceed(make_daemon, answer, delay):
    daemon, asked = await hooked_daemon(make_daemon, answer, delay=delay, timeout=0.5)
    work = await two_branches(daemon)
    moved = await daemon.request("contextd/navigate", {
        "sessionId": work["session"], "targetId": work["fork_point"], "summarize": True,
    })
    assert asked
    assert moved["leafId"] == moved["branchSummaryId"]
    tree = await daemon.request("contextd/tree", {"sessionId": work["session"]})
    summary = next(n for n in tree["nodes"] if n["id"] == moved["branchSummaryId"])
    assert "module_1" in summary["preview"]  # the offline summarizer read the branch itself


async def test_clients_that_do_not_declare_the_hook_are_not_asked(make_daemon):
    daemon = await make_daemon()
    asked: list[Any] = []
    daemon.client.feature("contextd/beforeNavigate")(lambda params: asked.append(params) or {"cancel": True})
    session = (await daemon.open_session())["sessionId"]
    first = await daemon.request("contextd/session/append", {"sessionId": session, "messages": [user("a"), assistant("b")]})
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": [user("c"), assistant("d")]})
    moved = await daemon.request("contextd/navigate", {"sessionId": session, "targetId": first["leafId"]})
    assert moved["leafId"] == first["leafId"] and asked == []


async def test_only_the_connection_that_navigates_is_asked(shared_clients, tmp_path: Path):
    asked: list[dict[str, Any]] = []

    async def cancel(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"cancel": True}

    hooked = await shared_clients(tmp_path / "ws", before_navigate=cancel)
    other = await shared_clients(tmp_path / "ws")
    session = (await hooked.session_open(workspace=tmp_path / "ws"))["sessionId"]
    first = await hooked.append(session, [user("a"), assistant("b")])
    second = await hooked.append(session, [user("c"), assistant("d")])

    # The other client, which declared no hook, navigates: the hooked one is not asked.
    moved = await other.navigate(session, first["leafId"])
    assert moved["leafId"] == first["leafId"] and asked == []
    # The hooked client's own navigation is asked of it, and it cancels.
    with pytest.raises(ContextdError) as cancelled:
        await hooked.navigate(session, second["leafId"])
    assert cancelled.value.code == -32800
    assert [params["targetId"] for params in asked] == [second["leafId"]]
    assert (await other.state(session))["leafId"] == first["leafId"]


async def test_a_hook_that_times_out_or_fails_is_logged(tmp_path: Path):
    answers: list[Any] = [asyncio.sleep(3, {"cancel": True}), None]

    async def before_navigate(params: dict[str, Any]) -> Any:
        answer = answers.pop(0)
        if answer is None:
            raise RuntimeError("the hook broke")
        return await answer

    log = tmp_path / "daemon.log"
    with log.open("w") as stderr:
        async with await ContextdClient.spawn(
            data_dir=tmp_path / "data", settings={"compaction": {"hookTimeoutSeconds": 0.5}},
            before_navigate=before_navigate, stderr=stderr,
        ) as client:
            session = (await client.session_open(workspace=tmp_path))["sessionId"]
            first = await client.append(session, [user("a"), assistant("b")])
            second = await client.append(session, [user("c"), assistant("d")])
            assert (await client.navigate(session, first["leafId"]))["leafId"] == first["leafId"]
            assert (await client.navigate(session, second["leafId"]))["leafId"] == second["leafId"]
    logged = log.read_text()
    assert "beforeNavigate: no answer within 0.5s; navigating as asked" in logged
    assert "beforeNavigate: the client answered an error" in logged
