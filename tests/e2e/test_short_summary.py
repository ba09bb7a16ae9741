"""The one-line summary of a compaction or branch summary: stored, returned, shown in the tree."""

from __future__ import annotations

from tests.factories import coding_turn


async def test_a_compaction_carries_one_line_for_the_tree_and_its_events(make_daemon):
    daemon = await make_daemon(settings={"compaction": {"keepRecentTokens": 3_000}})
    session = (await daemon.open_session())["sessionId"]
    messages = [m for n in range(6) for m in coding_turn(n)]
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": messages})

    compacted = await daemon.request("contextd/compact", {"sessionId": session})
    finished = await daemon.wait_for("contextd/compactionFinished", outcome="compacted")
    tree = await daemon.request("contextd/tree", {"sessionId": session})

    line = compacted["shortSummary"]
    assert line and "\n" not in line and len(line) <= 140
    assert line.startswith("Please fix the bug in src/module_")  # the goal the user stated
    assert finished["shortSummary"] == line
    node = next(n for n in tree["nodes"] if n["id"] == compacted["entryId"])
    assert node["shortSummary"] == line
    assert node["preview"].startswith("compaction: Please fix the bug")


async def test_a_branch_summary_carries_one_line_too(daemon):
    session = (await daemon.open_session())["sessionId"]
    appended = await daemon.request(
        "contextd/session/append",
        {"sessionId": session, "messages": [m for n in range(2) for m in coding_turn(n)]},
    )
    first_answer = appended["entryIds"][5]

    moved = await daemon.request(
        "contextd/navigate", {"sessionId": session, "targetId": first_answer, "summarize": True}
    )
    tree = await daemon.request("contextd/tree", {"sessionId": session})

    node = next(n for n in tree["nodes"] if n["id"] == moved["branchSummaryId"])
    assert node["shortSummary"] and "\n" not in node["shortSummary"]
    assert node["preview"].startswith(f"branch_summary: {node['shortSummary']}"[:99])
