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
reports, signed median, median and 90th percentile of the absolute error.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from statistics import median

from contextd.compaction.context import standing_instructions, visible_entries
from contextd.importers import IMPORTERS, save
from contextd.model import Entry, MessageEntry, ModelChangeEntry, Settings
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store
from contextd.tokens import resolve_model
from contextd.tokens.calibration import CalibrationLedger, prompt_tokens
from contextd.tokens.context_size import context_tokens_of, reports_context
from contextd.tokens.unseen import learn_unseen

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.corpus
from tests.corpus import NAMES, agent_of, read_text  # noqa: E402


def imported(data_dir: Path, name: str) -> LiveSession:
    session_id, _ = save(IMPORTERS[agent_of(name)](read_text(name).splitlines()), data_dir, workspace="/bench", name=None)
    return SessionManager(Store(data_dir), Settings(), SilentEvents()).get(session_id)


def drifts(session: LiveSession) -> Iterator[float]:
    """The signed error of the unanchored figure at each report that has a learned unseen part."""
    path, settings = session.path, session.settings
    model = resolve_model(settings.defaultModel, settings.models)
    ledger = CalibrationLedger.start(session._tokenizer_of, model.tokenizer)
    for index, entry in enumerate(path):
        if isinstance(entry, ModelChangeEntry):
            model = resolve_model(entry.model, settings.models)
        if isinstance(entry, MessageEntry) and reports_context(entry.message) and entry.message.usage is not None:
            factor = ledger.factor(model.tokenizer, model.calibration_prior)
            figure = unanchored(session, path[:index], factor)
            if figure is not None:
                reported = prompt_tokens(entry.message.usage)
                yield (figure - reported) / reported
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
    print(f"{'transcript / agent':<40} {'reports':>8} {'signed med':>11} {'median':>10} {'p90':>10}")
    by_agent: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in NAMES:
            errors = list(drifts(imported(Path(scratch) / name, name)))
            by_agent.setdefault(agent_of(name), []).extend(errors)
            print(line(name.removesuffix(".jsonl.gz"), errors))
    print()
    for agent, errors in sorted(by_agent.items()):
        print(line(f"all {agent}", errors))


if __name__ == "__main__":
    main()
