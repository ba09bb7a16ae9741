"""Images cost what their provider's documented rule gives for their size, read from their header."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextd.model import ImageContent, Settings, UserMessage
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from contextd.tokens import IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, ImageRule, count_message, resolve_model
from contextd.tokens.images import anthropic_tokens, image_size, image_tokens, openai_tokens
from tests.corpus import read_text


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def png(width: int, height: int) -> bytes:
    """A whole, valid grey PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = (b"\x00" + b"\x80" * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def jpeg_segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def jpeg(width: int, height: int, frame_marker: int = 0xC0) -> bytes:
    """A JPEG's head as a camera writes it: JFIF, a long EXIF segment, tables, then the frame."""
    return (
        b"\xff\xd8"
        + jpeg_segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + jpeg_segment(0xE1, b"Exif\x00\x00" + b"\x00" * 60_000)
        + jpeg_segment(0xDB, b"\x00" + bytes(64))
        + b"\xff"  # a fill byte before a marker
        + jpeg_segment(frame_marker, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
        + jpeg_segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + b"\x00" * 100
        + b"\xff\xd9"
    )


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0) + b";"


def webp(chunk: bytes, body: bytes) -> bytes:
    payload = chunk + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(payload)) + b"WEBP" + payload


def webp_lossy(width: int, height: int) -> bytes:
    return webp(b"VP8 ", b"\x10\x02\x00\x9d\x01\x2a" + struct.pack("<HH", width, height) + bytes(20))


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | (height - 1) << 14
    return webp(b"VP8L", b"\x2f" + bits.to_bytes(4, "little") + bytes(20))


