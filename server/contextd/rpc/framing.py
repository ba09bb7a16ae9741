"""The LSP base protocol's framing: `Content-Length` headers, then that many bytes of JSON.

contextd reads frames itself instead of through pygls so that no input can stall or kill
the daemon: header names are case-insensitive and may carry extra spaces, a frame larger
than the configured maximum is answered with an error and skipped without being buffered,
and after any framing error the reader resynchronizes on the next `Content-Length` header.

Why resynchronizing by searching is safe: a valid JSON body never contains a raw line break
inside a string, so `Content-Length: N` followed by a real line break cannot be part of
one; a match is the start of the next frame.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

DEFAULT_MAX_FRAME_BYTES = 64 * 2**20
DEFAULT_MAX_WRITE_BUFFER_BYTES = 4 * DEFAULT_MAX_FRAME_BYTES
"""Unsent bytes a peer of the daemon may leave behind before it is dropped: a few of the
largest replies. No message the daemon sends is larger (the Python client's limit)."""
DEFAULT_MAX_TOTAL_WRITE_BUFFER_BYTES = DEFAULT_MAX_WRITE_BUFFER_BYTES
"""What all of a daemon's peers may leave unsent together: as much as one may, so that
twenty stuck clients hold no more memory than one."""
MAX_HEADER_BYTES = 8192
READ_CHUNK_BYTES = 2**16

HEADER_NAME = b"content-length:"
HEADER_START = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
HEADER_END = re.compile(rb"\r?\n\r?\n")
LEADING_BLANKS = re.compile(rb"[ \t\r\n]*")
TAIL_KEPT_WHILE_SCANNING = 32
"""Bytes kept from a scanned chunk, so that a header split across two reads is still found."""


@dataclass(frozen=True)
class FramingError:
    """A frame that could not be read; the reader has already skipped past it."""

    message: str


def encode_frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameReader:
    """Frames from a byte stream, never holding more than one frame (plus one read) in memory."""

    def __init__(self, stream: asyncio.StreamReader, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self._eof = False
        self._resyncing = False
        self._resync_from = 0
        self.max_frame_bytes = max_frame_bytes

    async def next_frame(self) -> bytes | FramingError | None:
        """The next frame's body, a FramingError (to answer, then go on), or None at the end."""
        if self._resyncing and not await self._skip_to_header():
            return None
        self._resyncing = False
        header_end = await self._read_header_block()
        if header_end is None:
            return None
        if isinstance(header_end, FramingError):
            # The bad header is still at the front of the buffer: search past its start.
            return self._lost(header_end.message, search_from=1)
        length = content_length(bytes(self._buffer[: header_end.start()]))
        if isinstance(length, FramingError):
            # A header cut short runs into the next frame's: search inside it.
            return self._lost(length.message, search_from=1)
        del self._buffer[: header_end.end()]
        if length > self.max_frame_bytes:
            return self._lost(
                f"frame of {length} bytes is larger than the maximum of {self.max_frame_bytes}"
            )
        while len(self._buffer) < length:
            if not await self._fill():
                return None
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        return body

    def recover_from(self, body: bytes) -> None:
        """A body that did not parse may have swallowed the start of the next frame (its
        Content-Length was too long, or its body short or missing): give back from the
        header, or from a trailing piece of one, so that frame is read after all. The search
        starts at the body's first byte: the header this body came with is already consumed,
        so a frame found there is the next one, and giving it back always makes progress."""
        found = HEADER_START.search(body)
        if found is not None:
            self._buffer[:0] = body[found.start() :]
            return
        for start in range(max(0, len(body) - len(HEADER_NAME) + 1), len(body)):
            if HEADER_NAME.startswith(body[start:].lower()):
                self._buffer[:0] = body[start:]
                return

    def _lost(self, message: str, search_from: int = 0) -> FramingError:
        self._resyncing = True
        self._resync_from = search_from
        return FramingError(message)

    async def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = await self._stream.read(READ_CHUNK_BYTES)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def _read_header_block(self) -> re.Match[bytes] | FramingError | None:
        """Where the header block at the front of the buffer ends (it is left in place)."""
        while True:
            blanks = LEADING_BLANKS.match(self._buffer)
            if blanks and blanks.end():
                del self._buffer[: blanks.end()]
            end = HEADER_END.search(self._buffer, 0, MAX_HEADER_BYTES + 4)
            if end is not None:
                return end
            if len(self._buffer) > MAX_HEADER_BYTES:
                return FramingError(f"no end of headers within {MAX_HEADER_BYTES} bytes")
            if not await self._fill():
                if self._buffer.strip():
                    return FramingError("the stream ended inside a header")
                return None

    async def _skip_to_header(self) -> bool:
        """Drop bytes up to the next `Content-Length` header; False at the end of the stream."""
        start = self._resync_from
        while True:
            found = HEADER_START.search(self._buffer, start)
            if found is not None:
                del self._buffer[: found.start()]
                return True
            if len(self._buffer) > TAIL_KEPT_WHILE_SCANNING:
                del self._buffer[: len(self._buffer) - TAIL_KEPT_WHILE_SCANNING]
            start = 0
            if not await self._fill():
                return False


def content_length(header: bytes) -> int | FramingError:
    """The Content-Length of a header block; other headers (Content-Type) are ignored."""
    length: int | None = None
    for raw_line in header.splitlines():
        line = raw_line.strip()
        if not line:
            continue
        name, colon, value = line.partition(b":")
        if not colon:
            return FramingError("a header line without a colon")
        if name.strip().lower() == b"content-length":
            text = value.strip()
            if not text.isdigit():
                return FramingError("Content-Length is not a number")
            # Python refuses to parse ints of thousands of digits; anything this long is too large.
            length = int(text) if len(text) <= 18 else 10**18
    if length is None:
        return FramingError("a frame without a Content-Length header")
    return length
