"""Context promotion over real stdio: an overflow or a truncated answer moves the session to
a configured larger model instead of compacting; only when none applies does it compact."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.factories import assistant, coding_turn, user
from tests.summarizers.fake_provider import FakeProvider, Reply

SONNET = "claude-sonnet-4-5"
SONNET_1M = "claude-sonnet-4-5-1m"
"""Not in the registry: it resolves to claude-sonnet-4-5 (family claude-4) by prefix, and the
`models` override gives it the 1M window Anthropic's long-context beta offers."""

FAILURES = [
    pytest.param({"stop": "error", "errorKind": "context_overflow",
                  "errorMessage": "prompt is too long: 212000 tokens > 200000 maximum"}, "overflow", id="overflow"),
    pytest.param({"stop": "length"}, "incomplete", id="truncated"),
]


def promoting(*rules: dict[str, str]) -> dict[str, Any]:
    return {
        "defaultModel": SONNET,
        "models": {SONNET_1M: {"contextWindow": 1_000_000}},
        "compaction": {"keepRecentTokens": 3_000, "promotion": list(rules)},
    }


async def session_with_work(daemon) -> str:
    session = (await daemon.open_session())["sessionId"]
    for turn in range(8):
        await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(turn)})
    return session


async def fail(daemon, session: str, failure: dict[str, Any], text: str = "one more") -> str:
    failure = dict(failure)
    stop = failure.pop("stop")
    appended = await daemon.request("contextd/session/append", {
        "sessionId": session, "messages": [user(text), assistant("partial", stop=stop, **failure)],
    })
    return appended["entryIds"][-1]


def causes(daemon, session: str) -> list[str]:
    return [params["cause"] for params in daemon.received("contextd/sessionChanged", sessionId=session)]


@pytest.mark.parametrize("failure, reason", FAILURES)
async def test_a_failed_answer_promotes_to_the_larger_model_instead_of_compacting(make_daemon, failure, reason):
    daemon = await make_daemon(settings=promoting({"from": "claude-4", "to": SONNET_1M}))
    session = await session_with_work(daemon)
    before = await daemon.request("contextd/session/state", {"sessionId": session})
    failed_id = await fail(daemon, session, failure)

    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason=reason)
    assert finished["outcome"] == "promoted" and finished["willRetry"] is True
    assert (finished["model"], finished["contextWindow"]) == (SONNET_1M, 1_000_000)
    assert (finished["previousModel"], finished["previousContextWindow"]) == (SONNET, 200_000)
    assert "entryId" not in finished  # nothing was summarized
    started = daemon.received("contextd/compactionStarted", sessionId=session)
    assert [s["compactionId"] for s in started] == [finished["compactionId"]]

    # The failed answer left the context, then the model changed: in that order, as the user sees it.
    assert causes(daemon, session)[-2:] == [reason, "model"]
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    assert state["model"] == SONNET_1M and state["contextWindow"] == 1_000_000
    assert state["usage"]["percent"] < before["usage"]["percent"] / 4
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    assert context["messages"][-1]["content"] == "one more"
    tree = await daemon.request("contextd/tree", {"sessionId": session})
    assert "compaction" not in [node["type"] for node in tree["nodes"]]
    assert failed_id in {node["id"] for node in tree["nodes"]}  # left behind, never deleted
    model_changes = [n for n in tree["nodes"] if n["type"] == "model_change"]
    assert model_changes[-1]["preview"] == f"model: {SONNET_1M}" and tree["leafId"] == model_changes[-1]["id"]
    stats = await daemon.request("contextd/session/stats", {"sessionId": session})
    assert stats["ratio"] == 1.0  # the whole history is still in the context

    # The retry succeeds on the larger model; the session stays there across a restart.
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": [assistant("Done.")]})
    await daemon.stop()
    again = await make_daemon(settings=promoting({"from": "claude-4", "to": SONNET_1M}))
    reopened = await again.open_session(sessionId=session)
    assert reopened["model"] == SONNET_1M and reopened["contextWindow"] == 1_000_000


