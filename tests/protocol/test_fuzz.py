"""The seeded protocol fuzz: 10,000 frames across every method against one daemon, over its
own stdio and over the shared daemon's socket, `$/cancelRequest` (of requests in flight and
with ids of every shape, alone and in batches) and settings (valid, broken, nested far too
deep) in the mix.

Every request with a usable id gets exactly one reply, nothing a client sends is answered
-32603, notifications get none, and the session the fuzz aims its broken requests at is
byte-identical afterwards (valid requests go to a scratch session)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tests.factories import coding_turn
from tests.protocol.wire import TRANSPORTS, WireDaemon, open_wire

FRAMES = 10_000
BURST = 250
METHODS = [
    "contextd/session/open", "contextd/session/list", "contextd/session/append",
    "contextd/session/context", "contextd/session/state", "contextd/session/setModel",
    "contextd/session/close", "contextd/compact", "contextd/compact/abort", "contextd/tree",
    "contextd/label", "contextd/navigate", "contextd/fork", "contextd/handoff",
    "contextd/idle/configure", "contextd/daemon/status",
]
UNSERVED = ["textDocument/hover", "workspace/symbol", "$/unknown", "contextd/nope", ""]
JUNK: list[Any] = [None, True, 0, -1, 2**63, 3.5, "", "é✓\u0000", [], {}, [1, [2]], {"a": {"b": None}}]


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


SETTINGS: list[Any] = [
    None, {}, 7, "text", [], {"idle": {"enabled": False}}, {"compaction": {"thresholdPercent": 0.9}},
    {"compaction": {"thresholdPercent": "lots"}}, {"unknownKey": nested(900)}, {"idle": nested(70)},
    {"defaultModel": ["x"]}, {"noSuchGroup": {"a": 1}},
]
"""What a client may send as settings: none of it may change the kept session or fail a request."""


def broken_params(rng: random.Random, kept: str) -> Any:
    """Params for the kept session that no method can accept: an unknown field is always
    refused (extra=forbid), or a required field has the wrong type."""
    choice = rng.randrange(4)
    if choice == 0:
        return {"sessionId": kept, "noSuchField": rng.choice(JUNK)}
    if choice == 1:
        return {"sessionId": kept, "messages": [{"role": "user", "content": rng.choice([5, None, {}])}]}
    if choice == 2:
        return {"sessionId": rng.choice([5, [kept], {"id": kept}, None])}
    return rng.choice([7, "text", True, [kept]])


def valid_params(rng: random.Random, method: str, scratch: str, leaf: str) -> Any:
    if method == "contextd/session/append":
        return {"sessionId": scratch, "messages": [{"role": "user", "content": f"msg {rng.random()}",}]}
    if method == "contextd/label":
        return {"sessionId": scratch, "entryId": leaf, "label": rng.choice(["a", None])}
    if method == "contextd/navigate":
        return {"sessionId": scratch, "targetId": rng.choice([leaf, "nope"])}
    if method == "contextd/session/setModel":
        return {"sessionId": scratch, "model": rng.choice(["gpt-4o", "claude-sonnet-4-5"])}
    if method == "contextd/idle/configure":
        return {"sessionId": scratch, "enabled": False}
    if method in ("contextd/session/open", "contextd/session/list", "contextd/daemon/status"):
        return rng.choice([None, {}])
    if method == "contextd/fork":
        return {"sessionId": scratch, "entryId": leaf}
    if method == "contextd/session/close":
        return {"sessionId": "nope"}
    return {"sessionId": scratch}


class Fuzz:
    def __init__(self, rng: random.Random, kept: str, scratch: str, leaf: str) -> None:
        self.rng = rng
        self.kept, self.scratch, self.leaf = kept, scratch, leaf
        self.ids: list[Any] = []
        self.null_replies = 0
        self.batches = 0
        self.counter = 0

    def next_id(self) -> Any:
        self.counter += 1
        return self.rng.choice([self.counter, f"s{self.counter}", -self.counter])

    def message(self) -> tuple[dict[str, Any] | list[Any] | bytes, str]:
        """One message and what it must get: 'id', 'null' or 'none'."""
        rng = self.rng
        kind = rng.randrange(100)
        method = rng.choice(METHODS)
        if kind < 30:
            return self.request(method, valid_params(rng, method, self.scratch, self.leaf)), "id"
        if kind < 55:
            return self.request(method, broken_params(rng, self.kept)), "id"
        if kind < 60:
            request = self.request(method, None)
            request.pop("params")
            return request, "id"
        if kind < 65:
            return self.request(rng.choice(UNSERVED), {}), "id"
        if kind < 70:
            bad_id = rng.choice([{"x": 1}, [1], True, 2.5])
            params = {"sessionId": self.kept, "messages": coding_turn(rng.randrange(5))}
            return {"jsonrpc": "2.0", "id": bad_id, "method": "contextd/session/append", "params": params}, "null"
        if kind < 75:
            request = self.request("contextd/session/append", {"sessionId": self.kept, "messages": coding_turn(1)})
            if rng.random() < 0.5:
                request["jsonrpc"] = rng.choice(["1.0", None, 2])
            else:
                request["method"] = rng.choice([5, None, ["x"]])
            return request, "id"
        if kind < 80:
            return {"jsonrpc": "2.0", "method": rng.choice(METHODS + UNSERVED), "params": rng.choice(JUNK)}, "none"
        if kind < 85:
            return rng.choice([b"{", b"[1,", b'{"jsonrpc": "2.0", "id": }', b"\xff\xfe", b"NaN"]), "null"
        if kind < 88:
            return rng.choice([7, "x", None]), "null"  # not an object
        if kind < 92:
            return self.cancel(), "none"
        if kind < 95:
            settings = {"settings": {"contextd": rng.choice(SETTINGS)}}
            return {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": settings}, "none"
        members: list[Any] = [self.request(rng.choice(METHODS), broken_params(rng, self.kept)) for _ in range(rng.randrange(1, 4))]
        if rng.random() < 0.5:
            members.insert(rng.randrange(len(members) + 1), self.cancel())
        self.batches += 1
        return members, "batch"

    def cancel(self) -> dict[str, Any]:
        """A `$/cancelRequest` of a request sent earlier (maybe still running), or with an id
        no request can have."""
        target = self.rng.choice([*self.ids[-5:], {"x": 1}, [1], None, True, 2.5, "never sent"])
        return {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": target}}

    def request(self, method: Any, params: Any) -> dict[str, Any]:
        request_id = self.next_id()
        self.ids.append(request_id)
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_ten_thousand_frames_each_request_answered_once(transport: str, tmp_path: Path):
    async with open_wire(transport, tmp_path / "data") as wire:
        await fuzz_daemon(wire)
        assert await wire.stop() == 0


async def fuzz_daemon(wire: WireDaemon) -> None:
    kept = await wire.result("contextd/session/open", {"name": "kept"})
    await wire.result("contextd/session/append", {"sessionId": kept["sessionId"], "messages": coding_turn(0)})
    before = Path(kept["path"]).read_bytes()
    scratch = await wire.result("contextd/session/open", {"name": "scratch"})
    leaf = (await wire.result("contextd/session/append", {"sessionId": scratch["sessionId"], "messages": coding_turn(0)}))["leafId"]
    wire.replies.clear()

    fuzz = Fuzz(random.Random(20261123), kept["sessionId"], scratch["sessionId"], leaf)
    for _ in range(FRAMES // BURST):
        for _ in range(BURST):
            message, expected = fuzz.message()
            wire.send(message)
            if expected == "null":
                fuzz.null_replies += 1
        await wire.drain()
        await wire.wait_until(lambda: replies_seen(wire) >= len(fuzz.ids) + fuzz.null_replies, timeout=60)

    singles = [r for r in wire.replies if isinstance(r, dict)]
    in_batches = [r for batch in wire.replies if isinstance(batch, list) for r in batch]
    answered = [r["id"] for r in singles + in_batches if r["id"] is not None]
    assert sorted(map(str, answered)) == sorted(map(str, fuzz.ids)), "every id answered exactly once"
    assert sum(1 for r in singles if r["id"] is None) == fuzz.null_replies
    assert sum(1 for r in wire.replies if isinstance(r, list)) == fuzz.batches
    codes = [r["error"]["code"] for r in singles + in_batches if "error" in r]
    assert -32603 not in codes
    assert Path(kept["path"]).read_bytes() == before


def replies_seen(wire: WireDaemon) -> int:
    return sum(len(r) if isinstance(r, list) else 1 for r in wire.replies)
