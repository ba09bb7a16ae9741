"""Token counts kept beside a session file spare its next load the counting, and are
never used for a file they were not taken from."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from contextd.importers import IMPORTERS, save
from contextd.model import AssistantMessage, Settings, TextContent, UserMessage
from contextd.session import SessionManager, SilentEvents
from contextd.session import counts as session_counts
from contextd.session import counting as session_counting
from contextd.session import figure as session_figure
from contextd.session.counts import counts_path
from contextd.store import SessionListing, Store
from tests.corpus import agent_of, read_text


def closed_session(data_dir: Path) -> tuple[str, Path, int]:
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    session = sessions.create("/ws")
    for index in range(20):
        session.append_messages([UserMessage(content=f"request {index} " * 30), AssistantMessage(content=[TextContent(text="done " * 40)])])
    tokens = session.tokens
    sessions.close_all()
    return session.session_id, session.file.path, tokens


def reload_counting(data_dir: Path, session_id: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """The reloaded session's figure, and how many entries its load counted."""
    counted = []
    real = session_counting.count_entry
    monkeypatch.setattr(session_counting, "count_entry", lambda entry, *counting: counted.append(entry.id) or real(entry, *counting))
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    tokens = sessions.get(session_id).tokens
    sessions.close_all()
    monkeypatch.setattr(session_counting, "count_entry", real)
    return tokens, len(counted)


def test_a_reload_takes_the_kept_counts_and_shows_the_same_figure(tmp_path, monkeypatch):
    session_id, _, tokens = closed_session(tmp_path)
    assert reload_counting(tmp_path, session_id, monkeypatch) == (tokens, 0)


def test_a_file_changed_since_is_counted_again(tmp_path, monkeypatch):
    session_id, path, tokens = closed_session(tmp_path)
    kept = json.loads(counts_path(path).read_bytes())
    kept["tokens"] = {entry_id: 1 for entry_id in kept["tokens"]}  # what a stale count would show
    counts_path(path).write_text(json.dumps(kept))
    written_since(path)
    assert reload_counting(tmp_path, session_id, monkeypatch) == (tokens, 41)


def written_since(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


def counts_reads_of_a_load(data_dir: Path, session_id: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many times loading the session reads its counts file."""
    reads = []
    real = session_counts.counts_path
    monkeypatch.setattr(session_counts, "counts_path", lambda path: reads.append(path) or real(path))
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    sessions.get(session_id)
    monkeypatch.setattr(session_counts, "counts_path", real)
    sessions.close_all()
    return len(reads)


@pytest.mark.parametrize("stale", [False, True])
def test_a_load_reads_the_counts_file_once_whether_it_fits_or_not(tmp_path, monkeypatch, stale):
    session_id, path, _ = closed_session(tmp_path)
    if stale:
        written_since(path)
    assert counts_reads_of_a_load(tmp_path, session_id, monkeypatch) == 1


@pytest.mark.parametrize("damage", ["{not json", '{"key": "other"}', "[]", '{"tokens": 3}'])
def test_damaged_or_foreign_counts_are_counted_again(tmp_path, monkeypatch, damage):
    session_id, path, tokens = closed_session(tmp_path)
    counts_path(path).write_text(damage)
    assert reload_counting(tmp_path, session_id, monkeypatch) == (tokens, 41)


def test_deleting_a_session_deletes_its_counts(tmp_path):
    session_id, path, _ = closed_session(tmp_path)
    assert counts_path(path).exists()
    Store(tmp_path).remove(SessionListing(session_id, path, "/ws"))
    assert not path.exists() and not counts_path(path).exists()


def imported_and_closed(data_dir: Path, name: str) -> tuple[str, Path]:
    """A real transcript imported and opened once, then closed as a daemon leaves it."""
    lines = read_text(name).splitlines(keepends=True)
    session_id, _ = save(IMPORTERS[agent_of(name)](iter(lines)), data_dir, workspace="/ws", name=None)
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    sessions.get(session_id)
    sessions.close_all()
    return session_id, next(data_dir.glob(f"workspaces/*/sessions/{session_id}.jsonl"))


def figures_of_a_reload(data_dir: Path, session_id: str, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> tuple[object, int]:
    """What the reloaded session shows of its calibration and unseen part, and how many of
    their walks (the calibration's over every node, the unseen part's over the path) it ran."""
    walks = []
    for module, name in ((session_counting, "learn"), (session_figure, "learn_unseen")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *args, real=real, **named: walks.append(real) or real(*args, **named))
    sessions = SessionManager(Store(data_dir), settings, SilentEvents())
    session = sessions.get(session_id)
    shown = (session.tokens, session.calibration, session.unseen_tokens, session._ledger.evidence, session.usage_body())
    sessions.close_all()
    monkeypatch.undo()
    return shown, len(walks)


@pytest.mark.parametrize("name", ["claude-code-atlas-short.jsonl.gz", "pi-coffee-model-switches.jsonl.gz"])
def test_a_reload_takes_the_kept_calibration_and_unseen_part_and_shows_the_same(tmp_path, monkeypatch, name):
    session_id, path = imported_and_closed(tmp_path, name)
    kept, walks = figures_of_a_reload(tmp_path, session_id, Settings(), monkeypatch)
    assert walks == 0
    tokens, calibration, unseen, evidence, _ = kept
    assert evidence and unseen > 0  # the session teaches both
    without = json.loads(counts_path(path).read_bytes())
    del without["figures"]  # the counts and records alone, for the very same file
    counts_path(path).write_text(json.dumps(without))
    assert figures_of_a_reload(tmp_path, session_id, Settings(), monkeypatch) == (kept, 2)


def test_kept_figures_learned_with_another_default_model_are_learned_again(tmp_path, monkeypatch):
    session_id, path = imported_and_closed(tmp_path, "claude-code-atlas-short.jsonl.gz")
    other = Settings(defaultModel="gpt-5.1")  # another root tokenizer
    relearned = figures_of_a_reload(tmp_path, session_id, other, monkeypatch)
    assert relearned[1] == 2
    counts_path(path).unlink()
    assert figures_of_a_reload(tmp_path, session_id, other, monkeypatch)[0] == relearned[0]
