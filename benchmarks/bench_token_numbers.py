"""The token numbers contextd reports on real sessions, before and after a compaction.

    python benchmarks/bench_token_numbers.py

For the demo session and each real transcript of tests/fixtures/real (imported as `contextd
import` does), with default settings and the offline summarizer: the calibration factor the
session's own usage taught (and the family's prior), the figure before, the dry run's
estimate and upper bound, and the figure the compaction actually ended at. Targets: the
estimate within 30% of the result; the figure after a compaction well below the figure
before (it used to freeze at the last kept answer's usage).

Then, per transcript, the figure error against the provider (issue 30): for every compaction
the agent made itself, the figure contextd showed right after it (the transcript imported up
to the next answer) against the prompt the provider reported for that answer, with and
without the learned unseen part (system prompt, tool schemas); and over every report, the
figure the session would show if no report anchored it (counted context plus the unseen
part) against the report. Before a transcript taught its unseen part, the figure takes its
agent's prior, derived as `UNSEEN_PRIORS` is but leaving that transcript out. Target: within
15% right after every compaction.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from importlib import resources
from pathlib import Path
from statistics import median

from contextd.importers import IMPORTERS, save
from contextd.model import CompactionEntry, Entry, Message, MessageEntry, Settings
from contextd.tokens.calibration import prompt_tokens
from contextd.compaction.context import standing_instructions, visible_entries
from contextd.tokens.context_size import context_tokens_of, reports_context
from contextd.tokens.unseen import ANY_MODEL, UNSEEN_PRIORS, first_unseen, learn_unseen
from contextd.session import (
    LiveSession,
    NothingToCompactError,
    SessionManager,
    SilentEvents,
)
from contextd.store import Store
from pydantic import TypeAdapter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.corpus
from tests.corpus import NAMES, agent_of, read_text  # noqa: E402


def manager(data_dir: Path) -> SessionManager:
    return SessionManager(Store(data_dir), Settings(), SilentEvents())


def transcript(data_dir: Path, file: str) -> LiveSession:
    lines = read_text(file).splitlines()
    session_id, _ = save(IMPORTERS[agent_of(file)](lines), data_dir, workspace="/bench", name=None)
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
        preview = asyncio.run(session.preview_compaction())
    except NothingToCompactError:
        return f"{head}  nothing to compact"
    result = asyncio.run(session.compact("manual")).tokensAfter
    error = 100 * (preview["tokensAfter"] - result) / result
    return (
        f"{head} {preview['tokensAfter']:>9,} {preview['tokensAfterMax']:>9,} {result:>9,} {error:>+6.1f}%"
    )


def predicted(session: LiveSession, before: list[Entry], prior: int) -> tuple[int, int]:
    """The figure no report anchors at the end of `before` (what the context holds, counted
    and calibrated), and the unseen part the session had learned by then (`prior` before it
    learned any)."""
    learned = learn_unseen(before, session.entry_tokens, session._pruned_tokens, calibration=session.calibration)
    unseen = learned.evidence.tokens(session.calibration) if learned.evidence else prior
    tokens_of = context_tokens_of(before, session.entry_tokens, session._pruned_tokens, calibration=session.calibration)
    counted = sum(tokens_of(entry) for entry in [*standing_instructions(before), *visible_entries(before)])
    return round(counted * session.calibration), unseen


def off_by(figure: int, reported: int) -> str:
    return f"{100 * (figure - reported) / reported:+.1f}%"


def figure_errors(name: str, session: LiveSession, prior: int) -> list[str]:
    """One line per agent compaction (figure after it against the next report), then the
    error over every report of the transcript; `prior` is the unseen part assumed before the
    transcript taught one."""
    path, rows, compacted, errors = session.path, [], False, []
    for index, entry in enumerate(path):
        if isinstance(entry, CompactionEntry):
            compacted = True
            continue
        if not (isinstance(entry, MessageEntry) and reports_context(entry.message) and entry.message.usage):
            continue
        reported = prompt_tokens(entry.message.usage)
        counted, unseen = predicted(session, path[:index], prior)
        if compacted:
            rows.append(
                f"{name:<44} {'compaction':<12} {reported:>9,} {counted:>9,} {off_by(counted, reported):>8} "
                f"{counted + unseen:>9,} {off_by(counted + unseen, reported):>8}"
            )
        elif unseen:
            errors.append(abs(counted + unseen - reported) / reported)
        compacted = False
    if errors:
        errors.sort()
        rows.append(
            f"{name:<44} {'every report':<12} {len(errors):>9} reports: median {100 * errors[len(errors) // 2]:.1f}%, "
            f"90th percentile {100 * errors[int(0.9 * len(errors))]:.1f}%, max {100 * errors[-1]:.1f}%"
        )
    return rows


def prior_key(name: str, session: LiveSession) -> tuple[str, str] | None:
    """The `UNSEEN_PRIORS` key a transcript's agent and model fall under (None: no prior)."""
    agent = agent_of(f"{name}.jsonl.gz")
    keys = ((agent, session.model_info.tokenizer), (agent, ANY_MODEL))
    return next((key for key in keys if key in UNSEEN_PRIORS), None)


def priors_without_each(imported: dict[str, LiveSession]) -> dict[str, int]:
    """For each transcript, the prior derived as `UNSEEN_PRIORS` is (the median of the first
    unseen part each transcript of its agent and family taught) from every other transcript:
    a transcript never teaches the prior it is scored with."""
    taught = {}
    for name, session in imported.items():
        evidence = first_unseen(session.path, session.entry_tokens, session._pruned_tokens, calibration=session.calibration)
        taught[name] = (prior_key(name, session), evidence.tokens(session.calibration) if evidence else None)
    priors = {}
    for name, (key, _) in taught.items():
        values = [value for other, (other_key, value) in taught.items() if other != name and other_key == key and value]
        priors[name] = round(median(values)) if key is not None and values else 0
    return priors


def main() -> None:
    print("default settings (keepRecentTokens 20000), offline summarizer; tokens as contextd reports them")
    print()
    print(f"{'session':<36} {'model':<26} {'prior':>6} {'calib':>6} {'before':>9} {'estimate':>9} {'max':>9} {'after':>9} {'error':>7}")
    with tempfile.TemporaryDirectory() as scratch:
        print(row("demo", demo(Path(scratch) / "demo")))
        imported = {
            file.removesuffix(".jsonl.gz"): transcript(Path(scratch) / file, file)
            for file in NAMES
        }
        priors = priors_without_each(imported)
        errors = [line for name, session in imported.items() for line in figure_errors(name, session, priors[name])]
        for name, session in imported.items():
            print(row(name, session))
    print()
    print("the figure against the provider's next report: right after each of the agent's own compactions, and")
    print("over every report (what the figure would say with no report to anchor it); counted = without the unseen part")
    print()
    print(f"{'session':<44} {'where':<12} {'reported':>9} {'counted':>9} {'error':>8} {'figure':>9} {'error':>8}")
    print("\n".join(errors))


if __name__ == "__main__":
    main()
