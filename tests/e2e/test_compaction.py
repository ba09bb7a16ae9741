"""Compaction over real stdio: manual, dry run, every trigger, events, errors, cancellation."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.e2e.support import append_turns
from tests.factories import assistant, user
from tests.summarizers.fake_provider import FakeProvider, Reply

SMALL_MODEL = "tiny-model"


def small_window(**overrides: Any) -> dict[str, Any]:
    """A 20k window: threshold at 17k tokens, about a dozen coding turns."""
    settings: dict[str, Any] = {
        "defaultModel": SMALL_MODEL,
        "models": {SMALL_MODEL: {"contextWindow": 20_000, "maxOutputTokens": 2_000}},
        "compaction": {"reserveTokens": 2_000, "keepRecentTokens": 3_000},
        "pruning": {"enabled": False},
    }
    for group, values in overrides.items():
        settings[group] = {**settings.get(group, {}), **values}
    return settings


@pytest.fixture
async def daemon(make_daemon):
    """A big window, but a small kept part so that a few turns are worth compacting."""
    return await make_daemon(settings={"compaction": {"keepRecentTokens": 3_000}})


@pytest.fixture
def provider():
    fake = FakeProvider()
    fake.start()
    yield fake
    fake.stop()


async def test_manual_compaction_summarizes_and_keeps_the_recent_part(daemon):
    session = (await daemon.open_session())["sessionId"]
    await append_turns(daemon, session, range(8))
    before = await daemon.request("contextd/session/context", {"sessionId": session})

    compacted = await daemon.request(
        "contextd/compact", {"sessionId": session, "instructions": "Focus on module_3"}
    )
    assert compacted["tokensAfter"] < compacted["tokensBefore"]
    assert "## Goal" in compacted["summary"]
    assert "src/module_1.py" in compacted["summary"]
    assert compacted["summarizer"]["provider"] == "offline"

    started = await daemon.wait_for("contextd/compactionStarted", sessionId=session)
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    assert started["reason"] == finished["reason"] == "manual"
    assert started["compactionId"] == finished["compactionId"]
    assert finished["outcome"] == "compacted"
    assert finished["entryId"] == compacted["entryId"]
    assert finished["tokensAfter"] == compacted["tokensAfter"]
    assert finished["willRetry"] is False
    usage = await daemon.wait_for("contextd/tokenUsage", sessionId=session, tokens=compacted["tokensAfter"])
    assert usage["tokens"] < compacted["tokensBefore"]

    after = await daemon.request("contextd/session/context", {"sessionId": session})
    first = after["messages"][0]
    assert first["role"] == "user" and "compacted" in first["content"]
    assert after["messages"][-1] == before["messages"][-1]
    assert after["tokens"] == compacted["tokensAfter"]


async def test_the_compaction_entry_names_the_sources_of_its_items(daemon):
    session = (await daemon.open_session())["sessionId"]
    appended = await append_turns(daemon, session, range(6))
    compacted = await daemon.request("contextd/compact", {"sessionId": session})

    path = Path((await daemon.request("contextd/session/state", {"sessionId": session}))["path"])
    [entry] = [e for e in map(json.loads, path.read_text().splitlines()) if e.get("id") == compacted["entryId"]]
    sources = entry["details"]["sources"]
    ids_in_file = {e.get("id") for e in map(json.loads, path.read_text().splitlines())}
    goal = [item for item in sources if item["section"] == "Goal"]
    assert goal and goal[0]["text"] in compacted["summary"]
    assert all(set(item["entryIds"]) <= ids_in_file for item in sources), "ids a client can jump to"
    assert appended["entryIds"][0] not in {i for item in sources for i in item["entryIds"]}, "kept, not summarized"


async def test_repeated_compactions_keep_what_the_previous_one_kept(daemon):
    session = (await daemon.open_session())["sessionId"]
    await append_turns(daemon, session, range(6))
    await daemon.request("contextd/compact", {"sessionId": session})
    await append_turns(daemon, session, range(6, 12))
    second = await daemon.request("contextd/compact", {"sessionId": session})
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    summaries = [m for m in context["messages"] if m["role"] == "user" and "compacted" in str(m["content"])]
    assert len(summaries) == 1
    # Facts from before the first compaction survive the second.
    assert "src/module_0.py" in second["summary"]
    assert "src/module_11.py" in str(context["messages"])


async def test_dry_run_reports_without_writing(daemon):
    opened = await daemon.open_session()
    session = opened["sessionId"]
    await append_turns(daemon, session, range(8))
    size = Path(opened["path"]).stat().st_size
    preview = await daemon.request("contextd/compact", {"sessionId": session, "dryRun": True})
    assert preview["firstKeptEntryId"] in preview["keptEntryIds"]
    assert preview["summarizeEntryIds"] and not set(preview["summarizeEntryIds"]) & set(preview["keptEntryIds"])
    assert preview["tokensKept"] < preview["tokensBefore"]
    assert preview["tokensKept"] < preview["tokensAfter"] <= preview["tokensAfterMax"]
    assert Path(opened["path"]).stat().st_size == size
    assert daemon.received("contextd/compactionStarted") == []
    compacted = await daemon.request("contextd/compact", {"sessionId": session})
    assert preview["tokensAfter"] == compacted["tokensAfter"]  # the offline summary, measured
    assert preview["pruneEntryIds"] == []



async def test_nothing_to_compact(daemon):
    session = (await daemon.open_session())["sessionId"]
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": [user("hi")]})
    error = await daemon.error_of("contextd/compact", {"sessionId": session})
    assert error.code == -32005
    assert error.data == {"sessionId": session}


async def test_threshold_compaction_runs_by_itself(make_daemon):
    daemon = await make_daemon(settings=small_window())
    session = (await daemon.open_session())["sessionId"]
    appended = await append_turns(daemon, session, range(14))
    threshold = appended["usage"]["thresholdTokens"]
    assert threshold == 17_000
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason="threshold")
    assert finished["outcome"] == "compacted"
    assert finished["tokensBefore"] >= threshold
    assert finished["tokensAfter"] < threshold
    assert daemon.received("contextd/compactionStarted", reason="threshold")


async def test_a_threshold_with_nothing_to_compact_is_reported_once_while_over_it(make_daemon):
    # The kept recent part is larger than the window: past the threshold, nothing to fold.
    daemon = await make_daemon(settings=small_window(compaction={"keepRecentTokens": 100_000}))
    session = (await daemon.open_session())["sessionId"]
    first = await daemon.request("contextd/session/append", {"sessionId": session, "messages": [user("start")]})
    appended = await append_turns(daemon, session, range(14))
    assert appended["usage"]["tokens"] >= appended["usage"]["thresholdTokens"]
    skipped = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason="threshold")
    assert skipped["outcome"] == "skipped" and not skipped["willRetry"]
    assert skipped["error"].startswith("nothing to compact: the history's ")
    assert "fit in the 100,000 recent tokens a compaction keeps" in skipped["error"]
    assert daemon.received("contextd/compactionStarted", sessionId=session)[0]["compactionId"] == skipped["compactionId"]

    await append_turns(daemon, session, range(14, 16))  # still over: said once
    await daemon.request("contextd/session/state", {"sessionId": session})  # answered after the triggers ran
    assert len(daemon.received("contextd/compactionFinished", sessionId=session)) == 1

    # Back under the threshold, then over it again: said again.
    await daemon.request("contextd/navigate", {"sessionId": session, "targetId": first["entryIds"][0]})
    under = await daemon.request("contextd/session/append", {"sessionId": session, "messages": [user("again")]})
    assert under["usage"]["tokens"] < under["usage"]["thresholdTokens"]
    await append_turns(daemon, session, range(14))
    await daemon.request("contextd/session/state", {"sessionId": session})  # answered after the triggers ran
    assert [f["outcome"] for f in daemon.received("contextd/compactionFinished", sessionId=session)] == ["skipped"] * 2
    assert daemon.received("contextd/sessionChanged", sessionId=session, cause="compaction") == []


async def test_pruning_comes_first_and_can_be_enough(make_daemon):
    daemon = await make_daemon(
        settings=small_window(pruning={"enabled": True, "protectTokens": 3_000, "minimumSavings": 1_000})
    )
    opened = await daemon.open_session()
    session = opened["sessionId"]
    await append_turns(daemon, session, range(12))
    changed = await daemon.wait_for("contextd/sessionChanged", sessionId=session, cause="prune")
    assert changed["leafId"]
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    pruned = [m for m in context["messages"] if m["role"] == "toolResult" and "[Output pruned:" in str(m["content"])]
    assert pruned
    assert daemon.received("contextd/compactionStarted") == []
    # The original output stays on disk.
    assert "line0_199 = compute(199)" in Path(opened["path"]).read_text()


async def test_strategy_off_stops_automatic_but_not_manual(make_daemon):
    daemon = await make_daemon(settings=small_window(compaction={"strategy": "off"}))
    session = (await daemon.open_session())["sessionId"]
    appended = await append_turns(daemon, session, range(14))
    assert appended["usage"]["tokens"] > appended["usage"]["thresholdTokens"]
    await asyncio.sleep(0.3)
    assert daemon.received("contextd/compactionStarted") == []
    compacted = await daemon.request("contextd/compact", {"sessionId": session})
    assert compacted["tokensAfter"] < compacted["tokensBefore"]


@pytest.mark.parametrize(
    "failure, reason",
    [
        ({"stop": "error", "errorKind": "context_overflow", "errorMessage": "prompt is too long"}, "overflow"),
        ({"stop": "length"}, "incomplete"),
    ],
)
async def test_overflow_and_truncation_compact_for_a_retry(daemon, failure, reason):
    session = (await daemon.open_session())["sessionId"]
    await append_turns(daemon, session, range(8))
    stop = failure.pop("stop")
    failed = await daemon.request(
        "contextd/session/append",
        {"sessionId": session, "messages": [user("one more"), assistant("partial", stop=stop, **failure)]},
    )
    failed_id = failed["entryIds"][-1]
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason=reason)
    assert finished["outcome"] == "compacted"
    assert finished["willRetry"] is True
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    assert context["messages"][-1]["content"] == "one more"  # the failed answer left the context
    tree_path = await daemon.request("contextd/session/state", {"sessionId": session})
    assert tree_path["leafId"] != failed_id

    # The retry fails the same way right away: reported as a failure, not compacted again.
    await daemon.request(
        "contextd/session/append",
        {"sessionId": session, "messages": [assistant("again", stop=stop, **failure)]},
    )
    again = await daemon.wait_for(
        "contextd/compactionFinished", sessionId=session, reason=reason, outcome="failed"
    )
    assert again["willRetry"] is False
    assert "still too large" in again["error"]
    assert len(daemon.received("contextd/compactionFinished", outcome="compacted")) == 1


async def test_summarizer_failure_leaves_the_session_untouched(make_daemon, provider):
    provider.default = Reply.error(500, "upstream exploded")
    daemon = await make_daemon(
        settings={**remote(provider, max_retries=1), "compaction": {"keepRecentTokens": 3_000}}
    )
    opened = await daemon.open_session()
    session = opened["sessionId"]
    await append_turns(daemon, session, range(8))
    size = Path(opened["path"]).stat().st_size
    error = await daemon.error_of("contextd/compact", {"sessionId": session})
    assert error.code == -32006
    assert error.data == {"provider": "remote"}
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    assert finished["outcome"] == "failed" and "500" in finished["error"]
    assert Path(opened["path"]).stat().st_size == size
    # Two prompts are in flight (the history and a split turn's prefix). The first to fail
    # its retry ends the compaction and cancels the other, which may not have reached its
    # own retry yet (under load it often has not): so the prompt that ended it was sent
    # exactly twice, a first try and one retry, and none more often.
    tries = Counter(request.body["prompt"] for request in provider.requests)
    assert 2 in tries.values() and set(tries.values()) <= {1, 2}, tries.values()


async def start_slow_compaction(daemon, provider, session: str) -> asyncio.Task[Any]:
    provider.default = Reply.hang(20)  # every summary request hangs
    task = asyncio.ensure_future(daemon.request("contextd/compact", {"sessionId": session}))
    await daemon.wait_for("contextd/compactionStarted", sessionId=session)
    return task


def remote(provider, max_retries: int = 0) -> dict[str, Any]:
    return {
        "summarizer": {"provider": "remote", "remoteEndpoint": provider.url + "/summarize", "maxRetries": max_retries},
        "compaction": {"keepRecentTokens": 3_000},
    }


async def test_one_compaction_at_a_time_and_abort(make_daemon, provider):
    daemon = await make_daemon(settings=remote(provider))
    opened = await daemon.open_session()
    session = opened["sessionId"]
    await append_turns(daemon, session, range(8))
    size = Path(opened["path"]).stat().st_size
    running = await start_slow_compaction(daemon, provider, session)

    busy = await daemon.error_of("contextd/compact", {"sessionId": session})
    assert busy.code == -32004
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    assert state["compacting"] is True

    assert await daemon.request("contextd/compact/abort", {"sessionId": session}) == {"aborted": True}
    with pytest.raises(JsonRpcException) as raised:
        await running
    assert raised.value.code == -32800
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    assert finished["outcome"] == "aborted"
    assert Path(opened["path"]).stat().st_size == size
    assert await daemon.request("contextd/compact/abort", {"sessionId": session}) == {"aborted": False}


async def test_cancel_request_stops_a_compaction(make_daemon, provider):
    daemon = await make_daemon(settings=remote(provider))
    opened = await daemon.open_session()
    session = opened["sessionId"]
    await append_turns(daemon, session, range(8))
    size = Path(opened["path"]).stat().st_size
    provider.default = Reply.hang(20)
    running = asyncio.ensure_future(
        daemon.client.protocol.send_request_async("contextd/compact", {"sessionId": session}, msg_id="to-cancel")
    )
    await daemon.wait_for("contextd/compactionStarted", sessionId=session)
    daemon.notify("$/cancelRequest", lsp.CancelParams(id="to-cancel"))
    with pytest.raises(JsonRpcException) as raised:
        await asyncio.wait_for(running, 10)
    assert raised.value.code == -32800
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    assert finished["outcome"] == "cancelled"
    assert Path(opened["path"]).stat().st_size == size
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    assert state["compacting"] is False


async def test_progress_is_reported_to_clients_that_ask(make_daemon):
    capabilities = lsp.ClientCapabilities(window=lsp.WindowClientCapabilities(work_done_progress=True))
    daemon = await make_daemon(
        capabilities=capabilities, settings={"compaction": {"keepRecentTokens": 3_000}}
    )
    session = (await daemon.open_session())["sessionId"]
    await append_turns(daemon, session, range(8))
    await daemon.request("contextd/compact", {"sessionId": session})
    await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    for _ in range(50):
        reports = [r for reports in daemon.client.progress_reports.values() for r in reports]
        if any(type(r).__name__ == "WorkDoneProgressEnd" for r in reports):
            break
        await asyncio.sleep(0.05)
    kinds = [type(r).__name__ for r in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"


async def test_an_overflow_during_a_compaction_rides_on_it(make_daemon, provider):
    provider.default = Reply.with_summary("## Goal\nShip it.", delay=1.5)
    daemon = await make_daemon(settings=remote(provider))
    session = (await daemon.open_session())["sessionId"]
    await append_turns(daemon, session, range(8))
    running = asyncio.ensure_future(daemon.request("contextd/compact", {"sessionId": session}))
    await daemon.wait_for("contextd/compactionStarted", sessionId=session)
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": [
        user("and one more thing"),
        assistant("", stop="error", errorKind="context_overflow", errorMessage="prompt is too long"),
    ]})
    await running
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    assert finished["outcome"] == "compacted" and finished["willRetry"] is True
    assert len(daemon.received("contextd/compactionStarted")) == 1  # no second compaction
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    assert context["messages"][-1]["content"] == "and one more thing"
