"""`session/list` over many sessions on disk, and what it does to other requests meanwhile.

    python benchmarks/bench_listing.py [--sessions 1000] [--turns 3] [--probes 30] [--warm 9]
                                       [--daemon-source DIR] [--socket]

Writes N sessions of generated coding turns into a fresh data directory (in-process, with
the daemon's own store), then starts a real `contextd serve` on it (over stdio, or with
`--socket` serving a Unix socket as the shared daemon does), with one other session open
(the probe session). Measured from the client, send to reply:

- cold listing: the first `session/list`, with no listing index on disk, so every session
  file is read and counted once (and the index written). Twice, each in a fresh daemon:
  first where the listing is the daemon's first counting (the probe session holds no
  message, so the tokenizer is built during the listing), then after the probe session
  has counted a message;
- warm listing: the following listings, with the index current (p50 of several);
- `session/state` of the probe session, sent one after another while a listing runs
  (and, for comparison, with nothing else running): what a listing costs other clients.

Target: a warm listing of 1,000 sessions under 100 ms, and `session/state` during a listing
answered without waiting for the listing to finish.

`--daemon-source DIR` runs the daemon from another checkout's `server/` (the sessions are
still written by this one; the file format is the same): for before/after tables.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from coding_session import filler_turns
from contextd.model import Message, Settings
from contextd.rpc.listen import socket_in_use
from contextd.session import SessionManager, SilentEvents
from contextd.session.index import INDEX_FILE
from contextd.store import Store
from contextd_client import ContextdClient
from live_daemon import model_settings
from pydantic import TypeAdapter
from report import load_average, table_header

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


async def cold_listing(
    client: ContextdClient, probe: str, count: int
) -> tuple[float, list[float]]:
    """A listing with no index on disk, and the state latencies while it ran."""
    listing = asyncio.ensure_future(timed(client.session_list()))
    during = await state_latencies_while(client, probe, listing)
    cold_ms, answer = await listing
    assert len(answer["sessions"]) == count + 1, len(answer["sessions"])
    return cold_ms, during


@contextlib.asynccontextmanager
async def daemon_client(
    root: Path, workspace: Path, env: dict[str, str] | None, on_socket: bool
) -> AsyncIterator[ContextdClient]:
    """A client of a fresh daemon on the data dir under `root`: over stdio, or of a daemon
    serving a Unix socket (whose settings then come from a file, as a shared daemon's do)."""
    data_dir = root / "data"
    if not on_socket:
        client = await ContextdClient.spawn(
            data_dir=data_dir, settings=model_settings(WINDOW), workspace=workspace, env=env
        )
        try:
            yield client
        finally:
            await client.close()
        return
    settings, socket = root / "settings.json", root / "daemon.sock"
    settings.write_text(json.dumps(model_settings(WINDOW)))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "--log-level", "WARNING", "serve",
        "--socket", str(socket), "--settings", str(settings), env=env,
    )
    try:
        while not socket_in_use(socket):
            await asyncio.sleep(0.05)
        client = await ContextdClient.connect_unix(socket, workspace=workspace)
        try:
            yield client
        finally:
            await client.close()
    finally:
        process.terminate()
        await process.wait()


async def run(
    count: int, turns: int, probes: int, warm_runs: int, daemon_source: Path | None, on_socket: bool
) -> None:
    with tempfile.TemporaryDirectory(prefix="contextd-bench-") as temporary:
        root = Path(temporary)
        data_dir, workspace = root / "data", root / "workspace"
        workspace.mkdir()
        started = time.perf_counter()
        size = write_sessions(data_dir, workspace, count, turns)
        write_seconds = time.perf_counter() - started
        drop_indexes(data_dir)
        env = None
        if daemon_source is not None:
            env = {**os.environ, "PYTHONPATH": str(daemon_source.resolve() / "server")}

        # A fresh daemon whose first counting may be the listing's: then it builds the encoding too.
        async with daemon_client(root, workspace, env, on_socket) as client:
            probe = (await client.session_open(name="probe"))["sessionId"]
            idle = [(await timed(client.state(probe)))[0] for _ in range(probes)]
            cold_first_ms, during_cold_first = await cold_listing(client, probe, count)
            warm = [(await timed(client.session_list()))[0] for _ in range(warm_runs)]
            listing = asyncio.ensure_future(timed(client.session_list()))
            during_warm = await state_latencies_while(client, probe, listing)
            await listing

        # Again without an index, in a daemon that has counted a message already.
        drop_indexes(data_dir)
        async with daemon_client(root, workspace, env, on_socket) as client:
            probe = (await client.session_open(name="probe"))["sessionId"]
            await client.append(probe, [{"role": "user", "content": "count me"}])
            cold_ms, during_cold = await cold_listing(client, probe, count + 1)
    transport = "a Unix socket (serve --socket)" if on_socket else "stdio"
    report(count, turns, size, write_seconds, transport, Figures(
        cold_first_ms, cold_ms, warm, idle, during_cold_first, during_cold, during_warm
    ))


@dataclass
class Figures:
    cold_first_ms: float
    cold_ms: float
    warm: list[float]
    idle: list[float]
    during_cold_first: list[float]
    during_cold: list[float]
    during_warm: list[float]


def report(count: int, turns: int, size: int, write_seconds: float, transport: str, figures: Figures) -> None:
    load = load_average()
    print(f"session/list over {transport}, {count:,} sessions on disk ({turns} generated turns each, "
          f"{size / 1e6:.1f} MB in all, written in {write_seconds:.1f} s); "
          f"{os.cpu_count()} cores, load average {load}; {date.today().isoformat()}\n")
    print(table_header("request", "n", "p50 ms", "p99 ms", "max ms"))
    warm = figures.warm
    print(f"| cold listing, the daemon's first counting (no index on disk) | 1 | {figures.cold_first_ms:.0f} | | |")
    print(f"| cold listing, the encoding already built (no index on disk) | 1 | {figures.cold_ms:.0f} | | |")
    print(f"| warm listing (index current) | {len(warm)} | {percentile(warm, 0.5):.1f} | | {max(warm):.1f} |")
    for label, values in (
        ("session/state, nothing else running", figures.idle),
        ("session/state during the first cold listing", figures.during_cold_first),
        ("session/state during the cold listing, encoding built", figures.during_cold),
        ("session/state during a warm listing", figures.during_warm),
    ):
        print(f"| {label} | {len(values)} | {percentile(values, 0.5):.1f} | "
              f"{percentile(values, 0.99):.1f} | {max(values):.1f} |")
    verdict = "met" if percentile(warm, 0.5) < TARGET_MS else "NOT met"
    print(f"\ntarget: warm listing of {count:,} sessions under {TARGET_MS:.0f} ms -> "
          f"{percentile(warm, 0.5):.1f} ms, {verdict}; {len(figures.during_cold)} state requests "
          f"answered while the second cold listing ran")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--probes", type=int, default=30)
    parser.add_argument("--warm", type=int, default=9, help="warm listings measured")
    parser.add_argument("--daemon-source", type=Path, help="a checkout to run the daemon from")
    parser.add_argument("--socket", action="store_true", help="a daemon serving a Unix socket, as the shared one does")
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.turns, args.probes, args.warm, args.daemon_source, args.socket))


if __name__ == "__main__":
    main()
