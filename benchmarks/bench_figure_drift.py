"""How far the figure drifts from the provider's reports over whole real sessions, per agent.

    python benchmarks/bench_figure_drift.py

Each transcript of tests/fixtures/real is imported as `contextd import` does, then replayed
answer by answer: at every valid report, the figure contextd would show if no report
anchored it (what follows a compaction): the context counted and multiplied by the
calibration learned up to that answer, for the model in use then, plus the unseen part
learned up to then. Its error against the prompt the provider reported for that answer is
the drift: it says how well counting plus the learned part track the provider between
reports. Reports before a transcript taught any unseen part (the first report of each
session, and the stretches of files cut from longer sessions) are left out: there the
figure rests on a prior (see bench_token_numbers.py). Printed per transcript and per agent:
reports, signed median, median and 90th percentile of the absolute error. Then, per agent,
the same for the figure shown at the start of each turn (the user's message appended, no
report for it yet): the previous report plus what was counted since.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from statistics import median

from contextd.compaction.context import standing_instructions, visible_entries
from contextd.importers import IMPORTERS, save
from contextd.model import Entry, MessageEntry, ModelChangeEntry, Settings, UserMessage
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store
from contextd.tokens import resolve_model
from contextd.tokens.calibration import CalibrationLedger, prompt_tokens
from contextd.tokens.context_size import context_size, context_tokens_of, reports_context
from contextd.tokens.unseen import learn_unseen

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.corpus
from tests.corpus import NAMES, agent_of, read_text  # noqa: E402


def imported(data_dir: Path, name: str) -> LiveSession:
    session_id, _ = save(IMPORTERS[agent_of(name)](read_text(name).splitlines()), data_dir, workspace="/bench", name=None)
    return SessionManager(Store(data_dir), Settings(), SilentEvents()).get(session_id)


def drifts(session: LiveSession) -> Iterator[tuple[float, float | None]]:
    """At each report that has a learned unseen part, the signed error of the unanchored
    figure, and (at the first report after a user message: a turn's start) of the figure the
    session showed then, anchored on the previous report."""
    path, settings = session.path, session.settings
    model = resolve_model(settings.defaultModel, settings.models)
    ledger = CalibrationLedger.start(session._tokenizer_of, model.tokenizer)
    turn_start = False
    for index, entry in enumerate(path):
        if isinstance(entry, ModelChangeEntry):
            model = resolve_model(entry.model, settings.models)
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            turn_start = True
        if isinstance(entry, MessageEntry) and reports_context(entry.message) and entry.message.usage is not None:
            factor = ledger.factor(model.tokenizer, model.calibration_prior)
            figure = unanchored(session, path[:index], factor)
            if figure is not None:
                reported = prompt_tokens(entry.message.usage)
                shown = context_size(path[:index], session.entry_tokens, session._pruned_tokens, calibration=factor)
                at_turn_start = (shown.tokens - reported) / reported if turn_start and shown.anchored else None
                yield (figure - reported) / reported, at_turn_start
            turn_start = False
        ledger.add(entry, session.entry_tokens.get(entry.id, 0))


def unanchored(session: LiveSession, before: list[Entry], factor: float) -> int | None:
    """The figure at the end of `before` with no report to anchor it (None: no unseen part learned)."""
    evidence = learn_unseen(before, session.entry_tokens, session._pruned_tokens, calibration=factor).evidence
    if evidence is None:
        return None
    tokens_of = context_tokens_of(before, session.entry_tokens, session._pruned_tokens, calibration=factor)
    counted = sum(tokens_of(entry) for entry in [*standing_instructions(before), *visible_entries(before)])
    return round(counted * factor) + evidence.tokens(factor)


def line(label: str, errors: list[float]) -> str:
    if not errors:
        return f"{label:<40} {0:>8}  no report after a learned unseen part"
    absolute = sorted(abs(error) for error in errors)
    return (
        f"{label:<40} {len(errors):>8} {100 * median(errors):>+10.1f}% {100 * median(absolute):>9.1f}% "
        f"{100 * absolute[int(0.9 * len(absolute))]:>9.1f}%"
    )


def main() -> None:
    every: dict[str, list[float]] = {}
    turn_starts: dict[str, list[float]] = {}
    print("every report: the figure with no report to anchor it")
    print(f"{'transcript / agent':<40} {'reports':>8} {'signed med':>11} {'median':>10} {'p90':>10}")
    with tempfile.TemporaryDirectory() as scratch:
        for name in NAMES:
            errors = list(drifts(imported(Path(scratch) / name, name)))
            every.setdefault(agent_of(name), []).extend(error for error, _ in errors)
            turn_starts.setdefault(agent_of(name), []).extend(error for _, error in errors if error is not None)
            print(line(name.removesuffix(".jsonl.gz"), [error for error, _ in errors]))
    print()
    for agent, errors in sorted(every.items()):
        print(line(f"all {agent}", errors))
    print()
    print("the first report of each turn: the figure shown when the user's message arrived (the previous report")
    print("plus what was counted since)")
    for agent, errors in sorted(turn_starts.items()):
        print(line(f"all {agent}", errors))


if __name__ == "__main__":
    main()
