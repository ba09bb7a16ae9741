"""A mirror's first read answers before its entries are counted (issue 28): its figure is the
agent's latest report plus the count of what came after it, and whatever needs the counts
(stats, a compaction preview, the tree's tokens) gets what a fully counted mirror gives."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contextd.importers import STREAMING_IMPORTERS
from contextd.importers.feed import LineFeed
from contextd.model import NON_NODE_TYPES, ColdMessageEntry, Entry, MessageEntry, MirrorSource, ModelOverride, Settings, SharedFieldNames
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.session.counts import counts_path
from contextd.store import Store
from tests import corpus


def imported(name: str) -> tuple[str, list[Entry], str | None]:
    agent = corpus.agent_of(name)
    importer = STREAMING_IMPORTERS[agent]()
    LineFeed(importer).feed(corpus.read_bytes(name))
    return agent, importer.take_settled(), importer.leaf_id


def first_read(data_dir: Path, name: str, batches: int = 1) -> tuple[SessionManager, LiveSession]:
    """A new mirror of the transcript, its entries written as the follower writes them."""
    agent, entries, leaf = imported(name)
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    session = sessions.create_mirror("mirror", "/ws", MirrorSource(agent=agent, path=f"/t/{name}"))  # type: ignore[arg-type]
    size = -(-len(entries) // batches)
    for start in range(0, len(entries), size):
        session.mirror(entries[start : start + size], leaf, None)
    return sessions, session


def reloaded(sessions: SessionManager, settings: Settings | None = None) -> LiveSession:
    """The mirror loaded again from its file, every entry counted anew (not the counts it
    kept as it closed: those are what is checked)."""
    path = sessions.get("mirror").file.path
    sessions.close_all()
    counts_path(path).unlink(missing_ok=True)
    return SessionManager(sessions.store, settings or Settings(), SilentEvents()).get("mirror")


@pytest.mark.parametrize("name", corpus.NAMES)
def test_the_figure_after_a_first_read_is_the_fully_counted_one(tmp_path: Path, name: str) -> None:
    sessions, session = first_read(tmp_path, name)
    first = session.usage_body()
    counted = reloaded(sessions).usage_body()
    assert first["source"] == counted["source"]
    assert first["model"] == counted["model"] and first["contextWindow"] == counted["contextWindow"]
    # Only what follows the latest report is counted, with the calibration learned so far
    # (the prior, on a first read) until everything is: within half a percent.
    assert abs(first["tokens"] - counted["tokens"]) <= max(1, counted["tokens"] // 200)


def test_a_first_read_leaves_the_counting_for_later_where_a_report_anchors_the_figure(tmp_path: Path) -> None:
    sessions, session = first_read(tmp_path, "codex-knearme-compacted.jsonl.gz")
    assert session.counts_pending and session.usage_body()["source"] == "usage"
    session.settle_counts()
    assert not session.counts_pending
    sessions.close_all()


def test_a_first_read_keeps_in_memory_what_a_load_of_its_file_keeps(tmp_path: Path) -> None:
    """The entries out of the live context go cold as the very lines written, once written
    (the figure is announced first); the others stay parsed, their field names shared."""
    agent, entries, leaf = imported("codex-knearme-two-compactions.jsonl.gz")
    sessions = SessionManager(Store(tmp_path), Settings(), SilentEvents())
    session = sessions.create_mirror("mirror", "/ws", MirrorSource(agent=agent, path="/t/rollout"))  # type: ignore[arg-type]
    session.mirror_in_memory(entries, leaf, None)
    assert not any(type(entry) is ColdMessageEntry for entry in session.tree.entries.values())
    session.write_mirrored()
    lines = {json.loads(line)["id"]: line for line in session.file.path.read_bytes().splitlines()[1:]}
    cold = {entry.id: entry for entry in session.tree.entries.values() if type(entry) is ColdMessageEntry}
    assert len(cold) > len(entries) / 2 and all(entry.line == lines[entry_id] for entry_id, entry in cold.items())
    parsed = [entry for entry in session.tree.entries.values() if type(entry) is MessageEntry]
    assert parsed and all(type(entry.__pydantic_fields_set__) is SharedFieldNames for entry in parsed)
    loaded = reloaded(sessions)
    assert {entry.id for entry in loaded.tree.entries.values() if type(entry) is ColdMessageEntry} == set(cold)
    loaded.close()


def answers_needing_counts(session: LiveSession) -> dict[str, Any]:
    tree = session.tree_nodes()
    return {
        "stats": session.stats(),
        "tree tokens": {node["id"]: node["tokens"] for node in tree},
        "preview": asyncio.run(session.preview_compaction()),
        "calibration": session.calibration,
        "state": session.state().model_dump(exclude={"path"}),  # the data dirs differ
    }


@pytest.mark.parametrize(
    "name", ["codex-knearme-compacted.jsonl.gz", "claude-code-atlas-short.jsonl.gz", "pi-coffee-model-switches.jsonl.gz"]
)
def test_requests_needing_counts_right_after_a_first_read_answer_as_after_counting(tmp_path: Path, name: str) -> None:
    early_sessions, early = first_read(tmp_path / "early", name)
    assert early.counts_pending
    right_after = answers_needing_counts(early)
    counted_sessions, counted = first_read(tmp_path / "counted", name)
    counted.settle_counts()
    assert right_after == answers_needing_counts(counted)
    assert right_after["stats"] == reloaded(early_sessions).stats()
    counted_sessions.close_all()


TRANSCRIPT = "pi-coffee-model-switches.jsonl.gz"
"""pi switches models many times in this one; two of them counted with another encoding
here, so a switch makes every count stale while the worker thread may be counting."""
SWITCHING_ENCODINGS = Settings(
    models={
        "minimaxai/minimax-m3": ModelOverride(encoding="cl100k_base"),
        "big-pickle": ModelOverride(encoding="cl100k_base"),
    }
)


ENTRIES = imported(TRANSCRIPT)[1]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cuts=st.lists(st.integers(min_value=1, max_value=len(ENTRIES) - 1), max_size=7),
    pauses=st.lists(st.sampled_from([0.0, 0.0005, 0.002, 0.01]), min_size=8, max_size=8),
)
def test_entries_written_while_the_background_counting_runs_end_counted_right(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int], pauses: list[float]
) -> None:
    """However the follower's writes interleave with the worker thread's counting (a write
    may switch the encoding while a batch is being counted), the mirror ends with every
    entry counted as a fresh load counts it, and the same figure."""
    agent, entries, leaf = imported(TRANSCRIPT)
    sessions = SessionManager(Store(tmp_path_factory.mktemp("data")), SWITCHING_ENCODINGS, SilentEvents())
    session = sessions.create_mirror("mirror", "/ws", MirrorSource(agent=agent, path="/t.jsonl"))  # type: ignore[arg-type]
    bounds = [0, *sorted(set(cuts)), len(entries)]

    async def follow() -> None:
        for (start, end), pause in zip(zip(bounds, bounds[1:]), pauses):
            session.mirror(entries[start:end], leaf, None)
            session.count_in_background()
            await asyncio.sleep(pause)  # the worker's counts may land before the next write, or after
        while session.counts_pending:
            session.count_in_background()
            await asyncio.gather(*session._tasks)

    asyncio.run(follow())
    counts = dict(session.entry_tokens)
    figure = session.usage_body()
    fresh = reloaded(sessions, SWITCHING_ENCODINGS)
    assert counts == {entry_id: fresh.entry_tokens[entry_id] for entry_id in counts}
    assert set(counts) >= {entry.id for entry in entries}
    assert figure == fresh.usage_body()


def test_contextd_import_still_reports_the_fields_pi_records_drop() -> None:
    importer = STREAMING_IMPORTERS["pi"]()
    LineFeed(importer).feed(corpus.read_bytes("pi-coffee-single-task.jsonl.gz"))
    assert any(problem.kind == "dropped" for problem in importer.problems)


IN_PARTS = ["pi-coffee-model-switches.jsonl.gz", "claude-code-flow-lock-scheduler.jsonl.gz", "codex-knearme-two-compactions.jsonl.gz"]
"""Model switches (pi), a conversation that goes on from an earlier entry (Claude Code),
compactions (Codex)."""


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(IN_PARTS),
    cuts=st.lists(st.tuples(st.floats(min_value=0, max_value=1), st.booleans()), max_size=6),
)
@example(name=IN_PARTS[0], cuts=[(0.5, True)])
@example(name=IN_PARTS[1], cuts=[(0.5, False)])
def test_a_transcript_mirrored_in_parts_stands_as_one_mirrored_at_once_and_as_its_file_loaded(
    tmp_path_factory: pytest.TempPathFactory, name: str, cuts: list[tuple[float, bool]]
) -> None:
    """Each part's write grows the path and the reports per model from the last part's
    (no walk of the whole tree) unless it went on elsewhere: the path, the model, its window
    and the counted figure are those of the whole transcript written at once, and of the
    mirror's file loaded again. A part may leave the leaf back on an earlier entry (the
    agent's user went back there), and the next part go on from where the conversation was."""
    agent, entries, leaf = imported(name)
    nodes = [entry.id for entry in entries if entry.type not in NON_NODE_TYPES]
    ends = sorted({(round(cut * len(entries)), back) for cut, back in cuts if round(cut * len(entries)) > 2})
    sessions = SessionManager(Store(tmp_path_factory.mktemp("parts")), Settings(), SilentEvents())
    session = sessions.create_mirror("mirror", "/ws", MirrorSource(agent=agent, path=f"/t/{name}"))  # type: ignore[arg-type]
    start = 0
    for end, back in [*ends, (len(entries), False)]:
        part_leaf = leaf if end == len(entries) else nodes[1] if back else None
        session.mirror(entries[start:end], part_leaf, None)
        assert [entry.id for entry in session.path] == [entry.id for entry in session.tree.path_to(session.leaf_id)]
        start = end
    at_once_sessions, at_once = first_read(tmp_path_factory.mktemp("once"), name)
    assert shown(session) == shown(at_once)
    session.settle_counts()  # a part's figure uses the calibration learned so far: counted, they agree
    at_once.settle_counts()
    assert session.usage_body() == at_once.usage_body()
    at_once_sessions.close_all()
    loaded = reloaded(sessions)
    assert shown(loaded) == shown(session)
    loaded.close()


def shown(session: LiveSession) -> tuple[list[str], str, int]:
    """The path a session shows, its model and that model's window."""
    return [entry.id for entry in session.path], session.model_id, session.model_info.context_window
