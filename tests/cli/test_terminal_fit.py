"""The CLI on 80- and 120-column terminals, with mirrors of real agent transcripts (ids of
40-80 characters) and a long session name: recorded through a pseudo-terminal and played
into pyte, so the test sees the screen a person would. No number or id may be cut, no line
may wrap, and each id shown is a unique prefix `contextd` takes back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from contextd_client.render import tokens
from tests.cli.commands import CONTEXTD, run, run_json
from tests.cli.terminal import record, screen_lines
from tests.client.helpers import long_conversation
from tests.corpus import read_bytes

TRANSCRIPTS = {
    "pi": ("pi-coffee-single-task.jsonl.gz", ".pi/agent/sessions/--coffee--/2025-10-05T08-14-22-123Z_3067b5a1-9c1e-4b7e-8f00-2b8c5d9e0a11.jsonl"),
    "codex": ("codex-lotto.jsonl.gz", ".codex/sessions/2025/10/05/rollout-2025-10-05T08-14-22-0199b0f4-7c2d-7a31-9a55-1f2e3d4c5b6a.jsonl"),
    "claude-code": ("claude-code-atlas-short.jsonl.gz", ".claude/projects/-srv-atlas/7f3c2b1a-5d4e-4c3b-9a8f-0e1d2c3b4a59.jsonl"),
}
LONG_NAME = "refactor the parser so that every error names its line and column, then document it"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three mirrors written by `contextd follow --all` and two sessions of contextd's own."""
    base = tmp_path_factory.mktemp("fit")
    home, data = base / "home", base / "data"
    for name, where in TRANSCRIPTS.values():
        path = home / where
        path.parent.mkdir(parents=True)
        path.write_bytes(read_bytes(name))
    follower = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(data), "follow", "--all", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HOME": str(home)},
    )
    assert follower.stdout is not None
    watchdog = threading.Timer(120, follower.kill)
    watchdog.start()
    try:
        seen = {json.loads(follower.stdout.readline())["sessionId"] for _ in range(3)}
        while len(seen) < 3:
            seen.add(json.loads(follower.stdout.readline())["sessionId"])
    finally:
        watchdog.cancel()
        follower.send_signal(signal.SIGINT)
        follower.wait(timeout=30)
    conversation = base / "conversation.jsonl"
    conversation.write_text("".join(json.dumps(m) + "\n" for m in long_conversation(6)))
    run_json(data, "replay", str(conversation), "--name", LONG_NAME)
    run_json(data, "replay", str(conversation), "--name", "short")
    return data


def listing(data_dir: Path) -> list[dict[str, Any]]:
    return list(run_json(data_dir, "sessions")["sessions"])


def screen(data_dir: Path, columns: int, *args: str) -> list[str]:
    code, recording = record([*CONTEXTD, "--data-dir", str(data_dir), *args], columns, 50)
    lines = screen_lines(recording, columns)
    assert code == 0, "\n".join(lines)
    return lines


def shown_prefix(line: str, full_ids: list[str]) -> str:
    prefix = line.split()[0]
    matching = [session_id for session_id in full_ids if session_id.startswith(prefix)]
    assert len(matching) == 1, (prefix, line)
    return matching[0]


@pytest.mark.parametrize("columns", [80, 120])
def test_sessions_fit_with_whole_ids_and_figures(data_dir: Path, columns: int) -> None:
    sessions = listing(data_dir)
    assert any(len(s["sessionId"]) > 40 for s in sessions)  # mirrors' long ids are there
    lines = screen(data_dir, columns, "sessions")
    assert lines[0].startswith("SESSION")
    rows = lines[1:]
    assert len(rows) == len(sessions), "a row wrapped:\n" + "\n".join(lines)
    ids = [s["sessionId"] for s in sessions]
    by_id = {s["sessionId"]: s for s in sessions}
    for line in rows:
        assert len(line) <= columns
        session = by_id[shown_prefix(line, ids)]
        assert f" {tokens(session['tokens'])}" in line, line  # the figure whole
    if columns == 120:
        assert any(LONG_NAME[:20] in line for line in rows)


@pytest.mark.parametrize("columns", [80, 120])
def test_a_shown_prefix_is_taken_back(data_dir: Path, columns: int) -> None:
    lines = screen(data_dir, columns, "sessions")
    prefix = lines[1].split()[0]
    done = run(data_dir, "tree", prefix)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("columns", [80, 120])
