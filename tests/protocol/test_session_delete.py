"""contextd/session/delete and `contextd sessions rm` beside a running shared daemon: the
daemon closes the session for its clients, tells them, and removes the file and its index
row; a session another daemon holds is refused and kept."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from contextd_client import ContextdClient
from contextd_client.rpc import ContextdError

from tests.factories import coding_turn, user
from tests.shared_daemon import contextd

SESSION_NOT_FOUND, SESSION_LOCKED, INVALID_PARAMS, REQUEST_CANCELLED = -32001, -32003, -32602, -32800
WAIT_SECONDS = 60


def index_rows(data_dir: Path) -> set[str]:
    """The session ids the listing index files of `data_dir` hold a row for."""
    rows: set[str] = set()
    for index in data_dir.glob("workspaces/*/index.json"):
        rows |= set(json.loads(index.read_text())["sessions"])
    return rows


async def test_deleting_an_open_session_tells_its_clients_and_removes_it(shared_clients, tmp_path):
    project = tmp_path / "project"
    editor = await shared_clients(project)
    agent = await shared_clients(project)
    watcher = await shared_clients(project)
    opened = await agent.session_open(name="doomed")
    session = opened["sessionId"]
    appended = await agent.append(session, [message for index in range(3) for message in coding_turn(index)])
    await editor.session_open(session_id=session)
    await agent.idle_configure(session_id=session, enabled=True, timeout_seconds=3600, threshold_tokens=1)
    kept = (await agent.session_open(name="kept"))["sessionId"]
    await agent.close_session(kept)  # on disk only, so the index holds its row
    await agent.session_list()
    activity = watcher.activity()
    await watcher.watch_workspace()
    changes = editor.notifications("contextd/sessionChanged", "contextd/idleTimer")

    deleted = await watcher.delete_session(session)  # a client that never opened it
    assert deleted == {"deleted": True, "sessionId": session, "path": opened["path"]}
    assert not Path(opened["path"]).exists()

    idle = await changes.get(WAIT_SECONDS)  # its armed timer went with it
    assert (idle.method, idle.params["sessionId"], idle.params["state"]) == ("contextd/idleTimer", session, "cancelled")
    told = await changes.get(WAIT_SECONDS)
    assert told.params == {"sessionId": session, "leafId": None, "cause": "deleted"}
    seen = (await activity.get(WAIT_SECONDS)).params
    assert (seen["sessionId"], seen["cause"], seen["leafId"], seen["name"]) == (session, "deleted", None, "doomed")
    assert seen["usage"] == appended["usage"]

    for client in (editor, agent):
        with pytest.raises(ContextdError) as gone:
            await client.append(session, [user("still there?")])
        assert gone.value.code == SESSION_NOT_FOUND
    listed = [row["sessionId"] for row in (await agent.session_list())["sessions"]]
    assert session not in listed and kept in listed
    status = await agent.daemon_status()
    assert session not in [row["sessionId"] for row in status["sessions"]]
    assert all(session not in connection["sessions"] for connection in status["connections"])

    assert kept in index_rows(tmp_path / "data")
    await agent.delete_session(kept)
    assert kept not in index_rows(tmp_path / "data")
    assert changes.drain() == []  # the editor never had `kept` open
    assert (await activity.get(WAIT_SECONDS)).params["sessionId"] == kept


async def test_bad_or_unknown_ids_are_refused(shared_clients, tmp_path):
    client = await shared_clients(tmp_path / "project")
    for params, field in (({"sessionId": ""}, "sessionId"), ({"sessionId": "../../etc"}, "sessionId"), ({}, "sessionId")):
        with pytest.raises(ContextdError) as refused:
            await client.request("contextd/session/delete", params)
        assert refused.value.code == INVALID_PARAMS
        assert [error["field"] for error in refused.value.data["errors"]] == [field]
    with pytest.raises(ContextdError) as unknown:
        await client.delete_session("no-such-session")
    assert unknown.value.code == SESSION_NOT_FOUND
    assert (await client.session_open())["sessionId"]  # the daemon kept running


async def test_sessions_rm_goes_through_the_running_shared_daemon(shared_clients, tmp_path, shared_env):
    data_dir = tmp_path / "data"
    editor = await shared_clients(tmp_path / "project")
    opened = await editor.session_open(name="open in the editor")
    session = opened["sessionId"]
    await editor.append(session, [user("hello")])
    other = (await editor.session_open(name="second"))["sessionId"]
    changes = editor.notifications("contextd/sessionChanged")

    removed = contextd(shared_env, data_dir, "sessions", "rm", session[:14])
    assert removed.returncode == 0, removed.stderr
    assert f"Deleted session {session}" in removed.stdout
    assert (await changes.get(WAIT_SECONDS)).params == {"sessionId": session, "leafId": None, "cause": "deleted"}
    assert not Path(opened["path"]).exists()

    as_json = contextd(shared_env, data_dir, "sessions", "rm", other, "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["removed"][0]["sessionId"] == other
    assert [row["sessionId"] for row in (await editor.session_list())["sessions"]] == []


async def test_a_session_another_daemon_holds_is_refused_and_kept(shared_clients, tmp_path, shared_env):
    data_dir = tmp_path / "data"
    shared = await shared_clients(tmp_path / "project")
    async with await ContextdClient.spawn(data_dir=data_dir, workspace=tmp_path, shared=False) as own:
        opened = await own.session_open(name="held elsewhere")
        session = opened["sessionId"]
        with pytest.raises(ContextdError) as locked:
            await shared.delete_session(session)
        assert locked.value.code == SESSION_LOCKED
        assert locked.value.data["pid"] == own.daemon.pid

        refused = contextd(shared_env, data_dir, "sessions", "rm", session, "--json")
        assert refused.returncode == 1
        error = json.loads(refused.stderr)["error"]
        assert (error["kind"], error["sessionId"], error["pid"]) == ("locked", session, own.daemon.pid)
        assert Path(opened["path"]).is_file()
        assert (await own.append(session, [user("still mine")]))["entryIds"]


async def test_deleting_a_session_mid_compaction_aborts_it_and_nothing_comes_back(tmp_path):
    from tests.summarizers.fake_provider import FakeProvider, Reply

    provider = FakeProvider(default=Reply.hang(30)).start()
    settings = {
        "summarizer": {"provider": "remote", "remoteEndpoint": provider.remote_url, "maxRetries": 0},
        "compaction": {"reserveTokens": 2_000, "keepRecentTokens": 3_000},
    }
    try:
        async with await ContextdClient.spawn(data_dir=tmp_path / "data", settings=settings, shared=False) as client:
            opened = await client.session_open(name="compacting")
            session = opened["sessionId"]
            await client.append(session, [message for index in range(6) for message in coding_turn(index)])
            finished = client.notifications("contextd/compactionFinished")
            compacting = asyncio.ensure_future(client.compact(session))
            await provider.wait_for_requests(1)

            await client.delete_session(session)
            with pytest.raises(ContextdError) as stopped:
                await compacting
            assert stopped.value.code == REQUEST_CANCELLED
            outcome = (await finished.get(WAIT_SECONDS)).params
            assert (outcome["sessionId"], outcome["outcome"]) == (session, "aborted")
            assert not Path(opened["path"]).exists()  # the job ended without writing it again
            assert (await client.session_list())["sessions"] == []
    finally:
        provider.stop()
