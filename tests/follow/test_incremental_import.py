"""A transcript fed in pieces, as a followed file grows, imports as the whole file does, and
what the importer has settled never changes afterwards (a mirror writes it at once)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

from contextd.importers import IMPORTERS, STREAMING_IMPORTERS
from contextd.importers.common import ImportedSession
from contextd.importers.feed import LineFeed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REAL = Path(__file__).parents[1] / "fixtures" / "real"
MANIFEST = {item["file"]: item["agent"] for item in json.loads((REAL / "MANIFEST.json").read_text())}
CORPUS = sorted(MANIFEST)


@cache
def source(name: str) -> bytes:
    return gzip.decompress((REAL / name).read_bytes())


@cache
def whole(name: str) -> ImportedSession:
    return IMPORTERS[MANIFEST[name]](source(name).decode("utf-8").splitlines())


def dumped(session: ImportedSession) -> tuple[object, ...]:
    return (
        [entry.model_dump(mode="json") for entry in session.entries],
        session.leaf_id,
        sorted((problem.line, problem.kind, problem.message) for problem in session.problems),
        session.source_id,
        session.workspace,
        session.name,
    )


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(CORPUS), cuts=st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=30))
def test_random_chunks_import_as_the_whole_file_and_settled_entries_never_change(name: str, cuts: list[float]) -> None:
    data = source(name)
    positions = sorted({int(cut * len(data)) for cut in cuts} | {len(data)})
    importer = STREAMING_IMPORTERS[MANIFEST[name]]()
    feed = LineFeed(importer)
    settled_along_the_way = []
    start = 0
    for position in positions:
        consumed = feed.feed(data[feed.offset : position])
        assert feed.offset == start + consumed and data[feed.offset - 1 : feed.offset] in (b"\n", b"")
        start = feed.offset
        settled_along_the_way.append([entry.model_dump(mode="json") for entry in importer.settled_entries()])
    rest = data[feed.offset :]
    if rest:  # a last line without its newline is only read by a whole-file import
        feed.lines += 1
        importer.feed(feed.lines, rest.decode("utf-8"))
    result = importer.finish()
    assert dumped(result) == dumped(whole(name))
    final = [entry.model_dump(mode="json") for entry in result.entries]
    for settled in settled_along_the_way:
        assert settled == final[: len(settled)]


def test_most_of_a_growing_transcript_is_settled_at_once() -> None:
    """Only a few trailing entries wait for a later line: a mirror is never far behind."""
    for name in CORPUS:
        data = source(name)
        importer = STREAMING_IMPORTERS[MANIFEST[name]]()
        LineFeed(importer).feed(data)
        entries = importer.builder.entries
        assert len(entries) - len(importer.settled_entries()) <= 3, name


def test_a_partial_last_line_waits_for_its_newline() -> None:
    name = next(name for name in CORPUS if MANIFEST[name] == "pi")
    data = source(name)
    second_newline = data.index(b"\n", data.index(b"\n") + 1)
    importer = STREAMING_IMPORTERS["pi"]()
    feed = LineFeed(importer)
    assert feed.feed(data[: second_newline - 10]) == data.index(b"\n") + 1
    assert feed.lines == 1
    feed.feed(data[feed.offset : second_newline + 1])
    assert feed.lines == 2 and feed.offset == second_newline + 1
    assert not importer.problems or all(problem.kind != "corrupt" for problem in importer.problems)
