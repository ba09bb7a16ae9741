"""Cold open of a session against its floor (`json.loads`) and against pi's `SessionManager.open`.

    python benchmarks/bench_load.py [--sizes 1000,10000,50000] [--rounds 5]

The sessions are pi's own: the entries of the pi transcripts of `tests/fixtures/real/`,
repeated in a chain (new ids; tool call ids made unique per repetition) until the session
holds the size, written in pi's format (session v3, one JSON line per entry, as pi writes
them). Each is imported into a throwaway contextd data directory as `contextd import` does,
then opened once and closed, as a daemon leaves a session.

CPU time, not wall time (the machine is shared: another process's burst does not count),
per round and size, in alternation: `json.loads` of every line of contextd's file (the
floor, collector paused as a load pauses it), contextd's cold open of that session (a new
`SessionManager`: the file parsed, the tree, the kept counts, the figure; closing not timed),
and pi's `SessionManager.open` of the pi file, timed inside one long-lived node process
running pi 0.73.1 from the npm package `tests/agents/install.sh` installs (nothing is
downloaded here: without it the pi column says it was not run). Best of `--rounds` each.
Goals (issue 28): contextd ≤ 3x the floor, and faster than pi, at 10,000 and 50,000 entries.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from contextd.collector import collector_paused
from contextd.importers import IMPORTERS, save
from contextd.model import Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from report import load_average, table_header

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.corpus
from tests.corpus import pi_lines  # noqa: E402

SIZES = (1_000, 10_000, 50_000)
FLOOR_GOAL = 3.0
PI_PACKAGE = "@mariozechner/pi-coding-agent@0.73.1"
PI_DIR = Path(os.environ.get("CONTEXTD_AGENTS_DIR", Path.home() / ".cache/contextd/agents")) / "pi"

PI_OPENER = """
const { pathToFileURL } = require("node:url");
const readline = require("node:readline");
(async () => {
  const pi = await import(pathToFileURL(process.argv[1]).href);
  const lines = readline.createInterface({ input: process.stdin });
  for await (const path of lines) {
    const began = process.cpuUsage();
    const session = pi.SessionManager.open(path);
    const used = process.cpuUsage(began);
    const ms = (used.user + used.system) / 1000;
    process.stdout.write(JSON.stringify({ ms, entries: session.getEntries().length }) + "\\n");
  }
})();
"""


# --- sessions in pi's format ------------------------------------------------------------------


def write_pi_session(directory: Path, size: int) -> Path:
    path = directory / f"pi-{size}.jsonl"
    path.write_text("".join(line + "\n" for line in pi_lines(size)), encoding="utf-8")
    return path


def imported(data_dir: Path, pi_file: Path) -> str:
    """The pi session as a contextd session, opened once and closed as a daemon leaves it."""
    with open(pi_file, encoding="utf-8") as lines:
        session_id, _ = save(IMPORTERS["pi"](lines), data_dir, workspace="/bench", name=None)
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    sessions.get(session_id)
    sessions.close_all()
    return session_id


# --- pi ---------------------------------------------------------------------------------------


def pi_entry_module() -> Path | None:
    """pi's package entry point when the pinned version is installed, else None."""
    installed = (PI_DIR / ".installed").read_text().strip() if (PI_DIR / ".installed").is_file() else ""
    entry = PI_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "index.js"
    return entry if installed == PI_PACKAGE and entry.is_file() else None


