"""What following costs at rest: the daemon's CPU while it follows idle transcripts.

    python benchmarks/bench_follow.py [--files 200] [--seconds 30] [--intervals 1.0,0.25]
    python benchmarks/bench_follow.py --first-read [--only NAME]
    python benchmarks/bench_follow.py --next-reads

`--first-read` measures instead, in-process, the first read of each real transcript (and
of pi's own sessions of bench_load.py at 10,000 entries): the follower's two steps, the
file read and imported (`Mirror.catch_up`, 8 MiB at a time) and its entries written into
a new mirror session (`LiveSession.mirror_in_memory`: the tree and the figure; the file
written after the answer), against
`json.loads` of the same lines; CPU time, best of 3. Goal (issue 28): ≥ 50% of json.loads's
speed. Where no report anchors the figure, DESIGN's figure rule counts the context before the
figure is shown: "counted first, at best" is json.loads beside json.loads plus counting that
context alone (`count_message`, within 1.2x raw tiktoken: bench_counting.py), the most a first
read of such a transcript could reach with nothing else to do. `--next-reads` measures the rounds after it, on pi's sessions of 1,000 and 10,000
entries growing two lines at a time: what a round costs should not grow with the transcript.

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
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextd.follow.mirror import Mirror
from contextd.model import MirrorSource, Settings
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store
from contextd.tokens import count_message
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


def cpu(action: Callable[[], Any]) -> tuple[float, Any]:
    began = time.process_time()
    made = action()
    return time.process_time() - began, made


def first_read(agent: str, path: Path, scratch: Path) -> dict[str, float]:
    """One first read of `path` as the follower does it: read and import, the entries taken
    into the mirror until it answers with its figure (`usage_body`, what `session/state` and
    `tokenUsage` carry); then what follows the announcement: the entries appended to the
    mirror's file, how far the transcript was read saved, and the rest of its entries
    counted (the follower's background task)."""
    mirror = Mirror(agent, str(path), "/bench", scratch / "state")  # type: ignore[arg-type]
    sessions = SessionManager(Store(scratch / "data"), Settings(), SilentEvents())
    try:
        session, spent = follow_round(agent, path, mirror, sessions, None)
        counting, _ = cpu(session.settle_counts)
        figure = session.usage_body()
        assert figure["tokens"] == session.tokens
        context = session.context_messages()
        count_message(context[0], COUNTING_FLOOR_ENCODING)  # the encoding built before the clock starts
        context_counted, _ = cpu(lambda: [count_message(message, COUNTING_FLOOR_ENCODING) for message in context])
    finally:
        sessions.close_all()
    return {
        **spent, "counting": counting + spent["file"] + spent["state"], "tokens": figure["tokens"],
        "context counted": context_counted,
    }


COUNTING_FLOOR_ENCODING = "o200k_base"
"""What `first_reads`' bound counts the context with (tiktoken; every encoding costs alike)."""


def follow_round(
    agent: str, path: Path, mirror: Mirror, sessions: SessionManager, session: LiveSession | None
) -> tuple[LiveSession, dict[str, float]]:
    """What the follower does when `path` grew: read and import, the entries taken into the
    mirror (`session`, made if None) until it answers with its figure, then the entries
    appended to its file and how far the transcript was read saved (CPU seconds of each)."""
    stat = path.stat()
    stamp = (stat.st_size, stat.st_mtime_ns)
    spent = {"read": 0.0, "write": 0.0, "file": 0.0, "state": 0.0}
    while mirror.seen != stamp:
        reading, change = cpu(lambda: mirror.catch_up(stamp))
        spent["read"] += reading
        if change is None:
            break
        began = time.process_time()
        if session is None:
            session = sessions.create_mirror(mirror.session_id, "/bench", MirrorSource(agent=agent, path=str(path)))  # type: ignore[arg-type]
        fresh = [entry for entry in change.entries if entry.id not in session.tree.entries]
        session.mirror_in_memory(fresh, change.leaf_id, change.pending_usage)
        session.usage_body()
        spent["write"] += time.process_time() - began
        spent["file"] += cpu(session.write_mirrored)[0]
        spent["state"] += cpu(mirror.written)[0]
    assert session is not None
    return session, spent


def next_reads(rounds: int = 20) -> None:
    """The follower's rounds after a first read, on pi's own sessions of bench_load.py: two
    lines appended at a time (the next ones pi would write), each read, mirrored and saved
    as the follower does; medians of CPU ms, and the size of the importer's saved state."""
    from tests.corpus import pi_lines

    print(f"a follower's round after the first read (two lines), CPU ms, median of {rounds}; load average {os.getloadavg()[0]:.1f}")
    print()
    print("| entries | read+import | to the figure | file | saved state | saved state KB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in (1_000, 10_000):
        lines = [line + "\n" for line in pi_lines(size + 2 * rounds)]
        with tempfile.TemporaryDirectory(prefix="contextd-next-read-") as root:
            scratch = Path(root)
            path = scratch / "pi.jsonl"
            path.write_text("".join(lines[: size + 1]), encoding="utf-8")  # the header, then `size` entries
            mirror = Mirror("pi", str(path), "/bench", scratch / "state")
            sessions = SessionManager(Store(scratch / "data"), Settings(), SilentEvents())
            session, _ = follow_round("pi", path, mirror, sessions, None)
            session.settle_counts()
            spent: dict[str, list[float]] = {}
            for start in range(size + 1, size + 1 + 2 * rounds, 2):
                with open(path, "a", encoding="utf-8") as transcript:
                    transcript.write("".join(lines[start : start + 2]))
                session, times = follow_round("pi", path, mirror, sessions, session)
                session.settle_counts()
                for step, seconds in times.items():
                    spent.setdefault(step, []).append(seconds * 1000)
            medians = {step: sorted(values)[len(values) // 2] for step, values in spent.items()}
            state_kb = mirror.importer_path.stat().st_size / 1000
            sessions.close_all()
        print(
            f"| {size:,} | {medians['read']:.2f} | {medians['write']:.2f} | {medians['file']:.2f} "
            f"| {medians['state']:.2f} | {state_kb:,.0f} |"
        )


def first_reads(only: str | None) -> None:
    import gc
    import shutil

    from bench_load import write_pi_session
    from contextd.collector import collector_paused

    with tempfile.TemporaryDirectory(prefix="contextd-first-read-") as root:
        scratch = Path(root)
        files = []
        for name in NAMES:
            path = scratch / name.removesuffix(".gz")
            path.write_bytes(read_bytes(name))
            files.append((agent_of(name), path))
        files.append(("pi", write_pi_session(scratch, 10_000)))
        print(f"first read of a followed transcript, CPU ms, best of 3; load average {os.getloadavg()[0]:.1f}")
        print()
        print(
            "| transcript | MB | json.loads MB/s | first read MB/s | vs json.loads | fully counted MB/s | vs json.loads "
            "| read+import ms | write ms | after the answer ms | counted first, at best |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for agent, path in files:
            if only and only not in path.stem:
                continue
            lines = path.read_bytes().splitlines()
            floors, runs = [], []
            for attempt in range(3):
                gc.collect()
                with collector_paused():
                    floors.append(cpu(lambda: [json.loads(line) for line in lines])[0])
                work = scratch / f"work-{attempt}"
                runs.append(first_read(agent, path, work))
                shutil.rmtree(work)
            floor = min(floors)
            best = min(runs, key=lambda run: run["read"] + run["write"])
            answered = best["read"] + best["write"]
            counted = answered + best["counting"]
            megabytes = path.stat().st_size / 1e6
            print(
                f"| {path.stem} | {megabytes:.1f} | {megabytes / floor:.0f} | {megabytes / answered:.1f} | {floor / answered:.0%} "
                f"| {megabytes / counted:.1f} | {floor / counted:.0%} "
                f"| {best['read'] * 1000:,.0f} | {best['write'] * 1000:,.0f} | {best['counting'] * 1000:,.0f} "
                f"| {floor / (floor + best['context counted']):.0%} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--intervals", default="1.0,0.25")
    parser.add_argument("--first-read", action="store_true", help="measure the first read of each transcript instead")
    parser.add_argument("--only", help="with --first-read: only the transcripts whose name holds this")
    parser.add_argument("--next-reads", action="store_true", help="measure a follower's rounds after a first read instead")
    args = parser.parse_args()
    if args.first_read:
        first_reads(args.only)
        return
    if args.next_reads:
        next_reads()
        return
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
