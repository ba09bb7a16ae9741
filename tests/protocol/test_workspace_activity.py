"""contextd/workspace/watch over a real shared daemon: a connection that watches a
workspace hears of every change of its sessions, whoever made it (another client, an idle
timer), with the figures that client saw; unwatch stops it; bad params name the field."""

from __future__ import annotations

from typing import Any

import pytest
from contextd_client import NotificationStream
from contextd_client.rpc import ContextdError

from tests.factories import coding_turn, user
from tests.shared_daemon import contextd

INVALID_PARAMS = -32602
WAIT_SECONDS = 60


async def next_activity(stream: NotificationStream) -> dict[str, Any]:
    return (await stream.get(WAIT_SECONDS)).params


async def test_a_watcher_hears_what_another_client_does_with_its_figures(shared_clients, tmp_path, shared_env):
    project = tmp_path / "project"
    watcher = await shared_clients(project)
    agent = await shared_clients(project)
    before = await agent.session_open(name="earlier")

    activity = watcher.activity()
    watched = await watcher.watch_workspace()
    assert [row["sessionId"] for row in watched["sessions"]] == [before["sessionId"]]
    assert (await watcher.daemon_status())["pid"] == (await agent.daemon_status())["pid"]

    opened = await agent.session_open(name="driven by the agent")
    session = opened["sessionId"]
    seen = await next_activity(activity)
    assert (seen["sessionId"], seen["cause"], seen["name"]) == (session, "open", "driven by the agent")
    assert seen["workspace"] == str(project) and seen["leafId"] == opened["leafId"]
    assert "source" not in seen  # a session a client writes is no mirror

    turns = [message for index in range(8) for message in coding_turn(index)]
    appended = await agent.append(session, turns)
    seen = await next_activity(activity)
    assert (seen["sessionId"], seen["cause"], seen["leafId"]) == (session, "append", appended["leafId"])
    assert seen["usage"] == appended["usage"]
    listed = {row["sessionId"]: row for row in (await agent.session_list(workspace=project))["sessions"]}
    assert seen["updatedAt"] == listed[session]["updatedAt"]

    compacted = await agent.compact(session)
    seen = await next_activity(activity)
    assert (seen["cause"], seen["leafId"]) == ("compaction", compacted["entryId"])
    assert seen["usage"]["tokens"] == compacted["tokensAfter"] < appended["usage"]["tokens"]

    forked = await agent.fork(session, appended["entryIds"][0])
    seen = await next_activity(activity)
    assert (seen["sessionId"], seen["cause"]) == (forked["sessionId"], "fork")
    assert seen["name"] == "driven by the agent (fork)"
    assert seen["usage"] == (await agent.state(forked["sessionId"]))["usage"]

    assert activity.drain() == []  # one notification per change, however it was routed
    shown = contextd(shared_env, tmp_path / "data", "status")
    assert shown.returncode == 0 and f"no session; watching {project}" in shown.stdout


async def test_only_the_watched_workspace_and_unwatch_stops_it(shared_clients, tmp_path):
    watcher = await shared_clients(tmp_path / "project")
    agent = await shared_clients(tmp_path / "project")
    here = (await agent.session_open(name="here"))["sessionId"]
    elsewhere = (await agent.session_open(workspace=str(tmp_path / "elsewhere"), name="elsewhere"))["sessionId"]
    activity = watcher.activity()
    await watcher.watch_workspace(tmp_path / "elsewhere")

    # Changes reach the watcher in the order they were made: the next activity after a
    # change of an unwatched session is the next watched one, so nothing came in between.
    await agent.append(here, [user("not watched")])
    await agent.append(elsewhere, [user("watched")])
    assert (await next_activity(activity))["sessionId"] == elsewhere

    await watcher.watch_workspace()  # the client's own workspace as well
    await agent.append(here, [user("watched now")])
    assert (await next_activity(activity))["sessionId"] == here

    await watcher.unwatch_workspace()
    await agent.append(here, [user("no longer watched")])
    await agent.append(elsewhere, [user("still watched")])
    assert (await next_activity(activity))["sessionId"] == elsewhere

    await watcher.unwatch_workspace(tmp_path / "elsewhere")
    await watcher.watch_workspace(all_workspaces=True)
    await agent.append(here, [user("every workspace")])
    assert (await next_activity(activity))["sessionId"] == here
    await watcher.unwatch_workspace(all_workspaces=True)
    await agent.append(here, [user("nothing watched")])
    await watcher.watch_workspace(tmp_path / "elsewhere")
    await agent.append(elsewhere, [user("the last one")])
    assert (await next_activity(activity))["sessionId"] == elsewhere
    assert activity.drain() == []


async def test_the_idle_timer_of_a_session_nobody_asks_about_is_activity(shared_clients, tmp_path):
    watcher = await shared_clients(tmp_path / "project")
    agent = await shared_clients(tmp_path / "project")
    session = (await agent.session_open())["sessionId"]
    await agent.append(session, [message for index in range(8) for message in coding_turn(index)])
    activity = watcher.activity()
    await watcher.watch_workspace()
    await agent.idle_configure(session_id=session, enabled=True, timeout_seconds=0.2, threshold_tokens=1)

    seen = await next_activity(activity)
    assert (seen["sessionId"], seen["cause"]) == (session, "compaction")
    # The timer re-arms after a compaction: find this one in the tree, whatever came since.
    nodes = {node["id"]: node for node in (await agent.tree(session))["nodes"]}
    compaction = nodes[seen["leafId"]]
    assert compaction["type"] == "compaction" and compaction["tokensAfter"] == seen["usage"]["tokens"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"workspace": ""}, "workspace"),
        ({"workspace": 7}, "workspace"),
        ({"allWorkspaces": "yes"}, "allWorkspaces"),
        ({"workspace": "/somewhere", "allWorkspaces": True}, "allWorkspaces"),
        ({"workspaces": ["/somewhere"]}, "workspaces"),
    ],
)
async def test_bad_params_name_the_field(shared_clients, tmp_path, params, field):
    client = await shared_clients(tmp_path / "project")
    for method in ("contextd/workspace/watch", "contextd/workspace/unwatch"):
        with pytest.raises(ContextdError) as refused:
            await client.request(method, params)
        assert refused.value.code == INVALID_PARAMS
        assert [error["field"] for error in refused.value.data["errors"]] == [field]
    session = (await client.session_open())["sessionId"]
    activity = client.activity()
    await client.append(session, [user("nothing was watched")])
    await client.watch_workspace()  # the daemon kept running, and the refusals watched nothing
    await client.append(session, [user("watched")])
    seen = await next_activity(activity)
    assert seen["usage"]["tokens"] == (await client.state(session))["usage"]["tokens"]
    assert activity.drain() == []
