"""What an image costs a model, from its size as its own bytes' header states it.

Providers charge an image by its pixels after their own downscaling, not by its encoded
size, and only the image's header is needed to know its pixels: PNG, JPEG, GIF and WebP
(what the providers accept) are read here without an image library. An image whose header
cannot be read costs `IMAGE_TOKENS`.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from enum import Enum

IMAGE_TOKENS = 1600
"""An image of unknown size: the most Anthropic charges for one, and close to what OpenAI
charges for a high-detail screenshot."""


class ImageRule(Enum):
    """Whose documented rule an image is counted by."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"


# Anthropic, "Vision" (docs.anthropic.com/en/docs/build-with-claude/vision, "Evaluate image
# size" and "Calculate image costs"): an image whose long edge is over 1568 px, or that is over
# ~1,600 tokens, is scaled down, keeping its aspect ratio, until it is within both limits; it
# then costs about width * height / 750 tokens.
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_TOKENS = 1600
ANTHROPIC_PIXELS_PER_TOKEN = 750

# OpenAI, "Images and vision", "Calculating costs" (platform.openai.com/docs/guides/vision):
# a `detail: high` image is scaled to fit within 2048 x 2048, then so that its shortest side is
# 768 px; each 512 px square tile it covers costs 170 tokens, plus 85 for the image (what a
# `detail: low` image costs in all). GPT-4o's figures: later models publish others (GPT-4.1's
# 32 px patches, GPT-5's own tile price) of the same order. Transcripts do not keep `detail`,
# and agents send screenshots at the default (`auto`, which is high for a screenshot).
OPENAI_MAX_EDGE = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_TILE = 512
OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170

HEADER_CHARS = 64
"""Base64 characters that hold the size of a PNG, GIF or WebP image (48 bytes)."""


def image_tokens(data: str, rule: ImageRule) -> int:
    """What a base64 image costs under `rule`; `IMAGE_TOKENS` when its size cannot be read."""
    size = image_size(data)
    if size is None:
        return IMAGE_TOKENS
    width, height = size
    if rule is ImageRule.OPENAI:
        return openai_tokens(width, height)
    return anthropic_tokens(width, height)


def anthropic_tokens(width: int, height: int) -> int:
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(width, height))
    pixels = width * height * scale * scale
    return min(math.ceil(pixels / ANTHROPIC_PIXELS_PER_TOKEN), ANTHROPIC_MAX_TOKENS)


def openai_tokens(width: int, height: int) -> int:
    scale = min(1.0, OPENAI_MAX_EDGE / max(width, height))
    scale *= min(1.0, OPENAI_SHORT_SIDE / (min(width, height) * scale))
    tiles = math.ceil(width * scale / OPENAI_TILE) * math.ceil(height * scale / OPENAI_TILE)
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles


def image_size(data: str) -> tuple[int, int] | None:
    """(width, height) of a base64 PNG, JPEG, GIF or WebP image; None for anything else."""
    head = _decoded(data[:HEADER_CHARS])
    if head.startswith(b"\xff\xd8"):
        # A JPEG's size comes after its metadata segments (EXIF, ICC profile), which can be long.
        size = _jpeg_size(_decoded(data))
    else:
        size = _png_size(head) or _gif_size(head) or _webp_size(head)
    return size if size is not None and min(size) > 0 else None


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data)
    except (binascii.Error, ValueError):
        return b""


def _png_size(head: bytes) -> tuple[int, int] | None:
    # The signature, then the IHDR chunk: length, type, width and height (big-endian).
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR" or len(head) < 24:
        return None
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def _gif_size(head: bytes) -> tuple[int, int] | None:
    # The logical screen's width and height follow the signature (little-endian).
    if head[:6] not in (b"GIF87a", b"GIF89a") or len(head) < 10:
        return None
    width, height = struct.unpack("<HH", head[6:10])
    return width, height


def _webp_size(head: bytes) -> tuple[int, int] | None:
    # A RIFF file whose first chunk is a lossy (VP8), lossless (VP8L) or extended (VP8X) image.
    if head[:4] != b"RIFF" or head[8:12] != b"WEBP" or len(head) < 30:
        return None
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    return None


_JPEG_FRAME_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""Start-of-frame markers (baseline, progressive, lossless ...), which state the image's size;
0xC4, 0xC8 and 0xCC are Huffman tables, a reserved marker and arithmetic-coding tables."""
_JPEG_STANDALONE_MARKERS = frozenset(range(0xD0, 0xDA)) | {0x01}
"""Markers without a length: restarts, start of image, end of image and TEM."""


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    # Walk the marker segments up to the first frame header: FF, marker, then (unless it stands
    # alone) a two-byte length that counts itself; a frame header holds precision, height, width.
    position = 2
    while position + 9 <= len(raw):
        if raw[position] != 0xFF:
            return None
        marker = raw[position + 1]
        if marker == 0xFF:  # fill byte before a marker
            position += 1
        elif marker in _JPEG_STANDALONE_MARKERS:
            position += 2
        elif marker in _JPEG_FRAME_MARKERS:
            height, width = struct.unpack(">HH", raw[position + 5 : position + 9])
            return width, height
        else:
            position += 2 + struct.unpack(">H", raw[position + 2 : position + 4])[0]
    return None
