"""Finding transcripts and their working directories without reading more than needed."""

from __future__ import annotations

import os
from pathlib import Path

from contextd.follow.mirror import mirror_session_id, peek_workspace
from contextd.follow.transcripts import TranscriptScan
from contextd.store import SESSION_ID_PATTERN


def test_a_long_first_line_is_read_whole_and_a_partial_one_waits(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    meta = b'{"type":"session_meta","payload":{"cwd":"/work/app","instructions":"' + b"x" * 300_000 + b'"}}'
    rollout.write_bytes(meta)  # no newline yet: the agent is still writing it
    assert peek_workspace("codex", str(rollout)) is None
    rollout.write_bytes(meta + b"\n")
    assert peek_workspace("codex", str(rollout)) == "/work/app"


def test_the_scan_finds_each_agents_transcripts_at_their_depth_only(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    (claude / "-work-app" / "session-1" / "subagents").mkdir(parents=True)
    (claude / "-work-app" / "session-1.jsonl").write_text("{}\n")
    (claude / "-work-app" / "session-1" / "subagents" / "agent-1.jsonl").write_text("{}\n")
    (claude / "-work-app" / "notes.txt").write_text("")
    scan = TranscriptScan("claude-code", claude)
    assert set(scan.scan()) == {str(claude / "-work-app" / "session-1.jsonl")}
    later = claude / "-work-lib" / "session-2.jsonl"
    later.parent.mkdir()
    later.write_text("{}\n")
    found = scan.scan()
    assert str(later) in found and found[str(later)] == (later.stat().st_size, later.stat().st_mtime_ns)
    codex = tmp_path / "codex"
    day = codex / "2025" / "10" / "05"
    day.mkdir(parents=True)
    (day / "rollout-1.jsonl").write_text("{}\n")
    assert set(TranscriptScan("codex", codex).scan()) == {str(day / "rollout-1.jsonl")}
    assert TranscriptScan("pi", tmp_path / "missing").scan() == {}


def test_mirror_ids_are_stable_valid_and_distinct_per_path(tmp_path: Path) -> None:
    first = mirror_session_id("pi", "/home/a/.pi/agent/sessions/--w--/2025-10-05T10:00:00.000Z_0a1b.jsonl")
    assert first == mirror_session_id("pi", "/home/a/.pi/agent/sessions/--w--/2025-10-05T10:00:00.000Z_0a1b.jsonl")
    assert SESSION_ID_PATTERN.fullmatch(first) and first.startswith("pi-")
    assert first != mirror_session_id("pi", "/home/b/.pi/agent/sessions/--w--/2025-10-05T10:00:00.000Z_0a1b.jsonl")
    assert os.sep not in first


def test_old_transcripts_are_looked_at_every_tenth_scan_and_recent_ones_every_scan(tmp_path: Path) -> None:
    folder = tmp_path / "--w--"
    folder.mkdir()
    old, recent = folder / "old.jsonl", folder / "recent.jsonl"
    for path in (old, recent):
        path.write_text("{}\n")
    two_hours_ago = old.stat().st_mtime - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    scan = TranscriptScan("pi", tmp_path)
    scan.scan()
    for path in (old, recent):
        with open(path, "a") as handle:  # both grow; only the recent one is stat'ed at once
            handle.write("{}\n")
    os.utime(old, (two_hours_ago, two_hours_ago))  # a resumed session, as seen within one scan
    found = scan.scan()
    assert found[str(recent)][0] == 6 and found[str(old)][0] == 3
    sizes = [scan.scan()[str(old)][0] for _ in range(9)]
    assert 6 in sizes  # noticed within ten scans