def webp_extended(width: int, height: int) -> bytes:
    return webp(b"VP8X", b"\x00" + bytes(3) + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little"))


@pytest.mark.parametrize(
    "encode",
    [png, jpeg, gif, webp_lossy, webp_lossless, webp_extended, lambda w, h: jpeg(w, h, frame_marker=0xC2)],
    ids=["png", "jpeg", "gif", "webp-lossy", "webp-lossless", "webp-extended", "jpeg-progressive"],
)
def test_each_format_states_its_width_and_height(encode: Any) -> None:
    assert image_size(b64(encode(1000, 600))) == (1000, 600)
    assert image_size(b64(encode(37, 1500))) == (37, 1500)


@pytest.mark.parametrize(
    "data",
    [
        "",
        "not base64 at all!",
        b64(b"plain text, not an image"),
        b64(png(10, 10)[:20]),  # cut inside the header
        b64(b"\xff\xd8" + jpeg_segment(0xE0, b"JFIF")),  # a JPEG without a frame
        b64(b"BM" + bytes(60)),  # BMP: no provider takes it
        b64(gif(0, 10)),
    ],
    ids=["empty", "not-base64", "text", "truncated-png", "frameless-jpeg", "bmp", "zero-width"],
)
def test_an_image_whose_size_cannot_be_read_keeps_the_flat_estimate(data: str) -> None:
    assert image_size(data) is None
    assert image_tokens(data, ImageRule.ANTHROPIC) == image_tokens(data, ImageRule.OPENAI) == IMAGE_TOKENS


def test_anthropic_rule_matches_its_documented_examples() -> None:
    # docs.anthropic.com vision: 200x200 ~54 tokens, 1000x1000 ~1334, 1092x1092 (the largest
    # 1:1 image not resized) ~1600; a long edge over 1568 px or over ~1,600 tokens is scaled down.
    assert anthropic_tokens(200, 200) == 54
    assert anthropic_tokens(1000, 1000) == 1334
    assert anthropic_tokens(1092, 1092) == 1590
    assert anthropic_tokens(784, 1568) == 1600  # 1:2 at its documented size: 1640, capped
    assert anthropic_tokens(4000, 4000) == 1600
    assert anthropic_tokens(8000, 1000) == 410  # 1568x196 after the long-edge limit


def test_openai_rule_matches_its_documented_examples() -> None:
    # platform.openai.com vision, "Calculating costs": 1024x1024 high detail costs 765 tokens,
    # 2048x4096 costs 1105.
    assert openai_tokens(1024, 1024) == 765
    assert openai_tokens(2048, 4096) == 1105
    assert openai_tokens(512, 512) == 255
    assert openai_tokens(100, 100) == 255


def real_images(name: str) -> Iterator[str]:
    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            if value.get("type") == "base64" and isinstance(value.get("data"), str):
                yield value["data"]
            for child in value.values():
                yield from walk(child)
        elif isinstance(value, list):
            for child in value:
                yield from walk(child)

    for line in read_text(name).splitlines():
        yield from walk(json.loads(line))


def test_a_real_screenshot_costs_what_each_provider_charges_for_its_size() -> None:
    (screenshot,) = real_images("claude-code-atlas-short.jsonl.gz")
    assert image_size(screenshot) == (2000, 1005)
    message = UserMessage(content=[ImageContent(data=screenshot, mimeType="image/png")])
    claude = resolve_model("claude-opus-4-1", {})
    codex = resolve_model("gpt-5-codex", {})
    # Claude: 1568x788 after its long-edge limit is still over ~1,600 tokens, so 1600.
    assert count_message(message, claude.encoding, claude.image_rule) == MESSAGE_OVERHEAD_TOKENS + 1600
    # OpenAI: 2000x1005 -> 1528x768 -> 3x2 tiles of 512 px: 85 + 6 * 170.
    assert count_message(message, codex.encoding, codex.image_rule) == MESSAGE_OVERHEAD_TOKENS + 1105


def test_a_small_real_screenshot_costs_less_than_the_flat_estimate() -> None:
    sizes = {image_size(data) for data in real_images("claude-code-atlas-opus41.jsonl.gz")}
    assert (528, 1100) in sizes
    assert anthropic_tokens(528, 1100) == 775 < IMAGE_TOKENS


def test_models_count_images_by_their_providers_rule() -> None:
    assert resolve_model("gpt-4o-2024-08-06", {}).image_rule is ImageRule.OPENAI
    assert resolve_model("claude-sonnet-4-5-20250929", {}).image_rule is ImageRule.ANTHROPIC
    assert resolve_model("some-local-model", {}).image_rule is ImageRule.ANTHROPIC
    assert resolve_model("gpt-5", {}).counting != resolve_model("claude-sonnet-4-5", {}).counting


def test_a_session_recounts_its_images_when_its_model_changes_provider(tmp_path: Path) -> None:
    (screenshot,) = real_images("claude-code-atlas-short.jsonl.gz")
    sessions = SessionManager(Store(tmp_path), Settings(), SilentEvents())
    session = sessions.create("/ws")
    session.set_model("claude-sonnet-4-5")
    (entry_id,) = session.append_messages([UserMessage(content=[ImageContent(data=screenshot, mimeType="image/png")])])
    # Claude's 1,600 is in its own tokens: counted as 1,600 / 1.25, which calibration brings back.
    assert session.entry_tokens[entry_id] == MESSAGE_OVERHEAD_TOKENS + 1280
    session.set_model("claude-3-5-sonnet")  # the same rule, another prior: 1,600 / 1.18
    assert session.entry_tokens[entry_id] == MESSAGE_OVERHEAD_TOKENS + 1356
    session.set_model("gpt-5")
    assert session.entry_tokens[entry_id] == MESSAGE_OVERHEAD_TOKENS + 1105
    sessions.close_all()
    # Its next load does not take the counts kept under Claude's rule.
    assert SessionManager(Store(tmp_path), Settings(), SilentEvents()).get(session.session_id).entry_tokens[entry_id] == MESSAGE_OVERHEAD_TOKENS + 1105


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-3-5-sonnet", "gemini-2.5-pro", "gpt-5"])
def test_a_screenshot_reads_in_the_figure_at_what_its_provider_charges(tmp_path: Path, model: str) -> None:
    """An image's cost is already in the provider's tokens: calibration, which turns counted
    o200k tokens into Claude's (~1.25x), must not scale it too (1,600 read as 2,000)."""
    (screenshot,) = real_images("claude-code-atlas-short.jsonl.gz")
    sessions = SessionManager(Store(tmp_path), Settings(), SilentEvents())
    session = sessions.create("/ws")
    session.set_model(model)
    before = session.tokens
    session.append_messages([UserMessage(content=[ImageContent(data=screenshot, mimeType="image/png")])])
    info = resolve_model(model, {})
    charged = image_tokens(screenshot, info.image_rule)
    framing = round(MESSAGE_OVERHEAD_TOKENS * session.calibration)
    assert session.usage_body()["source"] == ("counted" if info.exact else "estimated")
    assert abs(session.tokens - before - framing - charged) <= 1  # rounding of the scaled image
