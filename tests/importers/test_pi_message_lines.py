"""A follower reads pi's common message line straight from its bytes
(`contextd.importers.pi._PI_MESSAGE_LINE`): what it makes of every real pi transcript and of
pi's own sessions at 10,000 entries is what the general path (the line's dict, the message
rebuilt and validated) makes, down to the fields each model was given (`to_wire` sends only
those)."""

from __future__ import annotations

from typing import Any

import pytest

from contextd.importers.common import StreamingImporter
from contextd.importers.feed import LineFeed
from contextd.importers.pi import _PI_MESSAGE_LINE, PiImporter
from contextd.model import Entry

from tests.corpus import NAMES, agent_of, pi_lines, read_bytes

PI_10000 = "pi-10000"
TRANSCRIPTS = [name for name in NAMES if agent_of(name) == "pi"] + [PI_10000]


class GeneralPath(PiImporter):
    """pi's importer reading every line through its dict."""

    feed = StreamingImporter.feed


def transcript(name: str) -> bytes:
    if name == PI_10000:
        return "".join(line + "\n" for line in pi_lines(10_000)).encode()
    return read_bytes(name)


def followed(importer: PiImporter, data: bytes) -> tuple[list[Any], list[Any], str | None]:
    LineFeed(importer).feed(data)
    session = importer.finish()
    return [given(entry) for entry in session.entries], session.problems, session.leaf_id


def given(entry: Entry) -> tuple[Entry, dict[str, Any]]:
    """The entry, and the fields given at every level of it (equality alone ignores them)."""
    return entry, entry.model_dump(exclude_unset=True)


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_a_followed_pi_transcript_reads_as_through_the_general_path(name: str) -> None:
    data = transcript(name)
    assert followed(PiImporter(reports_every_line=False), data) == followed(GeneralPath(reports_every_line=False), data)


def test_most_lines_of_pis_sessions_are_read_from_their_bytes() -> None:
    """Else the comparison above compares the general path with itself (pydantic building
    the schema from contextd's stricter models would refuse every line here)."""
    lines = transcript(PI_10000).splitlines()
    read = 0
    for line in lines:
        try:
            _PI_MESSAGE_LINE.validate_json(line)
            read += 1
        except ValueError:
            pass
    assert read > 0.8 * len(lines)


def test_a_line_the_general_path_reads_otherwise_is_left_to_it() -> None:
    """Shapes the general path reads with defaults or drops (a block without its text, an
    unknown block, a usage of 0 tokens, a count as a string) are not read from the bytes."""
    base = '{"type":"message","id":"a","parentId":null,"timestamp":"t","message":%s}'
    for message in (
        '{"role":"user","content":[{"type":"text"}]}',
        '{"role":"user","content":[{"type":"video","url":"x"}]}',
        '{"role":"assistant","content":[],"stopReason":"stop","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":0}}',
        '{"role":"assistant","content":[],"stopReason":"stop","usage":{"input":"1","output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2}}',
        '{"role":"assistant","content":[],"stopReason":"stop","model":null}',
        '{"role":"toolResult","toolCallId":"c","content":"x","isError":false}',
        '{"role":"bashExecution","command":"ls","output":"x"}',
    ):
        with pytest.raises(ValueError):
            _PI_MESSAGE_LINE.validate_json(base % message)