class PiOpener:
    """One node process running pi, opening the files it is given with `SessionManager.open`."""

    def __init__(self, module: Path) -> None:
        self.process = subprocess.Popen(
            ["node", "-e", PI_OPENER, str(module)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def open(self, path: Path) -> tuple[float, int]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"{path}\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return answer["ms"] / 1000, answer["entries"]

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(timeout=30)


# --- measuring --------------------------------------------------------------------------------


def cpu_seconds(action: Callable[[], object]) -> float:
    """CPU time of `action`, not of freeing what it returned (that happens after)."""
    began = time.process_time()
    made = action()  # noqa: F841 (kept alive until the time is taken)
    return time.process_time() - began


def parse_floor(lines: list[bytes]) -> float:
    """`json.loads` of every line, the collector paused as a load pauses it."""
    gc.collect()
    with collector_paused():
        return cpu_seconds(lambda: [json.loads(line) for line in lines])


def contextd_open(data_dir: Path, session_id: str) -> float:
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    try:
        return cpu_seconds(lambda: sessions.get(session_id))
    finally:
        sessions.close_all()  # not timed: closing is no part of opening


def measure(sizes: list[int], rounds: int, scratch: Path, pi: PiOpener | None) -> list[dict[str, Any]]:
    prepared = []
    for size in sizes:
        pi_file = write_pi_session(scratch, size)
        data_dir = scratch / f"data-{size}"
        session_id = imported(data_dir, pi_file)
        ours = next(data_dir.glob(f"workspaces/*/sessions/{session_id}.jsonl"))
        prepared.append({"size": size, "pi_file": pi_file, "data_dir": data_dir, "id": session_id, "ours": ours})
        if pi is not None:
            pi.open(pi_file)  # warm pi's code up once, as ours is imported before timing
    times: dict[int, dict[str, list[float]]] = {size: {"floor": [], "ours": [], "pi": []} for size in sizes}
    for _ in range(rounds):
        for row in prepared:
            size = row["size"]
            times[size]["floor"].append(parse_floor(row["ours"].read_bytes().splitlines()))
            times[size]["ours"].append(contextd_open(row["data_dir"], row["id"]))
            if pi is not None:
                times[size]["pi"].append(pi.open(row["pi_file"])[0])
    return [
        {
            **row,
            "bytes": row["ours"].stat().st_size,
            "pi_bytes": row["pi_file"].stat().st_size,
            **{name: min(values) if values else None for name, values in times[row["size"]].items()},
        }
        for row in prepared
    ]


def report(results: list[dict[str, Any]], rounds: int, pi_note: str) -> None:
    load = load_average()
    print(f"cold open, CPU ms, best of {rounds} alternating rounds; {date.today()}; load average {load}; {pi_note}")
    print()
    print(table_header(
        "entries", "contextd file", "pi file", "json.loads ms", "contextd open ms", "pi open ms", "vs json.loads", "vs pi",
        text_columns=0,
    ))
    for row in results:
        pi_ms = f"{row['pi'] * 1000:,.1f}" if row["pi"] is not None else "not run"
        vs_pi = f"{row['ours'] / row['pi']:.2f}x" if row["pi"] is not None else "not run"
        print(
            f"| {row['size']:,} | {row['bytes'] / 1e6:.1f} MB | {row['pi_bytes'] / 1e6:.1f} MB "
            f"| {row['floor'] * 1000:,.1f} | {row['ours'] * 1000:,.1f} | {pi_ms} "
            f"| {row['ours'] / row['floor']:.2f}x | {vs_pi} |"
        )
    print(f"\ngoals: ≤ {FLOOR_GOAL}x json.loads, < 1x pi's open, at 10,000 and 50,000 entries")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    module = pi_entry_module()
    pi = PiOpener(module) if module is not None else None
    pi_note = (
        f"pi: {PI_PACKAGE} in node {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}"
        if pi is not None
        else f"pi anchor NOT RUN: {PI_PACKAGE} is not installed in {PI_DIR} (tests/agents/install.sh installs it)"
    )
    if pi is None:
        print(pi_note, file=sys.stderr)
    try:
        with tempfile.TemporaryDirectory(prefix="contextd-load-") as scratch:
            results = measure([int(size) for size in args.sizes.split(",")], args.rounds, Path(scratch), pi)
    finally:
        if pi is not None:
            pi.close()
    report(results, args.rounds, pi_note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
