"""Listing, unloading and locks of many sessions, against the real daemon over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from contextd.model import Settings, UserMessage
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store

from tests.factories import assistant, coding_turn, user

FEW_DESCRIPTORS = Path(__file__).parent / "few_descriptors"


async def append(daemon, session: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return await daemon.request("contextd/session/append", {"sessionId": session, "messages": messages})


async def listed(daemon, **params: Any) -> dict[str, dict[str, Any]]:
    rows = (await daemon.request("contextd/session/list", params))["sessions"]
    return {row["sessionId"]: row for row in rows}


async def test_listing_shows_what_another_daemon_wrote_since(make_daemon, tmp_path):
    first = await make_daemon()
    sessions = []
    for number in range(3):
        session = (await first.open_session(name=f"s{number}"))["sessionId"]
        await append(first, session, coding_turn(number))
        await first.request("contextd/session/close", {"sessionId": session})
        sessions.append(session)
    before = await listed(first)
    assert set(before) == set(sessions)
    assert [before[s]["name"] for s in sessions] == ["s0", "s1", "s2"]

    second = await make_daemon()
    await append(second, sessions[1], [user("one more question"), assistant("one more answer")])
    await second.request("contextd/session/close", {"sessionId": sessions[1]})

    after = await listed(first)
    assert after[sessions[1]]["entries"] == before[sessions[1]]["entries"] + 2
    assert after[sessions[1]]["tokens"] > before[sessions[1]]["tokens"]
    assert after[sessions[0]] == before[sessions[0]]
    # the most recently written session comes first
    rows = (await first.request("contextd/session/list", {}))["sessions"]
    assert rows[0]["sessionId"] == sessions[1]


async def test_other_requests_are_answered_while_a_cold_listing_reads_the_files(make_daemon, tmp_path):
    data = tmp_path / "data"
    writer = SessionManager(Store(data), Settings(), SilentEvents())
    for number in range(200):
        session = writer.create("/tmp/contextd-ws")
        session.append_messages([UserMessage(content=f"question {number} " + "word " * 200)])
        writer.close(session.session_id)
    daemon = await make_daemon(data_dir=data)
    probe = (await daemon.open_session())["sessionId"]
    answered: list[str] = []

    async def note(name: str, request: Any) -> Any:
        answer = await request
        answered.append(name)
        return answer

    listing = asyncio.ensure_future(note("list", daemon.request("contextd/session/list", {})))
    await note("state", daemon.request("contextd/session/state", {"sessionId": probe}))
    rows = (await listing)["sessions"]
    assert answered == ["state", "list"]  # the listing did not hold the state request up
    assert len(rows) == 201


async def test_a_corrupt_or_lying_index_is_not_believed(make_daemon, tmp_path):
    daemon = await make_daemon()
    session = (await daemon.open_session(name="real"))["sessionId"]
    await append(daemon, session, coding_turn(0))
    await daemon.request("contextd/session/close", {"sessionId": session})
    truth = await listed(daemon)
    index = next((tmp_path / "data" / "workspaces").glob("*/index.json"))
    assert session in json.loads(index.read_text())["sessions"]

    index.write_text("{not json")
    assert await listed(daemon) == truth
    lying = json.loads(index.read_text())
    lying["sessions"][session]["summary"]["tokens"] = 1
    lying["sessions"][session]["size"] = 1  # a row recorded for a file of another size
    lying["sessions"]["made-up"] = lying["sessions"][session]
    index.write_text(json.dumps(lying))
    assert await listed(daemon) == truth


async def test_a_session_unloaded_from_memory_stays_locked_and_writable(make_daemon):
    first = await make_daemon(settings={"storage": {"maxLoadedSessions": 1}})
    kept = (await first.open_session())["sessionId"]
    await append(first, kept, [user("before unloading")])
    other = (await first.open_session())["sessionId"]  # unloads `kept` from memory
    await append(first, other, [user("another session")])

    second = await make_daemon()
    error = await second.error_of("contextd/session/open", {"sessionId": kept})
    assert error.code == -32003
    assert error.data["pid"] != os.getpid() and error.data["pid"] > 0

    await append(first, kept, [assistant("after reloading")])
    context = await first.request("contextd/session/context", {"sessionId": kept})
    assert [m["role"] for m in context["messages"]] == ["user", "assistant"]

    await first.request("contextd/session/close", {"sessionId": other})
    await first.request("contextd/session/close", {"sessionId": kept})
    assert (await second.open_session(sessionId=kept))["sessionId"] == kept


class GatedSummarizer:
    """A `remote` summarizer on 127.0.0.1 that holds every request until `release()`."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.gate = threading.Event()
        gated = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                gated.arrived.set()
                gated.gate.wait(30)
                body = json.dumps({"summary": "The abandoned branch tried approach A."}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/summarize"

    def release(self) -> None:
        self.gate.set()

    def stop(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gated_summarizer():
    summarizer = GatedSummarizer()
    yield summarizer
    summarizer.stop()


async def test_a_navigation_waiting_for_its_summary_is_not_unloaded(make_daemon, gated_summarizer):
    daemon = await make_daemon(settings={
        "storage": {"maxLoadedSessions": 1},
        "summarizer": {"provider": "remote", "remoteEndpoint": gated_summarizer.url, "maxRetries": 0},
    })
    session = (await daemon.open_session())["sessionId"]
    base = await append(daemon, session, [user("make the tests pass"), assistant("looking")])
    await append(daemon, session, [user("try approach A"), assistant("approach A failed")])
    moving = asyncio.ensure_future(daemon.request(
        "contextd/navigate", {"sessionId": session, "targetId": base["leafId"], "summarize": True}
    ))
    assert await asyncio.to_thread(gated_summarizer.arrived.wait, 30)
    for _ in range(2):  # each new session would unload the least recently used one
        other = (await daemon.open_session())["sessionId"]
        await append(daemon, other, [user("meanwhile")])
    gated_summarizer.release()
    moved = await moving
    assert "branchSummaryId" in moved
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    assert "approach A" in json.dumps(context["messages"][-1])


async def test_descriptors_stay_bounded_with_many_armed_idle_timers(make_daemon, tmp_path):
    limit = 64
    daemon = await make_daemon(
        settings={"idle": {"enabled": True, "timeoutSeconds": 3600, "thresholdTokens": 1}},
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(FEW_DESCRIPTORS), os.environ.get("PYTHONPATH")])),
            "CONTEXTD_TEST_NOFILE": str(limit),
        },
    )
    sessions = []
    for number in range(3 * limit):
        session = (await daemon.open_session())["sessionId"]
        await append(daemon, session, [user(f"question {number}"), assistant(f"answer {number}")])
        sessions.append(session)
    armed = {body["sessionId"] for body in daemon.received("contextd/idleTimer", state="armed")}
    assert armed == set(sessions)
    rows = await listed(daemon)
    assert set(rows) == set(sessions)
    assert all(rows[s]["entries"] == 3 for s in sessions)  # model_change + the two messages
    for session in sessions[:5]:
        state = await daemon.request("contextd/session/state", {"sessionId": session})
        assert state["entries"] == 3
