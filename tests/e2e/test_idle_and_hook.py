"""Idle compaction timers and the beforeCompact hook, with real waiting on real timers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from tests.factories import coding_turn

IDLE = {
    "compaction": {"keepRecentTokens": 3_000},
    "idle": {"enabled": True, "timeoutSeconds": 0.5, "thresholdTokens": 5_000},
}


async def fill(daemon, session: str, turns: int = 6) -> None:
    for turn in range(turns):
        await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(turn)})


async def test_an_idle_session_compacts_once(make_daemon):
    daemon = await make_daemon(settings=IDLE)
    session = (await daemon.open_session())["sessionId"]
    await fill(daemon, session)
    armed = await daemon.wait_for("contextd/idleTimer", sessionId=session, state="armed")
    assert armed["dueAt"].endswith("Z")
    await daemon.wait_for("contextd/idleTimer", sessionId=session, state="fired", timeout=5)
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason="idle")
    assert finished["outcome"] == "compacted" and finished["tokensAfter"] < 5_000
    await asyncio.sleep(1.2)  # below the idle threshold now: no second compaction
    assert len(daemon.received("contextd/compactionFinished")) == 1


async def test_an_idle_session_with_nothing_to_compact_just_ends_its_timer(make_daemon):
    settings = {
        "compaction": {"keepRecentTokens": 100_000},
        "idle": {"enabled": True, "timeoutSeconds": 0.5, "thresholdTokens": 500},
    }
    daemon = await make_daemon(settings=settings)
    session = (await daemon.open_session())["sessionId"]
    await fill(daemon, session, turns=2)
    ended = await daemon.wait_for("contextd/idleTimer", sessionId=session, state="cancelled", timeout=5)
    assert "nothing to compact" in ended["reason"]
    assert not daemon.received("contextd/idleTimer", state="fired")
    assert not daemon.received("contextd/compactionFinished")  # no failure to show anyone


async def test_activity_rearms_and_small_contexts_cancel(make_daemon):
    daemon = await make_daemon(settings={**IDLE, "idle": {**IDLE["idle"], "timeoutSeconds": 1.5}})
    session = (await daemon.open_session())["sessionId"]
    await fill(daemon, session)
    for _ in range(4):  # keep the session busy past its timeout
        await asyncio.sleep(0.5)
        await daemon.request("contextd/session/state", {"sessionId": session})
    assert not daemon.received("contextd/idleTimer", state="fired")
    assert len(daemon.received("contextd/idleTimer", state="armed")) >= 5
    # Going back to a small context cancels the timer.
    tree = await daemon.request("contextd/tree", {"sessionId": session})
    first_message = next(n for n in tree["nodes"] if n.get("role") == "assistant")
    await daemon.request("contextd/navigate", {"sessionId": session, "targetId": first_message["id"]})
    await daemon.wait_for("contextd/idleTimer", sessionId=session, state="cancelled")
    await asyncio.sleep(2)
    assert not daemon.received("contextd/idleTimer", state="fired")


async def test_idle_configure_per_session_and_globally(make_daemon):
    daemon = await make_daemon(settings={"compaction": {"keepRecentTokens": 3_000}})
    quiet = (await daemon.open_session())["sessionId"]
    watched = (await daemon.open_session())["sessionId"]
    await fill(daemon, quiet)
    await fill(daemon, watched)
    assert daemon.received("contextd/idleTimer") == []  # idle is off by default

    configured = await daemon.request(
        "contextd/idle/configure",
        {"sessionId": watched, "enabled": True, "timeoutSeconds": 0.4, "thresholdTokens": 5_000},
    )
    assert configured["enabled"] is True and configured["effectiveThresholdTokens"] == 5_000
    await daemon.wait_for("contextd/compactionFinished", sessionId=watched, reason="idle")
    assert not daemon.received("contextd/idleTimer", sessionId=quiet)

    globally = await daemon.request(
        "contextd/idle/configure", {"enabled": True, "timeoutSeconds": 0.4, "thresholdPercent": 0.01}
    )
    assert globally["thresholdPercent"] == 0.01
    await daemon.wait_for("contextd/compactionFinished", sessionId=quiet, reason="idle")

    await daemon.request("contextd/idle/configure", {"sessionId": watched, "enabled": False})
    bad = await daemon.error_of("contextd/idle/configure", {"enabled": "sometimes"})
    assert bad.code == -32602 and bad.data["errors"][0]["field"] == "enabled"


async def test_two_hundred_idle_sessions_fire_together(make_daemon):
    daemon = await make_daemon(settings={
        "compaction": {"keepRecentTokens": 400},
        "idle": {"enabled": True, "timeoutSeconds": 3, "thresholdTokens": 900},
    })
    sessions = []
    for _ in range(200):
        session = (await daemon.open_session())["sessionId"]
        await daemon.request(
            "contextd/session/append",
            {"sessionId": session, "messages": coding_turn(0, body_words=40) + coding_turn(1, body_words=40)},
        )
        sessions.append(session)
    for session in sessions:
        await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason="idle", timeout=60)
    finished = daemon.received("contextd/compactionFinished", reason="idle")
    assert sorted(f["sessionId"] for f in finished) == sorted(sessions)  # each exactly once
    assert all(f["outcome"] == "compacted" for f in finished)
    await daemon.stop()  # shutdown with timers gone: nothing fires into a closed session


# --- beforeCompact ------------------------------------------------------------------------


def hook_capabilities() -> lsp.ClientCapabilities:
    return lsp.ClientCapabilities(experimental={"contextd": {"beforeCompact": True}})


async def hooked_daemon(make_daemon, answer: Any, *, delay: float = 0.0, timeout: float = 10):
    daemon = await make_daemon(
        capabilities=hook_capabilities(),
        settings={"compaction": {"keepRecentTokens": 3_000, "hookTimeoutSeconds": timeout}},
    )
    asked: list[dict[str, Any]] = []

    async def before_compact(params: Any) -> Any:
        asked.append(params)
        await asyncio.sleep(delay)
        return answer

    daemon.client.feature("contextd/beforeCompact")(before_compact)
    session = (await daemon.open_session())["sessionId"]
    await fill(daemon, session, turns=8)
    return daemon, session, asked


async def test_the_hook_sees_the_plan_and_may_cancel(make_daemon):
    daemon, session, asked = await hooked_daemon(make_daemon, {"cancel": True})
    error = await daemon.error_of("contextd/compact", {"sessionId": session})
    assert error.code == -32800
    assert asked[0]["reason"] == "manual" and asked[0]["summarizeEntryIds"] and asked[0]["keptEntryIds"]
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    assert finished["outcome"] == "cancelled"


async def test_the_hook_may_supply_the_summary(make_daemon):
    daemon, session, _ = await hooked_daemon(make_daemon, {"summary": "## Goal\nThe client's own summary."})
    compacted = await daemon.request("contextd/compact", {"sessionId": session})
    assert compacted["summary"].startswith("## Goal\nThe client's own summary.")
    assert compacted["summarizer"] == {"provider": "client"}


async def test_the_hook_may_add_instructions(make_daemon):
    daemon, session, _ = await hooked_daemon(make_daemon, {"instructions": "Mention module_2 first"})
    compacted = await daemon.request("contextd/compact", {"sessionId": session, "instructions": "Be brief"})
    tree = await daemon.request("contextd/tree", {"sessionId": session})
    assert compacted["entryId"] in {n["id"] for n in tree["nodes"]}
    session_file = next(Path(p) for p in [(await daemon.request("contextd/session/state", {"sessionId": session}))["path"]])
    assert "Be brief\\n\\nMention module_2 first" in session_file.read_text()


@pytest.mark.parametrize("answer, delay", [({"cancel": "maybe", "colour": 1}, 0.0), (["nonsense"], 0.0), (None, 3.0)])
async def test_a_silent_or_confused_hook_does_not_stall(make_daemon, answer, delay):
    daemon, session, asked = await hooked_daemon(make_daemon, answer, delay=delay, timeout=0.5)
    compacted = await daemon.request("contextd/compact", {"sessionId": session})
    assert compacted["summarizer"]["provider"] == "offline"
    assert asked


async def test_navigate_with_a_summary_is_cancellable(make_daemon):
    from tests.summarizers.fake_provider import FakeProvider, Reply

    provider = FakeProvider(default=Reply.hang(30)).start()
    try:
        daemon = await make_daemon(settings={"summarizer": {"provider": "remote", "remoteEndpoint": provider.remote_url, "maxRetries": 0}})
        opened = await daemon.open_session()
        session = opened["sessionId"]
        first = await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(0)})
        await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(1)})
        size = Path(opened["path"]).stat().st_size
        moving = asyncio.ensure_future(daemon.client.protocol.send_request_async(
            "contextd/navigate", {"sessionId": session, "targetId": first["leafId"], "summarize": True}, msg_id="nav"))
        await provider.wait_for_requests(1)
        daemon.notify("$/cancelRequest", lsp.CancelParams(id="nav"))
        with pytest.raises(Exception) as raised:
            await asyncio.wait_for(moving, 10)
        assert getattr(raised.value, "code", None) == -32800
        assert Path(opened["path"]).stat().st_size == size  # nothing written: the leaf stayed
    finally:
        provider.stop()
