"""contextd/session/stats over real stdio: what compaction took out, in figures a user can check."""

from __future__ import annotations

from tests.factories import coding_turn


async def test_stats_report_the_compaction_and_what_the_context_still_holds(make_daemon):
    daemon = await make_daemon(settings={"compaction": {"keepRecentTokens": 3_000}})
    session = (await daemon.open_session())["sessionId"]
    messages = [m for n in range(6) for m in coding_turn(n)]
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": messages})

    before = await daemon.request("contextd/session/stats", {"sessionId": session})
    assert before["history"] == before["context"]
    assert before["history"]["entries"] == len(messages)
    assert before["compactions"] == {"count": 0, "tokensSaved": 0, "summaryTokens": 0}
    assert before["ratio"] == 1.0

    compacted = await daemon.request("contextd/compact", {"sessionId": session})
    stats = await daemon.request("contextd/session/stats", {"sessionId": session})
    state = await daemon.request("contextd/session/state", {"sessionId": session})

    assert stats["sessionId"] == session
    assert stats["compactions"]["count"] == 1
    assert stats["compactions"]["tokensSaved"] == compacted["tokensBefore"] - compacted["tokensAfter"]
    assert stats["compactions"]["summaryTokens"] > 0
    assert stats["context"]["tokens"] == state["usage"]["tokens"] == compacted["tokensAfter"]
    assert stats["context"]["entries"] < stats["history"]["entries"] == len(messages) + 1
    assert stats["ratio"] == round(stats["context"]["tokens"] / stats["history"]["tokens"], 4)
    assert stats["ratio"] < 0.5
    assert stats["treeNodes"] == state["entries"]


async def test_stats_of_an_unknown_session_or_without_an_id_are_clear_errors(daemon):
    missing = await daemon.error_of("contextd/session/stats", {"sessionId": "no-such-session"})
    assert missing.code == -32001
    invalid = await daemon.error_of("contextd/session/stats", {})
    assert invalid.code == -32602 and "sessionId" in str(invalid)
