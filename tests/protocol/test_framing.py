"""Case 6 and the framing-attack run: whatever the bytes, the daemon answers what it can,
finds the next frame and keeps serving."""

from __future__ import annotations

import json
import random

from tests.protocol.wire import WireDaemon


def request(request_id: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "contextd/session/list", "params": {}}).encode()


async def test_6_an_enormous_content_length_is_refused_and_the_stream_resynchronized(tmp_path):
    wire = await WireDaemon.start(tmp_path / "data")
    wire.send_bytes(b"Content-Length: 1000000000000\r\n\r\n" + request("lost"))
    wire.send(request("after"))
    await wire.drain()
    reply = await wire.reply_to("after")
    assert "sessions" in reply["result"]
    refused = wire.replies_to(None)
    assert refused and "larger than the maximum" in refused[0]["error"]["message"]
    assert await wire.stop() == 0


async def test_6_the_maximum_frame_size_is_a_setting(tmp_path):
    wire = await WireDaemon.start(tmp_path / "data", "--max-frame-bytes", "2000")
    big = {"jsonrpc": "2.0", "id": "big", "method": "contextd/session/open", "params": {"name": "x" * 3000}}
    wire.send(big)
    wire.send(request("small"))
    await wire.drain()
    assert "sessions" in (await wire.reply_to("small"))["result"]
    assert wire.replies_to("big") == []
    assert "larger than the maximum of 2000" in wire.replies_to(None)[0]["error"]["message"]
    await wire.stop()


async def test_6_header_names_in_any_case_and_with_extra_spaces(tmp_path):
    wire = await WireDaemon.start(tmp_path / "data")
    for number, header in enumerate([
        b"content-length: %d\r\n\r\n",
        b"CONTENT-LENGTH:%d\r\n\r\n",
        b"  Content-Length  :   %d   \r\n\r\n",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: %d\r\n\r\n",
        b"Content-Length: %d\n\n",
    ]):
        body = request(f"h{number}")
        wire.send_bytes(header % len(body) + body)
        await wire.drain()
        assert "sessions" in (await wire.reply_to(f"h{number}"))["result"]
    await wire.stop()


ATTACKS = [
    b"Content-Length: -5\r\n\r\n",
    b"Content-Length: lots\r\n\r\n{}",
    b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n",
    b"no colon here\r\n\r\n",
    b"X-Other: 1\r\n\r\n{}",
    b"\x00\xff\xfe garbage without any header end " * 400,
    b"Content-Length: 3\r\n\r\n{\"jsonrpc\": \"2.0\"}",  # too short: the rest is junk
    b"Content-Length: 12\r\n\r\n\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4",  # not UTF-8
    b"Content-Length: 4\r\n\r\nNaN!",
    b"Content-Length: 8\r\n\r\n[1,2,3]]",
]


async def test_framing_attacks_leave_the_daemon_serving(tmp_path):
    """A seeded run of broken frames, each followed by a good request that must be answered."""
    wire = await WireDaemon.start(tmp_path / "data")
    rng = random.Random(13)
    for round_number in range(120):
        attack = rng.choice(ATTACKS)
        if rng.random() < 0.3:  # cut at a random point: half a header is an attack too
            attack = attack[: rng.randrange(1, len(attack) + 1)]
        if rng.random() < 0.2:  # a Content-Length that is too long swallows what follows
            body = request(f"swallowed{round_number}")
            attack = b"Content-Length: %d\r\n\r\n" % (len(body) + 40) + body
        wire.send_bytes(attack)
        wire.send(request(f"good{round_number}"))
        await wire.drain()
        reply = await wire.reply_to(f"good{round_number}")
        assert "sessions" in reply["result"], (attack[:80], reply)
    assert wire.process.returncode is None
    assert await wire.stop() == 0
