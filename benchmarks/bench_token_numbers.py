"""The token numbers contextd reports on real sessions, before and after a compaction.

    python benchmarks/bench_token_numbers.py

For the demo session and each real transcript of tests/fixtures/real (imported as `contextd
import` does), with default settings and the offline summarizer: the calibration factor the
session's own usage taught (and the family's prior), the figure before, the dry run's
estimate and upper bound, and the figure the compaction actually ended at. Targets: the
estimate within 30% of the result; the figure after a compaction well below the figure
before (it used to freeze at the last kept answer's usage).
"""

from __future__ import annotations

import asyncio
import gzip
import tempfile
from importlib import resources
from pathlib import Path

from contextd.importers import IMPORTERS, save
from contextd.model import Message, Settings
from contextd.session import (
    LiveSession,
    NothingToCompactError,
    SessionManager,
    SilentEvents,
)
from contextd.store import Store
from pydantic import TypeAdapter

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "real"
AGENTS = {"claude-code": "claude-code", "codex": "codex", "pi": "pi"}


def manager(data_dir: Path) -> SessionManager:
    return SessionManager(Store(data_dir), Settings(), SilentEvents())


def transcript(data_dir: Path, path: Path) -> LiveSession:
    agent = next(prefix for prefix in AGENTS if path.name.startswith(prefix))
    with gzip.open(path, "rt", encoding="utf-8") as file:
        lines = file.read().splitlines()
    session_id, _ = save(IMPORTERS[agent](lines), data_dir, workspace="/bench", name=None)
    return manager(data_dir).get(session_id)


def demo(data_dir: Path) -> LiveSession:
    text = resources.files("contextd").joinpath("demo", "session.jsonl").read_text(encoding="utf-8")
    adapter = TypeAdapter(Message)
    session = manager(data_dir).create("/bench")
    session.append_messages([adapter.validate_json(line) for line in text.splitlines() if line.strip()])
    return session


def row(name: str, session: LiveSession) -> str:
    prior = session.model_info.calibration_prior
    prior_text = "exact" if prior is None else f"{prior:.2f}"
    head = f"{name:<36} {session.model_id[:26]:<26} {prior_text:>6} {session.calibration:>6.3f} {session.tokens:>9,}"
    try:
        preview = session.preview_compaction()
    except NothingToCompactError:
        return f"{head}  nothing to compact"
    result = asyncio.run(session.compact("manual")).tokensAfter
    error = 100 * (preview["tokensAfter"] - result) / result
    return (
        f"{head} {preview['tokensAfter']:>9,} {preview['tokensAfterMax']:>9,} {result:>9,} {error:>+6.1f}%"
    )


def main() -> None:
    print("default settings (keepRecentTokens 20000), offline summarizer; tokens as contextd reports them")
    print()
    print(f"{'session':<36} {'model':<26} {'prior':>6} {'calib':>6} {'before':>9} {'estimate':>9} {'max':>9} {'after':>9} {'error':>7}")
    with tempfile.TemporaryDirectory() as scratch:
        print(row("demo", demo(Path(scratch) / "demo")))
        for path in sorted(REAL.glob("*.jsonl.gz")):
            print(row(path.name.removesuffix(".jsonl.gz"), transcript(Path(scratch) / path.name, path)))


if __name__ == "__main__":
    main()