def test_stats_fit_and_wrap_between_words(data_dir: Path, columns: int) -> None:
    sessions = listing(data_dir)
    lines = screen(data_dir, columns, "sessions", "--stats")
    ids = [s["sessionId"] for s in sessions]
    table_rows = lines[1 : 1 + len(sessions)]
    for line in table_rows:
        shown_prefix(line, ids)
        assert len(line) <= columns
    assert lines[1 + len(sessions)] == "", "a row of the table wrapped:\n" + "\n".join(lines)
    words = " ".join(lines).split()
    # The legend wraps between words: each of its words arrives whole.
    for word in ("ENTRIES,", "TOKENS:", "branch.", "SAVED,", "PRUNED:", "RATIO:"):
        assert word in words, "\n".join(lines)


@pytest.mark.parametrize("columns", [80, 120])
def test_a_follow_line_fits_with_whole_figures(columns: int) -> None:
    from datetime import datetime

    from contextd_client.render import follow_line

    activity = {
        "sessionId": "pi-2025-10-05T08-14-22-123Z_3067b5a1-9c1e-4b7e-8f00-2b8c5d9e0a11",
        "name": LONG_NAME,
        "source": {"agent": "pi", "path": "/x.jsonl"},
        "usage": {"tokens": 150_912, "contextWindow": 1_047_576, "percent": 14.4},
    }
    line = follow_line(activity, 2, datetime(2026, 11, 25, 10, 0), columns, [])
    assert len(line) <= columns and "150,912/1,047,576  14.4%  2 compactions" in line, line
    unnamed = follow_line({**activity, "name": None}, 2, datetime(2026, 11, 25, 10, 0), columns, ["pi-2025-10-05T09"])
    assert "pi-2025-10-05T08 " in unnamed and len(unnamed) <= columns, unnamed


def test_follow_with_nothing_to_show_says_what_it_watches(data_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    follower = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(data_dir), "follow", "--workspace", str(empty)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HOME": str(tmp_path / "nohome")},
    )
    assert follower.stderr is not None
    watchdog = threading.Timer(90, follower.kill)
    watchdog.start()
    try:
        said = follower.stderr.readline()
    finally:
        watchdog.cancel()
        follower.send_signal(signal.SIGINT)
        follower.wait(timeout=30)
    assert f"Watching the Claude Code, Codex, pi transcripts of {empty}; none yet" in said, said
    assert "3 mirror(s) of other folders: contextd follow --all shows them." in said


def test_tree_fits_80_columns_marks_what_a_compaction_folded_and_ids_are_taken_back(
    data_dir: Path, tmp_path: Path
) -> None:
    short = next(s for s in listing(data_dir) if s.get("name") == "short")
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"compaction": {"keepRecentTokens": 1000}}))
    assert run(data_dir, "compact", short["sessionId"], "--settings", str(small)).returncode == 0
    tree = run_json(data_dir, "tree", short["sessionId"])
    lines = screen(data_dir, 80, "tree", short["sessionId"])
    legend_at = lines.index("")
    drawn, legend = lines[:legend_at], lines[legend_at + 1 :]
    assert len(drawn) == len(tree["nodes"]), "a line wrapped:\n" + "\n".join(lines)
    assert all(len(line) <= 80 for line in drawn)
    assert any(line.startswith("◌") for line in drawn) and legend[0].startswith("● the path to the leaf")
    assert " ".join(legend).split() == render_legend_words()
    entry = drawn[0].split()[1]
    assert len(entry) < len(tree["nodes"][0]["id"]) or entry == tree["nodes"][0]["id"]
    shown = run(data_dir, "show", short["sessionId"], entry)
    assert shown.returncode == 0, shown.stderr


def test_a_mirrors_tree_shows_short_ids(data_dir: Path) -> None:
    mirror = next(s for s in listing(data_dir) if s["sessionId"].startswith("claude-code"))
    tree = run_json(data_dir, "tree", mirror["sessionId"])
    lines = screen(data_dir, 80, "tree", mirror["sessionId"])
    drawn = [line for line in lines if line[:1] in "●◌○│├└"]
    assert len(drawn) == len(tree["nodes"]), "a line wrapped:\n" + "\n".join(lines[:20])
    assert max(len(line.split()[1]) for line in drawn if line[0] in "●◌○") < 36


def render_legend_words() -> list[str]:
    from contextd_client.render import TREE_LEGEND

    return TREE_LEGEND.split()
