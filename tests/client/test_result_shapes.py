"""The real daemon answers each request of `contextd.results.RESULTS`, and sends each
notification of `NOTIFICATION_BODIES`, with exactly the fields its model has (no more, none
missing, each of its type): the models protocol.md's examples are checked against are the
daemon's own messages. (A request's notifications go out before its answer, on one stream.)"""

from __future__ import annotations

from typing import Any

from contextd.results import NOTIFICATION_BODIES, RESULTS, Result
from contextd_client import ContextdClient
from pydantic import ValidationError

from tests.client.helpers import long_conversation, tool_turn, user


async def test_every_modelled_result_is_what_the_daemon_answers(client: ContextdClient) -> None:
    answers: dict[str, list[Any]] = {}
    heard: list[tuple[str, dict[str, Any]]] = []
    client.on(None, lambda method, params: heard.append((method, params)))

    async def ask(method: str, params: dict[str, Any]) -> Any:
        answer = await client.request(method, params)
        answers.setdefault(method, []).append(answer)
        return answer

    await ask("contextd/workspace/watch", {"allWorkspaces": True})
    opened = await ask("contextd/session/open", {"name": "shapes"})
    session = opened["sessionId"]
    await ask("contextd/idle/configure", {"sessionId": session, "enabled": True, "thresholdTokens": 1})
    appended = await ask("contextd/session/append", {
        "sessionId": session, "messages": [user("Read the parser."), *tool_turn("c1", "read", {"path": "p.py"}, "x = 1")],
    })
    await ask("contextd/session/setInstructions", {"sessionId": session, "text": "Run make check.", "source": "AGENTS.md"})
    await ask("contextd/session/setModel", {"sessionId": session, "model": "gpt-4.1"})
    await ask("contextd/label", {"sessionId": session, "entryId": appended["entryIds"][0], "label": "start"})
    await ask("contextd/session/context", {"sessionId": session, "format": "anthropic"})
    await ask("contextd/navigate", {"sessionId": session, "targetId": appended["entryIds"][0]})
    forked = await ask("contextd/fork", {"sessionId": session, "entryId": appended["entryIds"][0]})
    handed = await ask("contextd/handoff", {"sessionId": session, "goal": "Finish the parser"})
    await client.append(session, long_conversation(6))
    await ask("contextd/compact", {"sessionId": session, "dryRun": True})
    compaction = (await ask("contextd/compact", {"sessionId": session}))["entryId"]
    found = await ask("contextd/history/search", {"sessionId": session, "query": "module"})
    got = await ask("contextd/history/get", {"sessionId": session, "around": appended["entryIds"][1], "maxTokens": 50})
    sources = await ask("contextd/history/sources", {"sessionId": session, "entryId": compaction})
    assert found["hits"] and got["entries"] and sources["items"]  # every row shape answered
    await ask("contextd/history/summarize", {"sessionId": session})
    tree = await ask("contextd/tree", {"sessionId": session})
    assert {"message", "compaction"} <= {node["type"] for node in tree["nodes"]}
    await ask("contextd/idle/configure", {"enabled": False, "timeoutSeconds": 60})  # the daemon-wide answer
    await ask("contextd/session/state", {"sessionId": session})
    await ask("contextd/session/stats", {"sessionId": session})
    listed = await ask("contextd/session/list", {})
    await ask("contextd/compact/abort", {"sessionId": session})
    await ask("contextd/workspace/unwatch", {})
    await ask("contextd/settings", {})
    await ask("contextd/daemon/status", {})
    await ask("contextd/follow", {"enabled": False})
    await ask("contextd/follow/environment", {"agent": "codex", "transcriptPath": "/r.jsonl", "environment": {"CODEX_HOME": "/c"}})
    await ask("contextd/session/close", {"sessionId": handed["sessionId"]})
    await ask("contextd/session/delete", {"sessionId": forked["sessionId"]})


    assert {method for method, _ in heard} >= set(NOTIFICATION_BODIES)
    for method, body in heard:
        if method in NOTIFICATION_BODIES:
            NOTIFICATION_BODIES[method].model_validate(body)
    assert any("parentSession" in row for row in listed["sessions"])  # the fork's and the handoff's
    assert sorted(answers) == sorted(RESULTS)
    for method, given in answers.items():
        assert {shape_of(RESULTS[method], answer) for answer in given} == set(RESULTS[method]), method


def shape_of(shapes: tuple[type[Result], ...], answer: Any) -> type[Result]:
    """The one of `shapes` the answer is; fails naming the fields at fault in each."""
    errors = []
    for shape in shapes:
        try:
            shape.model_validate(answer)
        except ValidationError as error:
            errors.append(str(error))
        else:
            return shape
    raise AssertionError("\n".join(errors))
