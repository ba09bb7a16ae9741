"""Garbage at every method: each request gets one clear answer, the daemon keeps serving,
and nothing already stored changes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException

from tests.factories import coding_turn

METHODS = [
    "contextd/session/open", "contextd/session/list", "contextd/session/append",
    "contextd/session/context", "contextd/session/state", "contextd/session/setModel",
    "contextd/compact", "contextd/compact/abort", "contextd/tree", "contextd/label",
    "contextd/navigate", "contextd/fork", "contextd/handoff", "contextd/idle/configure",
]
CLIENT_ERRORS = {-32602, -32001, -32003, -32004, -32005, -32006, -32007, -32800}
FIELDS = [
    "sessionId", "messages", "format", "model", "instructions", "dryRun", "entryId", "label",
    "targetId", "summarize", "goal", "enabled", "timeoutSeconds", "thresholdTokens",
    "thresholdPercent", "workspace", "name", "role", "content", "toolCallId", "usage",
]


def junk(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(10 if depth < 3 else 7)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.choice([0, -1, 2**63, 3.5, float("1e308")])
    if choice == 3:
        return rng.choice(["", "../../etc/passwd", "x" * 300, "\u0000", "é✓", "neutral", "user"])
    if choice == 4:
        return rng.choice(["assistant", "toolResult", "anthropic", "gpt-4o", "a" * 5000])
    if choice == 5:
        return rng.choice(FIELDS)
    if choice == 6:
        return []
    if choice == 7:
        return [junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(FIELDS): junk(rng, depth + 1) for _ in range(rng.randrange(5))}


def params_for(rng: random.Random, session: str, entry: str) -> Any:
    """Mostly near-valid objects with one thing wrong, sometimes pure junk."""
    if rng.random() < 0.2:
        return junk(rng)
    params = {"sessionId": rng.choice([session, session, "nope", 7, None])}
    for _ in range(rng.randrange(4)):
        field = rng.choice(FIELDS)
        params[field] = rng.choice([junk(rng), entry, session, {"role": "user", "content": junk(rng)}])
    if rng.random() < 0.3:
        params["messages"] = [
            {"role": rng.choice(["user", "assistant", "toolResult", "x"]), "content": junk(rng)}
            for _ in range(rng.randrange(3))
        ]
    return params


async def test_garbage_params_get_clear_errors_and_change_nothing(daemon):
    opened = await daemon.open_session(name="keep me")
    session = opened["sessionId"]
    first = await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(0)})
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(1)})
    before = await daemon.request("contextd/session/context", {"sessionId": session})
    path = Path(opened["path"])

    rng = random.Random(20261121)
    outcomes: dict[str, int] = {}
    for _ in range(400):
        method = rng.choice(METHODS)
        params = params_for(rng, session, first["leafId"])
        try:
            result = await daemon.request(method, params)
            outcomes["ok"] = outcomes.get("ok", 0) + 1
            json.dumps(result)
        except JsonRpcException as error:
            assert error.code in CLIENT_ERRORS, (method, params, error.code, error.message)
            if error.code == -32602:
                assert error.data["errors"] and all(e["field"] for e in error.data["errors"])
            outcomes[str(error.code)] = outcomes.get(str(error.code), 0) + 1
        # Whatever happened, the daemon still answers.
        await daemon.request("contextd/session/state", {"sessionId": session})
    assert outcomes.get("-32602", 0) > 100  # the fuzz mostly hit validation, as intended

    # Whatever the junk did through valid requests (labels, moves, appends), the session
    # file loads, and the original messages are all still in it.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    stored = [line["message"] for line in lines if line.get("type") == "message"]
    for message in before["messages"]:
        assert message in stored
