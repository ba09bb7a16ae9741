"""The values a peer's frames hold, as both ends of the connection read them: a JSON `null`
is a message to refuse (-32600), never the end of the stream."""

from __future__ import annotations

import asyncio

from contextd.rpc.framing import FrameReader, encode_frame
from contextd.rpc.messages import Invalid, read_values


async def values_of(data: bytes) -> list[object]:
    stream = asyncio.StreamReader()
    stream.feed_data(data)
    stream.feed_eof()
    return [value async for value in read_values(FrameReader(stream))]


def test_a_null_frame_is_a_value_and_the_frames_after_it_are_read() -> None:
    request = b'{"jsonrpc":"2.0","id":1,"method":"contextd/session/list"}'
    values = asyncio.run(values_of(encode_frame(b"null") + encode_frame(b"{") + encode_frame(request)))
    assert values[0] is None
    assert isinstance(values[1], Invalid)
    assert values[2] == {"jsonrpc": "2.0", "id": 1, "method": "contextd/session/list"}
