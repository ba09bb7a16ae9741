"""Memory per loaded entry against its bytes on disk, and what `storage.maxLoadedEntries` holds.

    python benchmarks/bench_memory.py [--sizes 1000,10000] [--sessions 12]

The corpus's transcripts with compactions (imported, opened and closed once), then per size
three kinds of sessions: pi's own (bench_load.py's: the corpus's pi transcripts repeated,
imported), the generated coding sessions of bench_append.py, and the same compacted every
COMPACT_EVERY entries (sizes above it); `cold` is the share of entries kept as their lines
(outside the live context). Each is loaded
into a new manager under tracemalloc: the memory the load leaves allocated (the entries,
the tree, the counts, the calibration states, the figure), per entry, against the bytes
per entry of contextd's file and of json.loads's dicts of the same lines.
Goal (issue 28): ≤ 1.5x the bytes on disk, or cold entries kept as raw lines.

Then `--sessions` sessions of the largest size are opened one after the other in one
manager with the default settings: the entries and sessions left in memory and the
process's resident memory show the bound by entries at work.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from bench_append import HUGE_WINDOW, prefill_messages
from bench_load import imported, write_pi_session
from live_daemon import model_settings
from ratio_guard import as_messages, filled
from tests.corpus import agent_of, read_text
from contextd.importers import IMPORTERS, save
from contextd.model import ColdMessageEntry, Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from report import load_average, table_header

SIZES = (1_000, 10_000)
GOAL = 1.5


def allocated_by(action: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes `action` leaves allocated (what it returns kept alive), and what it returns."""
    gc.collect()
    tracemalloc.start()
    try:
        made = action()
        gc.collect()
        return tracemalloc.get_traced_memory()[0], made
    finally:
        tracemalloc.stop()


def pi_session(scratch: Path, size: int) -> tuple[Path, str, Settings]:
    data_dir = scratch / f"pi-{size}"
    return data_dir, imported(data_dir, write_pi_session(scratch, size)), Settings()


def coding_session(scratch: Path, size: int) -> tuple[Path, str, Settings]:
    data_dir = scratch / f"coding-{size}"
    settings = Settings.model_validate(model_settings(HUGE_WINDOW))
    sessions = SessionManager(Store(data_dir), settings, SilentEvents())
    session_id = filled(sessions, "/bench", size).session_id
    sessions.close_all()
    return data_dir, session_id, settings


COMPACT_EVERY = 1_000
"""The generated session with compactions is compacted after every this many entries."""
REAL_COMPACTED = ("codex-knearme-two-compactions", "codex-knearme-compacted", "claude-code-atlas-sonnet45")
"""The corpus's transcripts with compactions (two, one, two compact boundaries)."""


def compacted_session(scratch: Path, size: int) -> tuple[Path, str, Settings]:
    """The coding session of `coding_session`, compacted every COMPACT_EVERY entries (the
    offline summarizer): most of it is history before the latest compaction."""
    data_dir = scratch / f"compacted-{size}"
    settings = Settings.model_validate(model_settings(HUGE_WINDOW))
    sessions = SessionManager(Store(data_dir), settings, SilentEvents())
    session = sessions.create("/bench")
    messages = as_messages(prefill_messages(size, seed=size))
    for start in range(0, len(messages), COMPACT_EVERY):
        session.append_messages(messages[start : start + COMPACT_EVERY])
        if start + COMPACT_EVERY < len(messages):
            asyncio.run(session.compact("manual"))
    session_id = session.session_id
    sessions.close_all()
    return data_dir, session_id, settings


def real_session(scratch: Path, name: str) -> tuple[Path, str, Settings]:
    data_dir = scratch / name
    file = f"{name}.jsonl.gz"
    lines = iter(read_text(file).splitlines(keepends=True))
    session_id, _ = save(IMPORTERS[agent_of(file)](lines), data_dir, workspace="/bench", name=None)
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    sessions.get(session_id)  # opened once and closed, as bench_load's: its counts are kept
    sessions.close_all()
    return data_dir, session_id, Settings()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure_entry(kind: str, data_dir: Path, session_id: str, settings: Settings) -> dict[str, Any]:
    path = next(data_dir.glob(f"workspaces/*/sessions/{session_id}.jsonl"))
    lines = path.read_bytes().splitlines()[1:]
    as_dicts, _ = allocated_by(lambda: [json.loads(line) for line in lines])
    sessions = SessionManager(Store(data_dir), settings, SilentEvents())
    loaded, session = allocated_by(lambda: sessions.get(session_id))
    entries = len(session.tree.entries)
    cold = sum(1 for entry in session.tree.entries.values() if type(entry) is ColdMessageEntry)
    sessions.close_all()
    return {
        "kind": kind, "entries": entries, "disk": sum(len(line) + 1 for line in lines) / entries,
        "dicts": as_dicts / entries, "loaded": loaded / entries, "cold": cold / entries,
    }


def bounded(scratch: Path, size: int, count: int) -> dict[str, Any]:
    """`count` sessions of `size` entries opened in turn with the default settings."""
    data_dir, first, _ = pi_session(scratch, size)
    path = next(data_dir.glob(f"workspaces/*/sessions/{first}.jsonl"))
    ids = [first]
    for number in range(1, count):  # copies of the same session under other ids
        copy = path.with_name(f"copy-{number}.jsonl")
        copy.write_bytes(path.read_bytes().replace(first.encode(), copy.stem.encode(), 1))
        ids.append(copy.stem)
    settings = Settings()
    sessions = SessionManager(Store(data_dir), settings, SilentEvents())
    before = rss_mb()
    for session_id in ids:
        sessions.get(session_id)
    loaded = sessions.loaded()
    result = {
        "opened": count, "size": size, "kept": len(loaded), "entries": sum(len(live.tree.entries) for live in loaded),
        "bound": settings.storage.maxLoadedEntries, "rss": rss_mb() - before,
    }
    sessions.close_all()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--sessions", type=int, default=12)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="contextd-memory-") as root:
        scratch = Path(root)
        rows = [measure_entry(name, *real_session(scratch, name)) for name in REAL_COMPACTED]
        for size in sizes:
            rows += [measure_entry(kind, *make(scratch, size)) for kind, make in (("pi", pi_session), ("coding", coding_session))]
            if size > COMPACT_EVERY:
                rows.append(measure_entry(f"coding, compacted every {COMPACT_EVERY:,}", *compacted_session(scratch, size)))
        held = bounded(scratch, max(sizes), args.sessions)
    load = load_average()
    print(f"memory per entry (tracemalloc, bytes); {date.today()}; load average {load}")
    print()
    print(table_header("session", "entries", "cold", "on disk", "json.loads dicts", "loaded", "loaded vs disk"))
    for row in rows:
        print(
            f"| {row['kind']} | {row['entries']:,} | {row['cold']:.0%} | {row['disk']:,.0f} | {row['dicts']:,.0f} "
            f"| {row['loaded']:,.0f} | {row['loaded'] / row['disk']:.2f}x |"
        )
    print(f"\ngoal: ≤ {GOAL}x the bytes on disk")
    print(
        f"\n{held['opened']} sessions of {held['size']:,} entries opened in turn (maxLoadedEntries {held['bound']:,}): "
        f"{held['kept']} kept in memory, {held['entries']:,} entries, resident memory +{held['rss']:,.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
