"""Forks and hand-offs get names of their own, so a session picker tells them apart."""

from __future__ import annotations

import pytest

from tests.factories import coding_turn, user


@pytest.fixture
async def daemon(make_daemon):
    return await make_daemon()


async def names_by_id(daemon) -> dict[str, str | None]:
    listed = (await daemon.request("contextd/session/list", {}))["sessions"]
    return {row["sessionId"]: row.get("name") for row in listed}


async def test_a_fork_is_named_after_its_parent_and_keeps_that_name_on_disk(
    daemon, make_daemon
):
    origin = await daemon.open_session(name="fix tests")
    assert origin["name"] == "fix tests"
    first = await daemon.request(
        "contextd/session/append",
        {"sessionId": origin["sessionId"], "messages": coding_turn(1)},
    )
    forked = await daemon.request(
        "contextd/fork", {"sessionId": origin["sessionId"], "entryId": first["leafId"]}
    )
    assert (await daemon.open_session(sessionId=forked["sessionId"]))[
        "name"
    ] == "fix tests (fork)"
    assert (await names_by_id(daemon))[forked["sessionId"]] == "fix tests (fork)"
    assert (await names_by_id(daemon))[origin["sessionId"]] == "fix tests"

    # A new daemon reads it back from disk the same way.
    await daemon.stop()
    again = await make_daemon(data_dir=daemon.data_dir)
    assert (await names_by_id(again))[forked["sessionId"]] == "fix tests (fork)"
    reopened = await again.open_session(sessionId=forked["sessionId"])
    assert reopened["name"] == "fix tests (fork)"


async def test_a_hand_off_is_named_after_its_goal_or_its_parent(daemon):
    origin = (await daemon.open_session(name="migration"))["sessionId"]
    await daemon.request(
        "contextd/session/append",
        {
            "sessionId": origin,
            "messages": [user("Move the cache to Redis."), *coding_turn(1)],
        },
    )
    with_goal = await daemon.request(
        "contextd/handoff", {"sessionId": origin, "goal": "finish the Redis migration"}
    )
    without_goal = await daemon.request("contextd/handoff", {"sessionId": origin})
    names = await names_by_id(daemon)
    assert names[with_goal["sessionId"]] == "finish the Redis migration"
    assert names[without_goal["sessionId"]] == "hand-off of migration"
    assert names[origin] == "migration"
