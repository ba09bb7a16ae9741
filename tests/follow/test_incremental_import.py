"""A transcript fed in pieces, as a followed file grows, imports as the whole file does, and
what the importer has settled never changes afterwards (a mirror writes it at once)."""

from __future__ import annotations

import json
from functools import cache

import pytest
from contextd.importers import IMPORTERS, STREAMING_IMPORTERS
from contextd.importers.common import ImportedSession, restore_importer
from contextd.importers.feed import LineFeed
from contextd.model import Entry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.corpus import NAMES, agent_of, read_bytes


@cache
def source(name: str) -> bytes:
    return read_bytes(name)


@cache
def whole(name: str) -> ImportedSession:
    return IMPORTERS[agent_of(name)](source(name).decode("utf-8").splitlines())


def dumped_entries(entries: list[Entry]) -> list[object]:
    return [entry.model_dump(mode="json") for entry in entries]


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(NAMES), cuts=st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=30))
def test_random_chunks_import_as_the_whole_file_and_settled_entries_never_change(name: str, cuts: list[float]) -> None:
    data = source(name)
    positions = sorted({int(cut * len(data)) for cut in cuts} | {len(data)})
    importer = STREAMING_IMPORTERS[agent_of(name)]()
    feed = LineFeed(importer)
    taken: list[Entry] = []
    start = 0
    for position in positions:
        consumed = feed.feed(data[feed.offset : position])
        assert feed.offset == start + consumed and data[feed.offset - 1 : feed.offset] in (b"\n", b"")
        start = feed.offset
        taken += importer.take_settled()
        assert importer.builder.taken == len(taken)
    rest = data[feed.offset :]
    if rest:  # a last line without its newline is only read by a whole-file import
        feed.lines += 1
        importer.feed(feed.lines, rest.decode("utf-8"))
    result = importer.finish()
    expected = whole(name)
    assert dumped_entries(taken + result.entries) == dumped_entries(expected.entries)
    assert (result.leaf_id, result.source_id, result.workspace, result.name) == (
        expected.leaf_id, expected.source_id, expected.workspace, expected.name
    )


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(NAMES),
    cuts=st.lists(st.tuples(st.floats(min_value=0, max_value=1), st.booleans()), min_size=1, max_size=20),
    follower=st.booleans(),
)
def test_a_snapshot_at_any_handed_over_point_continues_as_the_whole_file(
    name: str, cuts: list[tuple[float, bool]], follower: bool
) -> None:
    """What a restart does: the importer's state saved after a batch was handed over, read
    back, and fed only the bytes after it, hands over what the whole file holds (a
    follower's importer, which reports less and so saves less, as well)."""
    data = source(name)
    importer_class = STREAMING_IMPORTERS[agent_of(name)]
    feed = LineFeed(importer_class(reports_every_line=not follower))
    taken: list[Entry] = []
    for position, restart in sorted(cuts):
        feed.feed(data[feed.offset : int(position * len(data))])
        taken += feed.importer.take_settled()
        if restart:
            saved = json.loads(json.dumps(feed.importer.snapshot()))
            restored = restore_importer(importer_class, saved, reports_every_line=not follower)
            feed = LineFeed(restored, offset=feed.offset, lines=restored.last_line)
    feed.feed(data[feed.offset :])
    taken += feed.importer.take_settled()
    rest = data[feed.offset :]
    if rest:
        feed.importer.feed(feed.lines + 1, rest.decode("utf-8"))
    result = feed.importer.finish()
    expected = whole(name)
    assert dumped_entries(taken + result.entries) == dumped_entries(expected.entries)
    assert (result.leaf_id, result.source_id, result.workspace, result.name) == (
        expected.leaf_id, expected.source_id, expected.workspace, expected.name
    )


def test_a_followers_saved_state_keeps_no_line_per_tool_call() -> None:
    """A follower reads no report, so its saved state spares the line of every tool call (a
    quarter of a long pi transcript's state, saved at every round it grows); `contextd
    import` keeps them, to say at which line a call had no result."""
    name = next(name for name in NAMES if agent_of(name) == "pi")
    states = {}
    for follower in (True, False):
        feed = LineFeed(STREAMING_IMPORTERS["pi"](reports_every_line=not follower))
        feed.feed(source(name))
        feed.importer.take_settled()
        states[follower] = feed.importer.snapshot()["builder"]
    assert states[True]["callLines"] == {} and states[True]["openCalls"]
    assert states[False]["callLines"].keys() == {call for _, calls in states[False]["openCalls"] for call in calls}
    assert states[True]["openCalls"] == states[False]["openCalls"]


def test_a_snapshot_of_another_version_or_agent_is_not_restored() -> None:
    name = next(name for name in NAMES if agent_of(name) == "codex")
    importer = STREAMING_IMPORTERS["codex"]()
    LineFeed(importer).feed(source(name)[: len(source(name)) // 2])
    importer.take_settled()
    saved = importer.snapshot()
    broken_state = {**saved, "state": {**saved["state"], "answerStart": []}}
    for bad in ({**saved, "version": saved["version"] + 1}, {**saved, "builder": {}}, [], {**saved, "state": None}, broken_state):
        with pytest.raises(ValueError):
            restore_importer(STREAMING_IMPORTERS["codex"], bad)
    with pytest.raises(ValueError):
        restore_importer(STREAMING_IMPORTERS["pi"], saved)


def test_most_of_a_growing_transcript_is_settled_at_once() -> None:
    """Only a few trailing entries wait for a later line (a mirror is never far behind), and
    the importer keeps only those: what it handed over is let go."""
    for name in NAMES:
        data = source(name)
        importer = STREAMING_IMPORTERS[agent_of(name)]()
        LineFeed(importer).feed(data)
        taken = importer.take_settled()
        assert len(importer.builder.entries) <= 3, name
        assert len(taken) > 10 and not set(map(id, taken)) & set(map(id, importer.builder.entries)), name


def test_a_partial_last_line_waits_for_its_newline() -> None:
    name = next(name for name in NAMES if agent_of(name) == "pi")
    data = source(name)
    second_newline = data.index(b"\n", data.index(b"\n") + 1)
    importer = STREAMING_IMPORTERS["pi"]()
    feed = LineFeed(importer)
    assert feed.feed(data[: second_newline - 10]) == data.index(b"\n") + 1
    assert feed.lines == 1
    feed.feed(data[feed.offset : second_newline + 1])
    assert feed.lines == 2 and feed.offset == second_newline + 1
    assert not importer.problems or all(problem.kind != "corrupt" for problem in importer.problems)
