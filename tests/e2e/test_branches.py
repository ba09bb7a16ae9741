"""Tree, label, navigate, fork, handoff and session listing over real stdio."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.factories import assistant, coding_turn, result, user


@pytest.fixture
async def daemon(make_daemon):
    return await make_daemon(settings={"compaction": {"keepRecentTokens": 3_000}})


async def append(daemon, session: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return await daemon.request("contextd/session/append", {"sessionId": session, "messages": messages})


async def context_texts(daemon, session: str) -> list[str]:
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    return [json.dumps(m["content"]) for m in context["messages"]]


async def test_tree_shows_every_branch_with_labels_and_tokens(daemon):
    session = (await daemon.open_session())["sessionId"]
    first = await append(daemon, session, [user("try approach A"), assistant("A done")])
    question_id = first["entryIds"][0]
    await daemon.request("contextd/navigate", {"sessionId": session, "targetId": question_id})
    second = await append(daemon, session, [user("try approach B instead"), assistant("B done")])
    await daemon.request("contextd/label", {"sessionId": session, "entryId": second["entryIds"][0], "label": "approach B"})

    tree = await daemon.request("contextd/tree", {"sessionId": session})
    nodes = {node["id"]: node for node in tree["nodes"]}
    assert tree["leafId"] == second["leafId"]
    assert set(first["entryIds"]) | set(second["entryIds"]) <= set(nodes)
    parent = nodes[question_id]["parentId"]
    assert set(nodes[parent]["children"]) == {question_id, second["entryIds"][0]}
    assert nodes[second["entryIds"][0]]["label"] == "approach B"
    assert nodes[question_id]["role"] == "user"
    assert nodes[question_id]["preview"] == "try approach A"
    assert nodes[question_id]["tokens"] > 0
    assert nodes[parent]["type"] == "model_change"

    await daemon.request("contextd/label", {"sessionId": session, "entryId": second["entryIds"][0], "label": None})
    tree = await daemon.request("contextd/tree", {"sessionId": session})
    assert all("label" not in node for node in tree["nodes"])


async def test_navigating_to_a_user_message_returns_its_text(daemon):
    session = (await daemon.open_session())["sessionId"]
    appended = await append(daemon, session, [user("write the parser"), assistant("done"), user("now the lexer")])
    moved = await daemon.request("contextd/navigate", {"sessionId": session, "targetId": appended["entryIds"][2]})
    assert moved["editorText"] == "now the lexer"
    assert moved["leafId"] == appended["entryIds"][1]
    assert await context_texts(daemon, session) == ['"write the parser"', '[{"type": "text", "text": "done"}]']
    changed = await daemon.wait_for("contextd/sessionChanged", sessionId=session, cause="navigate")
    assert changed["leafId"] == appended["entryIds"][1]


async def test_a_branch_summary_tells_the_model_what_was_abandoned(daemon):
    session = (await daemon.open_session())["sessionId"]
    base = await append(daemon, session, [user("Make the tests pass"), assistant("Looking.")])
    await append(daemon, session, [
        assistant("Trying a rewrite of src/db.py.", calls=[("c1", "edit", {"path": "src/db.py"})]),
        result("c1", "edit", "TypeError: unsupported operand type(s) for +: 'int' and 'str'", error=True),
        assistant("The rewrite failed with a TypeError."),
    ])
    moved = await daemon.request(
        "contextd/navigate", {"sessionId": session, "targetId": base["leafId"], "summarize": True}
    )
    assert "branchSummaryId" in moved
    assert moved["leafId"] == moved["branchSummaryId"]
    texts = await context_texts(daemon, session)
    assert "summary of a branch" in texts[-1]
    assert "src/db.py" in texts[-1]
    assert "TypeError: unsupported operand type(s)" in texts[-1]
    tree = await daemon.request("contextd/tree", {"sessionId": session})
    summary_node = next(n for n in tree["nodes"] if n["id"] == moved["branchSummaryId"])
    assert summary_node["type"] == "branch_summary" and summary_node["parentId"] == base["leafId"]


async def test_a_branch_summary_is_reported_like_a_compaction(daemon):
    session = (await daemon.open_session())["sessionId"]
    base = await append(daemon, session, [user("Make the tests pass"), assistant("Looking.")])
    await append(daemon, session, [user("Try a rewrite"), assistant("Rewrote src/db.py.")])
    moved = await daemon.request(
        "contextd/navigate", {"sessionId": session, "targetId": base["leafId"], "summarize": True}
    )
    [started] = daemon.received("contextd/compactionStarted", sessionId=session)
    [finished] = daemon.received("contextd/compactionFinished", sessionId=session)
    assert started["reason"] == finished["reason"] == "branch"
    assert finished["outcome"] == "compacted"
    assert finished["entryId"] == moved["branchSummaryId"]


def written_entry(path: str, entry_id: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return next(e for e in map(json.loads, handle) if e.get("id") == entry_id)


async def test_a_branch_summary_names_the_sources_of_its_items(daemon):
    session = (await daemon.open_session())["sessionId"]
    base = await append(daemon, session, [user("Make the tests pass"), assistant("Looking.")])
    branch = await append(daemon, session, [
        assistant("Trying a rewrite of src/db.py.", calls=[("c1", "edit", {"path": "src/db.py"})]),
        result("c1", "edit", "TypeError: unsupported operand type(s) for +: 'int' and 'str'", error=True),
        assistant("The rewrite failed with a TypeError."),
    ])
    moved = await daemon.request(
        "contextd/navigate", {"sessionId": session, "targetId": base["leafId"], "summarize": True}
    )

    state = await daemon.request("contextd/session/state", {"sessionId": session})
    entry = written_entry(state["path"], moved["branchSummaryId"])
    sources = entry["details"]["sources"]
    blocked = [item for item in sources if "TypeError: unsupported operand" in item["text"]]
    assert blocked and blocked[0]["entryIds"] == [branch["entryIds"][1]], "the failed result"
    assert all(item["text"] in entry["summary"] for item in sources)
    # Only the branch left is summarized: the common ancestor's entries are not sources.
    named = {entry_id for item in sources for entry_id in item["entryIds"]}
    assert named <= set(branch["entryIds"])
    # The branch's only edit failed, so it modified nothing.
    assert entry["details"]["modifiedFiles"] == []


async def test_a_handoff_names_the_sources_of_its_items_in_the_old_session(daemon):
    session = (await daemon.open_session())["sessionId"]
    asked = await append(daemon, session, [user("Migrate the cache to Redis. Never drop the old keys.")])
    for turn in range(3):
        await append(daemon, session, coding_turn(turn))
    handed = await daemon.request("contextd/handoff", {"sessionId": session})

    fresh = await daemon.request("contextd/session/state", {"sessionId": handed["sessionId"]})
    entry = written_entry(fresh["path"], handed["entryId"])
    assert entry["fromSession"] == session
    constraint = [item for item in entry["details"]["sources"] if item["text"] == "Never drop the old keys."]
    assert constraint and constraint[0]["entryIds"] == asked["entryIds"], "the old session's user message"
    assert "src/module_2.py" in entry["details"]["modifiedFiles"]


async def test_a_branch_too_big_for_the_summary_budget_is_refused_and_nothing_moves(make_daemon):
    daemon = await make_daemon(settings={"branchSummary": {"reserveTokens": 200_000}})
    session = (await daemon.open_session())["sessionId"]
    base = await append(daemon, session, [user("Make the tests pass"), assistant("Looking.")])
    left = await append(daemon, session, [user("Try a rewrite"), assistant("Rewrote src/db.py.")])
    error = await daemon.error_of(
        "contextd/navigate", {"sessionId": session, "targetId": base["leafId"], "summarize": True}
    )
    assert error.code == -32005
    assert "branchSummary.reserveTokens" in str(error) and "without a summary" in str(error)
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    assert state["leafId"] == left["leafId"]


async def test_navigating_before_a_compaction_undoes_it_for_the_model(daemon):
    session = (await daemon.open_session())["sessionId"]
    for turn in range(8):
        last = await append(daemon, session, coding_turn(turn))
    before = await daemon.request("contextd/session/context", {"sessionId": session})
    await daemon.request("contextd/compact", {"sessionId": session})
    compacted = await daemon.request("contextd/session/context", {"sessionId": session})
    assert compacted["tokens"] < before["tokens"]
    await daemon.request("contextd/navigate", {"sessionId": session, "targetId": last["leafId"]})
    restored = await daemon.request("contextd/session/context", {"sessionId": session})
    assert restored["messages"] == before["messages"]
    tree = await daemon.request("contextd/tree", {"sessionId": session})
    assert any(node["type"] == "compaction" for node in tree["nodes"])  # still in history


async def test_navigation_errors(daemon):
    session = (await daemon.open_session())["sessionId"]
    missing = await daemon.error_of("contextd/navigate", {"sessionId": session, "targetId": "nope"})
    assert missing.code == -32007 and missing.data == {"entryId": "nope"}
    bad = await daemon.error_of("contextd/navigate", {"sessionId": session})
    assert bad.code == -32602 and bad.data["errors"][0]["field"] == "targetId"
    label = await daemon.error_of("contextd/label", {"sessionId": session, "entryId": "nope", "label": "x"})
    assert label.code == -32007


async def test_fork_starts_a_new_session_from_a_point(daemon):
    opened = await daemon.open_session(name="origin")
    session = opened["sessionId"]
    first = await append(daemon, session, coding_turn(1))
    await append(daemon, session, coding_turn(2))
    forked = await daemon.request("contextd/fork", {"sessionId": session, "entryId": first["leafId"]})
    assert forked["sessionId"] != session
    assert forked["leafId"] == first["leafId"]
    origin_context = await daemon.request("contextd/session/context", {"sessionId": session})
    fork_context = await daemon.request("contextd/session/context", {"sessionId": forked["sessionId"]})
    assert fork_context["messages"] == origin_context["messages"][: len(coding_turn(1))]
    listed = (await daemon.request("contextd/session/list", {}))["sessions"]
    row = next(r for r in listed if r["sessionId"] == forked["sessionId"])
    assert row["parentSession"] == {"id": session, "entryId": first["leafId"]}
    # The fork is independent: appending to it leaves the origin alone.
    await append(daemon, forked["sessionId"], [user("only in the fork")])
    assert "only in the fork" not in json.dumps(await daemon.request("contextd/session/context", {"sessionId": session}))


async def test_handoff_writes_a_document_and_a_linked_session(daemon):
    session = (await daemon.open_session())["sessionId"]
    await append(daemon, session, [user("Migrate the cache to Redis. Never drop the old keys.")])
    for turn in range(3):
        await append(daemon, session, coding_turn(turn))
    state = await daemon.request("contextd/session/state", {"sessionId": session})
    handed = await daemon.request("contextd/handoff", {"sessionId": session, "goal": "finish the Redis migration"})
    assert handed["sessionId"] != session
    assert "finish the Redis migration" in handed["document"]
    assert "src/module_1.py" in handed["document"]
    context = await daemon.request("contextd/session/context", {"sessionId": handed["sessionId"]})
    assert len(context["messages"]) == 1 and handed["document"] in context["messages"][0]["content"]
    tree = await daemon.request("contextd/tree", {"sessionId": handed["sessionId"]})
    handoff_node = next(n for n in tree["nodes"] if n["id"] == handed["entryId"])
    assert handoff_node["type"] == "handoff"
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason="handoff")
    assert finished["outcome"] == "compacted" and finished["handoffSessionId"] == handed["sessionId"]
    listed = (await daemon.request("contextd/session/list", {}))["sessions"]
    row = next(r for r in listed if r["sessionId"] == handed["sessionId"])
    assert row["parentSession"] == {"id": session, "entryId": state["leafId"]}


async def test_strategy_handoff_hands_off_at_the_threshold(make_daemon):
    daemon = await make_daemon(settings={
        "defaultModel": "tiny-model",
        "models": {"tiny-model": {"contextWindow": 20_000}},
        "compaction": {"strategy": "handoff", "reserveTokens": 2_000, "keepRecentTokens": 3_000},
        "pruning": {"enabled": False},
    })
    session = (await daemon.open_session())["sessionId"]
    for turn in range(14):
        await append(daemon, session, coding_turn(turn))
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason="handoff")
    assert finished["outcome"] == "compacted"
    changed = await daemon.wait_for("contextd/sessionChanged", sessionId=finished["handoffSessionId"], cause="handoff")
    assert changed["leafId"] == finished["entryId"]
    assert not daemon.received("contextd/compactionFinished", reason="threshold")


async def test_a_restart_after_navigation_restores_the_leaf(make_daemon, tmp_path):
    first = await make_daemon()
    session = (await first.open_session())["sessionId"]
    appended = await append(first, session, [user("a"), assistant("b"), user("c"), assistant("d")])
    await first.request("contextd/navigate", {"sessionId": session, "targetId": appended["entryIds"][1]})
    before = await first.request("contextd/session/context", {"sessionId": session})
    await first.stop()
    second = await make_daemon()
    reopened = await second.open_session(sessionId=session)
    assert reopened["leafId"] == appended["entryIds"][1]
    assert await second.request("contextd/session/context", {"sessionId": session}) == before
