"""A quick guard against speed regressions, for CI: ratios measured in one run, in-process.

    python benchmarks/ratio_guard.py

Each ratio compares two things measured side by side on the same machine in alternating
rounds, so the machine's speed cancels out; no absolute time is asserted. Both sides are
timed as this process's CPU time (`time.process_time`), not wall time: what is timed runs on
this thread alone, and a process waiting for a core (other CI runs on the machine) is not
charged for the wait (wall time read the cold open at 2.6-5.6x with two CI runs side by
side, 2.7-3.1x on a quiet machine). It fails
(exit 1) only when a ratio is more than twice its goal (benchmarks/README.md holds the full
benchmarks and their goals):

- append growth: `append_messages` p50 on a session of 5,000 entries against one of 100
  (goal 1.5x: an append must not cost more as the session grows).
- cold open: loading that 5,000-entry session into a new manager (its file parsed, the
  counts kept when it closed taken, the figure built) against `json.loads` of each of the
  same file's lines, the floor (goal 3x).
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import TypeAdapter

from bench_append import HUGE_WINDOW, measured_messages, percentile, prefill_messages
from live_daemon import model_settings
from contextd.model import Message, Settings
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store

SMALL, LARGE = 100, 5_000
APPENDS, ROUND = 300, 30
OPENS = 7
GOALS = {"append p50, 5,000 vs 100 entries": 1.5, "cold open vs json.loads, 5,000 entries": 3.0}
"""A ratio over twice its goal fails the guard: the margin absorbs a shared machine's noise."""

as_messages = TypeAdapter(list[Message]).validate_python


def filled(sessions: SessionManager, workspace: str, entries: int) -> LiveSession:
    session = sessions.create(workspace)
    prefill = as_messages(prefill_messages(entries - session.node_count, seed=entries))
    for start in range(0, len(prefill), 1000):
        session.append_messages(prefill[start : start + 1000])
    return session


def append_ratio(small: LiveSession, large: LiveSession) -> float:
    measured = as_messages(measured_messages(APPENDS, seed=7))[:APPENDS]
    times: dict[int, list[float]] = {SMALL: [], LARGE: []}
    for start in range(0, APPENDS, ROUND):
        for session, size in ((small, SMALL), (large, LARGE)):
            for message in measured[start : start + ROUND]:
                began = time.process_time()
                session.append_messages([message])
                times[size].append(time.process_time() - began)
    return percentile(times[LARGE], 0.5) / percentile(times[SMALL], 0.5)


def seconds(action: Callable[[], object]) -> float:
    """CPU time of `action`, not of freeing what it returned (that happens after)."""
    began = time.process_time()
    made = action()  # noqa: F841 (kept alive until the time is taken)
    return time.process_time() - began


def parse_floor(lines: list[bytes]) -> float:
    """`json.loads` of every line with the collector paused, as a load pauses it: otherwise the
    floor's speed depends on how many objects this process already holds (1.3-4x apart)."""
    gc.collect()
    gc.disable()
    try:
        return seconds(lambda: [json.loads(line) for line in lines])
    finally:
        gc.enable()


def cold_open_ratio(root: Path, settings: Settings, session: LiveSession) -> float:
    """Best of OPENS alternating rounds each, once the session was closed as a daemon does."""
    lines = session.file.path.read_bytes().splitlines()

    floor, opened = [], []
    for _ in range(OPENS):
        floor.append(parse_floor(lines))
        sessions = SessionManager(Store(root), settings, SilentEvents())
        opened.append(seconds(lambda: sessions.get(session.session_id)))
        sessions.close_all()  # not timed: closing is no part of opening
    return min(opened) / min(floor)


def measure() -> dict[str, float]:
    settings = Settings.model_validate(model_settings(HUGE_WINDOW))
    with tempfile.TemporaryDirectory(prefix="contextd-guard-") as root:
        sessions = SessionManager(Store(Path(root)), settings, SilentEvents())
        try:
            small, large = filled(sessions, root, SMALL), filled(sessions, root, LARGE)
            appending = append_ratio(small, large)
        finally:
            sessions.close_all()
        return {
            "append p50, 5,000 vs 100 entries": appending,
            "cold open vs json.loads, 5,000 entries": cold_open_ratio(Path(root), settings, large),
        }


def over_limit(ratios: dict[str, float]) -> list[str]:
    failed = []
    for name, ratio in ratios.items():
        goal = GOALS[name]
        verdict = "ok" if ratio <= 2 * goal else "over the limit"
        print(f"{name}: {ratio:.2f}x (goal {goal}x, fails over {2 * goal}x) {verdict}")
        if verdict != "ok":
            failed.append(name)
    return failed


def main() -> int:
    if not over_limit(measure()):
        return 0
    # A regression is over the limit in every run; a burst of load on a shared machine is not.
    print("measuring again to tell a regression from a burst of load")
    failed = over_limit(measure())
    print(f"FAILED: {', '.join(failed)}" if failed else "ok on the second measurement")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
