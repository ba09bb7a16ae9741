"""`contextd demo` on an 80-column terminal: a run is recorded through a pseudo-terminal and
played into pyte, a terminal emulator, so the test sees the screen a person would. A live
line wider than the terminal would leave a stale wrapped fragment behind at every redraw."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.commands import CONTEXTD
from tests.cli.terminal import record, screen_lines

COLUMNS, ROWS = 80, 24
USAGE_LINE = re.compile(
    r"^\[[█░│]+\] +\d+\.\d%  +[\d,]+ / 40,000 tokens · threshold 34,000$"
)


@pytest.fixture(scope="module")
def demo_screen(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path]:
    data_dir = tmp_path_factory.mktemp("demo") / "data"
    code, recording = record([*CONTEXTD, "--data-dir", str(data_dir), "demo", "--delay", "0"], COLUMNS, ROWS)
    lines = screen_lines(recording, COLUMNS)
    assert code == 0, "\n".join(lines[-30:])
    assert b"\x1b[" in recording, "the demo did not draw a live line on the terminal"
    return lines, data_dir


def test_the_live_line_fits_80_columns_and_leaves_no_fragments(demo_screen: tuple[list[str], Path]) -> None:
    lines, _ = demo_screen
    drawn = [line for line in lines if "tokens · threshold" in line or "█" in line or "░" in line]
    assert drawn, "\n".join(lines[:40])
    for line in drawn:
        assert USAGE_LINE.match(line), f"a broken usage line on the screen: {line!r}"
    # The live line vanishes when the run ends: what stays is the final figure and the recap's.
    assert len(drawn) == 2 and drawn[0] == drawn[1]


def test_every_compaction_shows_once_in_full_with_the_threshold_that_fired(demo_screen: tuple[list[str], Path]) -> None:
    lines, _ = demo_screen
    started = [line for line in lines if line.startswith("⟳ compacting (threshold) at ")]
    finished = [line for line in lines if line.startswith("✓ compacted (threshold): ")]
    assert len(started) == len(finished) >= 2
    for line in started:
        tokens = int(line.removeprefix("⟳ compacting (threshold) at ").split()[0].replace(",", ""))
        assert tokens >= 34_000  # it fired at the threshold the line showed
    assert not any("counted" in line for line in lines)


def test_the_recap_says_where_the_session_is_and_how_to_delete_it(demo_screen: tuple[list[str], Path]) -> None:
    lines, data_dir = demo_screen
    text = "\n".join(lines)
    flat = "".join(lines)  # long paths wrap at the terminal's edge
    session_file = re.search(r"Session file: +(\S+\.jsonl)", flat)
    assert session_file and Path(session_file.group(1)).is_file()
    assert Path(session_file.group(1)).is_relative_to(data_dir / "workspaces")
    assert "(kept in the workspace `demo` of your data directory)" in text
    assert f"Delete it:    contextd sessions rm --data-dir {data_dir} " in flat
    assert "The summary the model now sees in place of the early history:" in text


def test_the_sessions_table_fits_80_columns_with_every_column(demo_screen: tuple[list[str], Path]) -> None:
    _, data_dir = demo_screen
    code, recording = record([*CONTEXTD, "--data-dir", str(data_dir), "sessions"], COLUMNS, ROWS)
    lines = screen_lines(recording, COLUMNS)
    assert code == 0, "\n".join(lines)
    header, row = lines
    assert header.split() == ["SESSION", "NAME", "ENTRIES", "TOKENS", "UPDATED", "WORKSPACE"]
    session_id = next(Path(data_dir / "workspaces").rglob("*.jsonl")).stem
    # The id as its shortest unique prefix, git-like, at least 8 characters: the demo's is
    # the only session, so 8 name it.
    assert row.startswith(session_id[:8] + "  ") and row.endswith("  demo")
    assert "contextd demo: " in row  # the name, cut to fit, still starts as it should


def test_the_summary_wraps_between_words_and_keeps_its_indent(demo_screen: tuple[list[str], Path]) -> None:
    lines, data_dir = demo_screen
    start = lines.index("The summary the model now sees in place of the early history:") + 2
    shown = []
    for line in lines[start:]:
        if line.startswith("Session file:") or line.startswith("    … "):
            break
        shown.append(line)
    assert len([line for line in shown if line.strip()]) > 3
    assert all(not line.strip() or line.startswith("    ") for line in shown)  # the indent holds
    entries = [json.loads(line) for line in next((data_dir / "workspaces").rglob("*.jsonl")).read_text().splitlines()]
    summary = [entry for entry in entries if entry.get("type") == "compaction"][-1]["summary"]
    words = set(re.findall(r"\w+", summary))
    for word in re.findall(r"\w+", " ".join(shown)):
        assert word in words, word  # every word shown is one of the summary's: none was cut in two
