"""`session/list` over many sessions on disk, and what it does to other requests meanwhile.

    python benchmarks/bench_listing.py [--sessions 1000] [--turns 3] [--probes 30] [--warm 9]
                                       [--daemon-source DIR]

Writes N sessions of generated coding turns into a fresh data directory (in-process, with
the daemon's own store), then starts a real `contextd serve` over stdio on it, with one
other session open (the probe session). Measured from the client, send to reply:

- cold listing: the first `session/list`, with no listing index on disk, so every session
  file is read and counted once (and the index written);
- warm listing: the following listings, with the index current (p50 of several);
- `session/state` of the probe session, sent one after another while a cold listing runs
  (and, for comparison, with nothing else running): what a listing costs other clients.

Target: a warm listing of 1,000 sessions under 100 ms, and `session/state` during a listing
answered without waiting for the listing to finish.

`--daemon-source DIR` runs the daemon from another checkout's `server/` (the sessions are
still written by this one; the file format is the same): for before/after tables.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from coding_session import filler_turns
from contextd.model import Message, Settings
from contextd.session import SessionManager, SilentEvents
from contextd.session.index import INDEX_FILE
from contextd.store import Store
from contextd_client import ContextdClient
from live_daemon import model_settings
from pydantic import TypeAdapter

TARGET_MS = 100.0
WINDOW = 200_000


def write_sessions(data_dir: Path, workspace: Path, count: int, turns: int) -> int:
    """`count` closed sessions of `turns` generated turns each; returns the bytes written."""
    as_messages = TypeAdapter(list[Message]).validate_python
    settings = Settings.model_validate(model_settings(WINDOW))
    sessions = SessionManager(Store(data_dir), settings, SilentEvents())
    for number in range(count):
        generated = filler_turns(number)
        messages = [message for _ in range(turns) for message in next(generated)]
        session = sessions.create(str(workspace), name=f"bench session {number}")
        session.append_messages(as_messages(messages))
        sessions.close(session.session_id)
    return sum(path.stat().st_size for path in data_dir.glob("workspaces/*/sessions/*.jsonl"))


def drop_indexes(data_dir: Path) -> None:
    for index in data_dir.glob(f"workspaces/*/{INDEX_FILE}"):
        index.unlink()


async def timed(request: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = await request
    return (time.perf_counter() - started) * 1000, answer


async def state_latencies_while(client: ContextdClient, probe: str, running: asyncio.Future[Any]) -> list[float]:
    """`session/state` one after another until `running` is done (at least one)."""
    latencies = []
    while True:
        latency, _ = await timed(client.state(probe))
        latencies.append(latency)
        if running.done():
            return latencies


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def run(count: int, turns: int, probes: int, warm_runs: int, daemon_source: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="contextd-bench-") as root:
        data_dir, workspace = Path(root) / "data", Path(root) / "workspace"
        workspace.mkdir()
        started = time.perf_counter()
        size = write_sessions(data_dir, workspace, count, turns)
        write_seconds = time.perf_counter() - started
        drop_indexes(data_dir)
        env = None
        if daemon_source is not None:
            env = {**os.environ, "PYTHONPATH": str(daemon_source.resolve() / "server")}
        client = await ContextdClient.spawn(
            data_dir=data_dir, settings=model_settings(WINDOW), workspace=workspace, env=env
        )
        try:
            probe = (await client.session_open(name="probe"))["sessionId"]
            idle = [(await timed(client.state(probe)))[0] for _ in range(probes)]

            listing = asyncio.ensure_future(timed(client.session_list()))
            during_cold = await state_latencies_while(client, probe, listing)
            cold_ms, answer = await listing
            assert len(answer["sessions"]) == count + 1, len(answer["sessions"])

            warm = [(await timed(client.session_list()))[0] for _ in range(warm_runs)]

            listing = asyncio.ensure_future(timed(client.session_list()))
            during_warm = await state_latencies_while(client, probe, listing)
            await listing
        finally:
            await client.close()
    report(count, turns, size, write_seconds, cold_ms, warm, idle, during_cold, during_warm)


def report(
    count: int,
    turns: int,
    size: int,
    write_seconds: float,
    cold_ms: float,
    warm: list[float],
    idle: list[float],
    during_cold: list[float],
    during_warm: list[float],
) -> None:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"session/list over stdio, {count:,} sessions on disk ({turns} generated turns each, "
          f"{size / 1e6:.1f} MB in all, written in {write_seconds:.1f} s); "
          f"{os.cpu_count()} cores, load average {load}; {date.today().isoformat()}\n")
    print("| request | n | p50 ms | max ms |")
    print("|---|---:|---:|---:|")
    print(f"| cold listing (no index on disk) | 1 | {cold_ms:.0f} | {cold_ms:.0f} |")
    print(f"| warm listing (index current) | {len(warm)} | {percentile(warm, 0.5):.1f} | {max(warm):.1f} |")
    for label, values in (
        ("session/state, nothing else running", idle),
        ("session/state during the cold listing", during_cold),
        ("session/state during a warm listing", during_warm),
    ):
        print(f"| {label} | {len(values)} | {percentile(values, 0.5):.1f} | {max(values):.1f} |")
    verdict = "met" if percentile(warm, 0.5) < TARGET_MS else "NOT met"
    print(f"\ntarget: warm listing of {count:,} sessions under {TARGET_MS:.0f} ms -> "
          f"{percentile(warm, 0.5):.1f} ms, {verdict}; {len(during_cold)} state requests "
          f"answered while the cold listing ran")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--probes", type=int, default=30)
    parser.add_argument("--warm", type=int, default=9, help="warm listings measured")
    parser.add_argument("--daemon-source", type=Path, help="a checkout to run the daemon from")
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.turns, args.probes, args.warm, args.daemon_source))


if __name__ == "__main__":
    main()
