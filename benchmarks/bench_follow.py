"""What following costs at rest: the daemon's CPU while it follows idle transcripts.

    python benchmarks/bench_follow.py [--files 200] [--seconds 30] [--intervals 1.0,0.25]

Writes FILES transcripts under a throwaway HOME (the 12 real ones of tests/fixtures/real,
cut to their first 150 lines and copied round-robin into each agent's folder, the way
Claude Code, Codex and pi lay them out), starts a real daemon over stdio with following on
(`allWorkspaces`, one interval per run), waits until every file is mirrored, then measures
the daemon's CPU time (user + system, from /proc) over SECONDS with nothing written, and
its resident memory at the start and the end of that window (a window over 60 s includes
the moment quiet files let their importers and sessions go).
Target: under 1% of one core at the default interval (1 s) with 200 files.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from contextd_client import ContextdClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.corpus
from tests.corpus import NAMES, agent_of, read_bytes  # noqa: E402

LINES_PER_FILE = 150
FOLDERS = {
    "claude-code": lambda n: f".claude/projects/-work-p{n % 20}/{n:04d}-session.jsonl",
    "codex": lambda n: f".codex/sessions/2025/10/{n % 28 + 1:02d}/rollout-2025-10-01T00-00-00-{n:04d}.jsonl",
    "pi": lambda n: f".pi/agent/sessions/--work-p{n % 20}--/2025-10-01_{n:04d}.jsonl",
}


def write_transcripts(home: Path, count: int) -> None:
    sources = [
        (agent_of(name), b"".join(read_bytes(name).splitlines(keepends=True)[:LINES_PER_FILE]))
        for name in NAMES
    ]
    for number in range(count):
        agent, data = sources[number % len(sources)]
        path = home / FOLDERS[agent](number)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def measure(files: int, interval: float, seconds: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        write_transcripts(home, files)
        settings = {"follow": {"enabled": True, "allWorkspaces": True, "intervalSeconds": interval}}
        started = time.perf_counter()
        async with await ContextdClient.spawn(
            data_dir=Path(scratch) / "data", settings=settings, env={**os.environ, "HOME": str(home)}, shared=False
        ) as client:
            pid = (await client.daemon_status())["pid"]
            while (await client.follow())["mirrors"] < files:
                await asyncio.sleep(0.2)
            while len((await client.session_list())["sessions"]) < files:
                await asyncio.sleep(0.2)
            mirrored = time.perf_counter() - started
            await asyncio.sleep(2 * interval + 1)  # the last round's writes settle
            before, wall, rss_before = cpu_seconds(pid), time.perf_counter(), rss_mb(pid)
            await asyncio.sleep(seconds)
            used, elapsed = cpu_seconds(pid) - before, time.perf_counter() - wall
            return {
                "mirrored": mirrored, "cpu": 100 * used / elapsed, "rss before": rss_before, "rss": rss_mb(pid),
                "rounds": elapsed / interval,
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--intervals", default="1.0,0.25")
    args = parser.parse_args()
    print(
        f"{'files':>5}  {'interval s':>10}  {'mirrored in s':>13}  {'rounds':>6}  {'CPU at rest':>11}  "
        f"{'RSS MB start':>12}  {'RSS MB end':>10}"
    )
    for interval in (float(value) for value in args.intervals.split(",")):
        result = asyncio.run(measure(args.files, interval, args.seconds))
        print(
            f"{args.files:>5}  {interval:>10.2f}  {result['mirrored']:>13.1f}  {result['rounds']:>6.0f}  "
            f"{result['cpu']:>10.2f}%  {result['rss before']:>12.0f}  {result['rss']:>10.0f}"
        )


if __name__ == "__main__":
    main()
