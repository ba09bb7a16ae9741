"""What the real daemon sends validates against the JSON Schema the editors' and the client's
types are generated from (`contextd.results.json_schema()`): every kind of compactionStarted,
compactionFinished and idleTimer a session sends (each reason, each outcome, each state), the
hooks' params, an agent's own compaction mirrored by the follower, and contextd/follow's
result. The schema is stricter than the models on one point the generated types rely on: a
field sent or left out, never sent as null, where its type says so."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from contextd.results import json_schema
from contextd_client import ContextdClient
from contextd_client.rpc import ContextdError
from jsonschema import Draft202012Validator

from tests.client.helpers import long_conversation, user
from tests.factories import assistant
from tests.follow.support import TRANSCRIPTS, WAIT, append_lines, corpus_lines, mirror_id, spawn

SCHEMA = json_schema()
LARGER = "claude-sonnet-4-5-1m"
SETTINGS = {
    "defaultModel": "claude-sonnet-4-5",
    "models": {LARGER: {"contextWindow": 1_000_000}},
    "compaction": {"keepRecentTokens": 2000, "promotion": [{"from": "claude-4", "to": LARGER}]},
}
"""A short kept tail (something to compact) and a larger model an overflow moves to."""


def violations(shape: dict[str, Any], message: Any) -> list[str]:
    validator = Draft202012Validator({**shape, "$defs": SCHEMA["$defs"]})
    return [f"{'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message}" for error in validator.iter_errors(message)]


def notification_violations(method: str, params: Any) -> list[str]:
    return violations(SCHEMA["properties"]["notifications"]["properties"][method], params)


class Heard:
    """Every notification a client hears, and the params of every hook request it answers."""

    def __init__(self) -> None:
        self.notifications: list[tuple[str, dict[str, Any]]] = []
        self.hooks: list[tuple[str, dict[str, Any]]] = []
        self.arrived = asyncio.Event()

    def notification(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))
        self.arrived.set()

    def of(self, method: str, **match: Any) -> list[dict[str, Any]]:
        return [p for m, p in self.notifications if m == method and all(p.get(k) == v for k, v in match.items())]

    async def wait_for(self, method: str, **match: Any) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            while not (found := self.of(method, **match)):
                self.arrived.clear()
                await self.arrived.wait()
        return found[0]

    def violations(self) -> list[str]:
        found = [f"{method} {problem}" for method, params in self.notifications for problem in notification_violations(method, params)]
        for hook, params in self.hooks:
            shape = SCHEMA["properties"]["clientRequests"]["properties"][hook]["properties"]["params"]
            found += [f"{hook} {problem}" for problem in violations(shape, params)]
        return found


async def test_every_kind_of_job_and_idle_event_and_the_hooks_params_match_the_schema(tmp_path: Path) -> None:
    heard = Heard()

    async def before_compact(params: dict[str, Any]) -> dict[str, Any] | None:
        heard.hooks.append(("contextd/beforeCompact", params))
        return {"cancel": True} if params["reason"] == "manual" and len(heard.hooks) == 1 else None

    async def before_navigate(params: dict[str, Any]) -> None:
        heard.hooks.append(("contextd/beforeNavigate", params))

    async with await ContextdClient.spawn(
        data_dir=tmp_path / "data", workspace=tmp_path, settings=SETTINGS, shared=False,
        before_compact=before_compact, before_navigate=before_navigate,
    ) as client:
        client.on(None, heard.notification)
        small = (await client.session_open(name="small"))["sessionId"]
        await client.append(small, [user("Hello.")])
        await client.idle_configure(session_id=small, enabled=True, timeout_seconds=0.1, threshold_tokens=1)
        await client.append(small, [user("Still there?")])  # armed; nothing to fold away when it fires
        await heard.wait_for("contextd/idleTimer", sessionId=small, state="cancelled")

        session = (await client.session_open(name="busy"))["sessionId"]
        appended = await client.append(session, long_conversation(8))
        first_answer = appended["entryIds"][3]
        await client.idle_configure(session_id=session, enabled=True, timeout_seconds=60, threshold_tokens=1)
        await client.append(session, [user("One more thing.")])  # armed
        with pytest.raises(ContextdError, match="cancelled the compaction"):
            await client.compact(session, instructions="Keep the module names.")  # the hook says no
        await client.compact(session)
        await client.idle_configure(session_id=session, enabled=True, timeout_seconds=0.1, threshold_tokens=1)
        await client.append(session, long_conversation(4))
        await heard.wait_for("contextd/compactionFinished", sessionId=session, reason="idle")
        await client.idle_configure(session_id=session, enabled=False)  # no idle job in the way of the next
        await client.navigate(session, first_answer, summarize=True, instructions="Say what was tried.")
        await client.append(session, [user("Try again."), assistant(
            "partial", stop="error", errorKind="context_overflow", errorMessage="prompt is too long",
        )])
        await heard.wait_for("contextd/compactionFinished", sessionId=session, outcome="promoted")
        await client.handoff(session, goal="Finish the parser")

    assert heard.violations() == []
    finished = heard.of("contextd/compactionFinished")
    assert {f["reason"] for f in finished} >= {"manual", "idle", "branch", "overflow", "handoff"}
    assert {f["outcome"] for f in finished} >= {"compacted", "cancelled", "promoted"}
    assert {s["compactionId"] for s in heard.of("contextd/compactionStarted")} == {f["compactionId"] for f in finished}
    idle_states = {(t["state"], "reason" in t, "dueAt" in t) for t in heard.of("contextd/idleTimer")}
    assert idle_states >= {("armed", False, True), ("fired", False, False), ("cancelled", True, False), ("cancelled", False, False)}
    assert {hook for hook, _ in heard.hooks} == {"contextd/beforeCompact", "contextd/beforeNavigate"}


async def test_an_agents_compaction_and_the_follow_result_match_the_schema(tmp_path: Path) -> None:
    name, relative = TRANSCRIPTS["codex"]
    lines = corpus_lines(name)
    compacted_at = next(n for n, line in enumerate(lines) if b'"type":"compacted"' in line)
    path = tmp_path / "home" / relative
    path.parent.mkdir(parents=True)
    append_lines(path, lines[:compacted_at])
    heard = Heard()
    async with await spawn(tmp_path / "home", tmp_path / "data") as client:
        client.on(None, heard.notification)
        session = await mirror_id(client, path)  # the first scan has mirrored it: `mirrors` counts it
        following = await client.request("contextd/follow", {})
        assert violations(SCHEMA["properties"]["results"]["properties"]["contextd/follow"], following) == []
        assert following["enabled"] is True and following["mirrors"] >= 1
        await client.session_open(session_id=session)  # its notifications come to this client from now on
        append_lines(path, lines[compacted_at:])
        finished = await heard.wait_for("contextd/compactionFinished", sessionId=session, reason="agent")
    assert finished["outcome"] == "compacted" and "entryId" in finished
    assert heard.of("contextd/compactionStarted", compactionId=finished["compactionId"])
    assert heard.violations() == []


def test_the_schema_check_can_fail() -> None:
    """A null where the schema wants the field left out, a field no model has, a state the
    schema does not know: each is named."""
    body = {"sessionId": "s", "state": "armed", "dueAt": "2026-01-01T00:00:00.000Z"}
    assert notification_violations("contextd/idleTimer", body) == []
    assert notification_violations("contextd/idleTimer", {**body, "reason": None})
    assert notification_violations("contextd/idleTimer", {**body, "extra": 1})
    assert notification_violations("contextd/idleTimer", {**body, "state": "paused"})
