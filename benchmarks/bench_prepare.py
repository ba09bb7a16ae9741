"""Compaction preparation against pi's, on pi's own sessions, like for like.

    python benchmarks/bench_prepare.py [--keep 20000] [--rounds 15] [--runs 20]

For each pi session of tests/fixtures/real (written by pi 0.73.1's predecessors, session
format v3), both sides prepare a compaction of the session's current path with the same
`keepRecentTokens`:

- contextd: the transcript imported as `contextd import` does and loaded as the daemon loads
  it; timed is `prepare_compaction` as a session calls it (cut point, file lists, the summary
  requests with their serialized prompts).
- pi: its own `prepareCompaction` on the session file opened by its own `SessionManager`,
  then `serializeConversation(convertToLlm(...))` of the history and of a split turn's prefix,
  what its summary requests send. Run in node from the pinned npm package that
  tests/agents/install.sh caches (~/.cache/contextd/agents/pi); nothing is downloaded here:
  without it the anchor is reported as not run.

Rounds alternate between the two sides (`--runs` preparations per session each); each time is
the median over every run of the CPU time the process spent (node's compiler and collector
threads included), so that on a shared machine the time the scheduler gives other processes
is left out. Beside the times, what each side prepares: the messages it
summarizes and the characters it serializes (pi's conversation text keeps tool-call arguments
whole; contextd's prompts cut them at 2,000 characters and add the task). Goal: ratio <= 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from contextd.compaction.prepare import CompactionPreparation, prepare_compaction
from contextd.importers import IMPORTERS, save
from contextd.model import Settings
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store
from report import load_average, table_header

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.corpus
from tests.corpus import NAMES, agent_of, read_bytes  # noqa: E402

PI_PACKAGE = "@mariozechner/pi-coding-agent@0.73.1"
AGENTS_DIR = Path(os.environ.get("CONTEXTD_AGENTS_DIR") or Path.home() / ".cache" / "contextd" / "agents")
PI_SCRIPT = Path(__file__).with_name("pi_prepare.mjs")


@dataclass
class Side:
    """One side's preparation of one session and its timings."""

    summarized: int
    serialized_chars: int
    times: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times)


def pi_package_dir() -> Path | None:
    """pi's package as tests/agents/install.sh left it, or None when it is not there."""
    folder = AGENTS_DIR / "pi"
    installed = folder / ".installed"
    if shutil.which("node") is None or not installed.is_file() or installed.read_text().strip() != PI_PACKAGE:
        return None
    return folder / "node_modules" / "@mariozechner" / "pi-coding-agent"


class PiPreparation:
    """pi's preparation in one node process, timed on request so rounds can alternate."""

    def __init__(self, package: Path, keep: int, files: list[Path]) -> None:
        self.process = subprocess.Popen(
            ["node", str(PI_SCRIPT), str(package), str(keep), *map(str, files)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self.sides = [self._side(json.loads(self._line())) for _ in files]

    @staticmethod
    def _side(info: dict) -> Side:
        return Side(info["summarized"], info["serializedChars"])

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("pi's preparation script stopped")
        return line

    def time(self, index: int, runs: int) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{index} {runs}\n")
        self.process.stdin.flush()
        self.sides[index].times += json.loads(self._line())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def prepare(session: LiveSession) -> CompactionPreparation:
    """What a session's compaction prepares (`CompactionJobs._prepare`)."""
    prepared = prepare_compaction(
        session.path, session.entry_tokens, session.settings, tokens_before=session.tokens, calibration=session.calibration
    )
    assert isinstance(prepared, CompactionPreparation), prepared
    return prepared


def ours(session: LiveSession) -> Side:
    prepared = prepare(session)
    return Side(len(prepared.summarize_entry_ids), sum(len(r.prompt) for r in prepared.requests))


def time_ours(session: LiveSession, side: Side, runs: int) -> None:
    for _ in range(runs):
        began = time.process_time()
        prepare(session)
        side.times.append((time.process_time() - began) * 1000)


def loaded(files: list[Path], data_dir: Path, keep: int) -> list[LiveSession]:
    settings = Settings.model_validate({"compaction": {"keepRecentTokens": keep}})
    sessions = SessionManager(Store(data_dir), settings, SilentEvents())
    result = []
    for file in files:
        imported = IMPORTERS["pi"](file.read_text(encoding="utf-8").splitlines())
        session_id, _ = save(imported, data_dir, workspace="/bench", name=None)
        result.append(sessions.get(session_id))
    return result


def compactable(files: list[Path], sessions: list[LiveSession]) -> list[tuple[Path, LiveSession]]:
    """The sessions that hold more than the kept part (the others have nothing to prepare)."""
    kept = []
    for file, session in zip(files, sessions, strict=True):
        prepared = prepare_compaction(session.path, session.entry_tokens, session.settings, calibration=session.calibration)
        if isinstance(prepared, CompactionPreparation):
            kept.append((file, session))
        else:
            print(f"{file.name}: nothing to compact at this keepRecentTokens ({prepared.message})")
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=int, default=20_000, help="keepRecentTokens on both sides")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=20, help="preparations per session per round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        files = []
        for name in (name for name in NAMES if agent_of(name) == "pi"):
            files.append(Path(scratch) / name.removesuffix(".gz"))
            files[-1].write_bytes(read_bytes(name))
        pairs = compactable(files, loaded(files, Path(scratch) / "data", args.keep))
        files = [file for file, _ in pairs]
        mine = [ours(session) for _, session in pairs]
        package = pi_package_dir()
        pi = PiPreparation(package, args.keep, files) if package else None
        for _ in range(args.rounds):
            for index, (_, session) in enumerate(pairs):
                time_ours(session, mine[index], args.runs)
                if pi:
                    pi.time(index, args.runs)
        if pi:
            pi.close()
    report(args, files, mine, pi.sides if pi else None)


def report(args: argparse.Namespace, files: list[Path], mine: list[Side], theirs: list[Side] | None) -> None:
    load = load_average()
    print(f"compaction preparation, keepRecentTokens {args.keep:,} on both sides; median CPU ms of "
          f"{args.rounds} alternating rounds x {args.runs} runs; load average {load}")
    if theirs is None:
        print(f"pi anchor NOT RUN: {PI_PACKAGE} is not installed in {AGENTS_DIR / 'pi'} "
              "(or node is missing); run tests/agents/install.sh")
    print()
    print(table_header("session", "contextd ms", "pi ms", "ratio", "summarized (contextd / pi)", "serialized chars (contextd prompts / pi conversation)"))
    for index, file in enumerate(files):
        our = mine[index]
        if theirs is None:
            print(f"| {file.stem} | {our.median_ms:.2f} | not run | — | {our.summarized} / — | {our.serialized_chars:,} / — |")
            continue
        pi = theirs[index]
        print(f"| {file.stem} | {our.median_ms:.2f} | {pi.median_ms:.2f} | {our.median_ms / pi.median_ms:.2f}x "
              f"| {our.summarized} / {pi.summarized} | {our.serialized_chars:,} / {pi.serialized_chars:,} |")


if __name__ == "__main__":
    main()