@pytest.mark.parametrize("failure, reason", FAILURES)
async def test_on_the_largest_model_a_failed_answer_compacts_as_before(make_daemon, failure, reason):
    daemon = await make_daemon(settings=promoting({"from": "claude-4", "to": SONNET_1M}))
    session = await session_with_work(daemon)
    await fail(daemon, session, failure)
    await daemon.wait_for("contextd/compactionFinished", sessionId=session, outcome="promoted")

    # The retry fails on the 1M model too: the rule names it (family claude-4) but offers no
    # larger window, so this time the session compacts, and the client is told to retry.
    await fail(daemon, session, failure, text="and again")
    compacted = await daemon.wait_for("contextd/compactionFinished", sessionId=session, outcome="compacted")
    assert compacted["reason"] == reason and compacted["willRetry"] is True and compacted["entryId"]
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    assert state["model"] == SONNET_1M
    finished = daemon.received("contextd/compactionFinished", sessionId=session)
    assert [f["outcome"] for f in finished] == ["promoted", "compacted"]
    assert len(daemon.received("contextd/compactionStarted", sessionId=session)) == 2

    # And the retry after that compaction failing too is reported, not compacted nor promoted again.
    await fail(daemon, session, failure, text="still")
    failed = await daemon.wait_for("contextd/compactionFinished", sessionId=session, outcome="failed")
    assert failed["willRetry"] is False and "still too large" in failed["error"]


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param([{"from": "gpt-4o", "to": "gpt-4.1"}], id="a rule for another model"),
        pytest.param([{"from": SONNET, "to": "gpt-4o"}], id="a target with a smaller window"),
        pytest.param([], id="no rules"),
    ],
)
async def test_without_an_applicable_promotion_the_session_compacts(make_daemon, rules):
    daemon = await make_daemon(settings=promoting(*rules))
    session = await session_with_work(daemon)
    await fail(daemon, session, FAILURES[0].values[0])
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason="overflow")
    assert finished["outcome"] == "compacted" and finished["willRetry"] is True
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    assert state["model"] == SONNET
    assert "model" not in causes(daemon, session)[1:]  # only the model set when the session opened


async def test_an_overflow_during_a_compaction_rides_on_it_without_promoting(make_daemon):
    provider = FakeProvider(default=Reply.with_summary("## Goal\nShip it.", delay=1.5)).start()
    try:
        settings = promoting({"from": "claude-4", "to": SONNET_1M})
        settings["summarizer"] = {"provider": "remote", "remoteEndpoint": provider.remote_url, "maxRetries": 0}
        daemon = await make_daemon(settings=settings)
        session = await session_with_work(daemon)
        running = asyncio.ensure_future(daemon.request("contextd/compact", {"sessionId": session}))
        await daemon.wait_for("contextd/compactionStarted", sessionId=session)
        await fail(daemon, session, FAILURES[0].values[0])
        await running
        finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
        assert finished["outcome"] == "compacted" and finished["willRetry"] is True
        assert len(daemon.received("contextd/compactionFinished")) == 1  # no promotion beside it
        assert (await daemon.request("contextd/session/state", {"sessionId": session}))["model"] == SONNET

        # The retry after that compaction fails too: rather than giving up, the session is promoted.
        await fail(daemon, session, FAILURES[0].values[0], text="retried")
        promoted = await daemon.wait_for("contextd/compactionFinished", sessionId=session, outcome="promoted")
        assert promoted["willRetry"] is True and promoted["model"] == SONNET_1M
        assert not daemon.received("contextd/compactionFinished", outcome="failed")
    finally:
        provider.stop()


async def test_rules_apply_in_order_and_match_ids_by_prefix(make_daemon):
    settings = promoting(
        {"from": "gpt-4o-mini", "to": "gpt-4o"},  # same window: skipped
        {"from": "gpt-4o", "to": "gpt-4.1"},
        {"from": "gpt-4o", "to": "gemini-1.5-pro"},
    )
    daemon = await make_daemon(settings=settings)
    session = (await daemon.open_session(model="gpt-4o-mini-2024-07-18"))["sessionId"]
    await fail(daemon, session, {"stop": "length"})
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    assert finished["outcome"] == "promoted"
    assert (finished["model"], finished["contextWindow"]) == ("gpt-4.1", 1_047_576)


async def test_a_bad_promotion_rule_is_an_error_naming_the_field(tmp_path: Path):
    from tests.conftest import Daemon

    running = Daemon(tmp_path / "data")
    with pytest.raises(Exception) as raised:
        await running.start(settings={"compaction": {"promotion": [{"from": SONNET, "too": SONNET_1M}]}})
    assert "compaction.promotion.0.to" in str(raised.value)
    await running.stop()
