"""A dry run (`contextd/session/compact` with `dryRun`) over the socket, on the real corpus.

    python benchmarks/bench_dry_run.py [--runs 5]

Each transcript of tests/fixtures/real is imported into one data directory (as `contextd
import` does); a `contextd serve --socket` daemon serves it and one client opens each session
and asks for a dry run `--runs` times, timed from request to reply (the first ask is not
timed: it loads the session), with the daemon's CPU time per dry run beside it and the time
its threads spent ready to run but waiting for a CPU (Linux schedstat): on a shared machine
that wait is what the wall time holds beyond the CPU time. The reply holds the offline
summary the compaction would write, so the dry run pays for the extractive summarizer; the
summarizer's own part is timed in-process beside it. Target: <= 100 ms per dry run.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_startup import cpu_seconds
from contextd.compaction.prepare import CompactionPreparation, offline_summary, prepare_compaction
from contextd.importers import IMPORTERS, save
from contextd.model import Settings
from contextd.rpc.listen import socket_in_use
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from contextd_client import ContextdClient, ContextdError
from report import load_average

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "real"


def imported(data_dir: Path) -> dict[str, str]:
    """Every corpus transcript saved as a session of `data_dir`: name -> session id."""
    sessions = {}
    for file in sorted(REAL.glob("*.jsonl.gz")):
        agent = next(prefix for prefix in ("claude-code", "codex", "pi") if file.name.startswith(prefix))
        lines = gzip.decompress(file.read_bytes()).decode("utf-8").splitlines()
        session_id, _ = save(IMPORTERS[agent](lines), data_dir, workspace=str(data_dir), name=None)
        sessions[file.name.removesuffix(".jsonl.gz")] = session_id
    return sessions


def summarizer_ms(sessions: SessionManager, session_id: str) -> float | None:
    """CPU milliseconds of the offline summary alone, in this process."""
    session = sessions.get(session_id)
    prepared = prepare_compaction(
        session.path, session.entry_tokens, session.settings, tokens_before=session.tokens, calibration=session.calibration
    )
    if not isinstance(prepared, CompactionPreparation):
        return None
    began = time.process_time()
    offline_summary(prepared)
    return (time.process_time() - began) * 1000


def cpu_wait_ms(pid: int) -> float | None:
    """Milliseconds the threads of process `pid` have spent ready to run but waiting for a
    CPU (Linux schedstat), or None where the kernel does not keep it."""
    waited = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            waited += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            return None
    return waited / 1e6


@dataclass(frozen=True)
class DryRunTimes:
    wall_ms: float
    """Median from request to reply."""
    cpu_ms: float
    """The daemon's CPU time per dry run."""
    cpu_wait_ms: float | None
    """The daemon's time per dry run waiting for a CPU (None: not known)."""


async def dry_runs(data_dir: Path, sessions: dict[str, str], runs: int) -> dict[str, DryRunTimes | None]:
    """Per session, the times of its dry runs; None when there is nothing to compact."""
    socket = data_dir.parent / "daemon.sock"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "--log-level", "WARNING",
        "serve", "--socket", str(socket),
    )
    try:
        while not socket_in_use(socket):
            await asyncio.sleep(0.05)
        client = await ContextdClient.connect_unix(socket, workspace=data_dir)
        times: dict[str, DryRunTimes | None] = {}
        for name, session_id in sessions.items():
            await client.session_open(session_id=session_id)
            try:
                await client.compact(session_id, dry_run=True)
            except ContextdError:
                times[name] = None  # nothing to compact
                continue
            walls = []
            cpu_before, wait_before = cpu_seconds(process.pid), cpu_wait_ms(process.pid)
            for _ in range(runs):
                began = time.perf_counter()
                await client.compact(session_id, dry_run=True)
                walls.append((time.perf_counter() - began) * 1000)
            wait_after = cpu_wait_ms(process.pid)
            times[name] = DryRunTimes(
                statistics.median(walls),
                (cpu_seconds(process.pid) - cpu_before) * 1000 / runs,
                None if wait_before is None or wait_after is None else (wait_after - wait_before) / runs,
            )
        await client.close()
        return times
    finally:
        process.terminate()
        await process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="contextd-dry-run-") as root:
        data_dir = Path(root) / "data"
        sessions = imported(data_dir)
        times = asyncio.run(dry_runs(data_dir, sessions, runs))
        manager = SessionManager(Store(data_dir), Settings(), SilentEvents())
        summarizer_ms(manager, next(iter(sessions.values())))  # imports the summarizer before timing it
        load = load_average()
        print(f"dry run over a Unix socket, {runs} runs each; load average {load}\n")
        print("| transcript | dry run ms (median) | daemon cpu ms per dry run | daemon waiting for a CPU, ms "
              "| offline summary alone, cpu ms |")
        print("|---|---:|---:|---:|---:|")
        for name, session_id in sessions.items():
            measured = times[name]
            if measured is None:
                print(f"| {name} | nothing to compact | | | |")
                continue
            waited = "—" if measured.cpu_wait_ms is None else f"{measured.cpu_wait_ms:.0f}"
            print(f"| {name} | {measured.wall_ms:.0f} | {measured.cpu_ms:.0f} | {waited} "
                  f"| {summarizer_ms(manager, session_id) or 0:.0f} |")


if __name__ == "__main__":
    main()
