"""What one open session's figure is made from: its data, its entries' token counts (now, or
later for a mirror's write), the calibration learned from them (or kept beside the file:
session/counts.py), the model it talks to and that model's window.

The figure made of them lives in figure.py; appends and mirrors in state.py.
"""

from __future__ import annotations

import asyncio
import weakref
from abc import ABC, abstractmethod
from dataclasses import replace
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from contextd.compaction.context import latest_compaction_index
from contextd.model import CompactionEntry, Entry, IdleSettings, SessionHeader, Settings, Usage
from contextd.session.counts import Kept, KeptFigures, cold_records, keep_counts, read_counts
from contextd.session.deferred_counts import CountsOnDemand, PendingCounts, count_entries
from contextd.session.events import SessionEvents
from contextd.store import EntryTree, SessionFile
from contextd.tokens import count_entry, resolve_model
from contextd.tokens.calibration import CalibrationLedger, Evidence, Since, learn
from contextd.tokens.context_size import TokenFigure, largest_report
from contextd.tokens.registry import ModelInfo, best_match
from contextd.tokens.unseen import UnseenEvidence, UnseenState

if TYPE_CHECKING:
    from contextd.session.running import RunningCompaction


def live_from(path: Sequence[Entry]) -> int:
    """Where the live context begins on `path`: its latest compaction's first kept entry (the
    compaction itself when it kept none), the root without one. What comes before is only
    read whole by a request that asks for it (see `EntryTree.keep_cold`)."""
    compaction_at = latest_compaction_index(path)
    if compaction_at is None:
        return 0
    compaction = path[compaction_at]
    assert isinstance(compaction, CompactionEntry)
    kept = next((index for index in range(compaction_at) if path[index].id == compaction.firstKeptEntryId), None)
    return compaction_at if kept is None else kept


class CountingState(ABC):
    """One open session's file, tree and model, and its entries' counts and calibration
    (the figure made of them: figure.py)."""

    def __init__(
        self, file: SessionFile, tree: EntryTree, settings: Settings, events: SessionEvents, kept: Kept | None = None
    ) -> None:
        """`kept`: what was kept beside the file, for the file as it was read (session/counts.py;
        `NOTHING_KEPT` when none of it fits); None: not read yet, so the counts are read now."""
        self.file = file
        self.tree = tree
        self.settings = settings
        self.events = events
        self._entry_tokens: dict[str, int] = {}
        self._pending = PendingCounts()
        """A mirror's entries not counted yet (see deferred_counts.py); empty elsewhere."""
        self._counting: asyncio.Task[None] | None = None
        self._unwritten: list[Entry] = []
        """A mirror's entries in memory, not in its file yet (`mirror_in_memory`)."""
        self.model_id: str  # these three: `_use_model_in_force` below
        self.model_info: ModelInfo
        self._recorded_window: int | None
        self._path: list[Entry] = []
        self._name: str | None = None
        """The name the path gives (`_derive_name`), derived when the path is rebuilt, not
        on every append: an append's activity notification must not walk the path."""
        self._pending_calls: dict[str, str] = {}
        self._tokenizers: dict[str, str] = {}
        self._ledger: CalibrationLedger  # learned by _count_all, once every entry is counted
        self._figure = TokenFigure(0, 0, 1.0, anchored=False, exact=True)
        self._unseen = UnseenState(None, settled=True)
        self._unseen_learned_at: tuple[str | None, float] | None = None
        """The leaf and calibration factor `_unseen` was last learned whole at (by `learn_unseen`)."""
        self._kept_unseen: UnseenState | None = None
        """The unseen part as kept beside the file, for the load's first rebuild."""
        self._counted_parts = (0, 0)
        self._running: RunningCompaction | None = None
        self._recovering = False
        self._navigations = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._idle_handle: asyncio.TimerHandle | None = None
        self.idle_override: IdleSettings | None = None
        self.hand_off: Callable[[], Awaitable[Any]] | None = None
        """Set by the manager: starts a handoff of this session (strategy `handoff`)."""
        source = file.header.source
        self.source: dict[str, str] | None = source.model_dump() if source is not None else None
        """`{"agent", "path"}` of the transcript a mirrored session follows (its header's);
        None for sessions clients write. Listings and workspace activity carry it."""
        self.pending_usage: Usage | None = None
        """A mirror's answer the agent is still writing: its usage stands as the figure."""
        self._reports: tuple[dict[str | None, int], str | None, int] = ({}, None, -1)
        """A mirror's largest report per model (`ReportsByModel.add_to`), the model in force at its
        last node and how many nodes they cover: each write adds what it brings."""
        self._use_model_in_force()
        counting = self.model_info.counting
        self._count_all(kept.counts(counting) if kept else None, kept.figures_for(counting) if kept else None)
        self.rebuild()
        self._kept_unseen = None  # for this rebuild only

    # --- identity ---------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.file.session_id

    @property
    def header(self) -> SessionHeader:
        return self.file.header

    @property
    def leaf_id(self) -> str | None:
        return self.tree.leaf_id

    @property
    def path(self) -> list[Entry]:
        return self._path

    @property
    def read_only(self) -> bool:
        """A mirror of another agent's transcript: only the transcript writes to it."""
        return self.source is not None

    # --- what the figure provides (figure.py) -------------------------------------------

    @abstractmethod
    def rebuild(self, path: list[Entry] | None = None) -> None:
        """Recompute the path, pending tool calls and token figure from the tree."""

    @abstractmethod
    def settle_counts(self) -> None:
        """Count what is left uncounted, then recompute the figure."""

    # --- tokens -----------------------------------------------------------------------

    @property
    def entry_tokens(self) -> dict[str, int]:
        """Each entry's counted tokens; a mirror's entries not counted yet are counted first."""
        if self._pending:
            self.settle_counts()
        return self._entry_tokens

    @property
    def counts_pending(self) -> bool:
        """Whether entries a mirror's write took in are still to be counted."""
        return bool(self._pending)

    def _count_all(self, kept: dict[str, int] | None = None, figures: KeptFigures | None = None) -> None:
        """Every entry of the tree counted, or its count taken from those kept beside this very
        file (`kept`: those read with the file, else read now), and the calibration learned,
        or taken from the `figures` kept with them where they hold."""
        self._pending.clear()
        if kept is None:
            kept = read_counts(self.file.path, self.model_info.counting)
        entries = self.tree.entries
        if kept.keys() == entries.keys():  # every count kept (compared in C: no loop per entry)
            self._entry_tokens.update(kept)
        else:
            for entry in entries.values():
                tokens = kept.get(entry.id)
                self._entry_tokens[entry.id] = self._count(entry) if tokens is None else tokens
        kept_ledger = self._kept_ledger(figures) if figures is not None else None
        self._ledger = kept_ledger or self._learn()
        if kept_ledger is not None and figures is not None and figures.unseen is not None:
            calibration, evidence, settled = figures.unseen
            if calibration == self._calibration_so_far():  # what the unseen part was learned with
                self._kept_unseen = UnseenState(UnseenEvidence(*evidence) if evidence else None, settled)

    def _count_later(self, entries: Iterable[Entry]) -> None:
        """`entries`, just taken into the tree, counted when first needed (a mirror's write)."""
        self._pending.add_all(entries)

    def _recount_later(self) -> None:
        """Every entry counted again when first needed, and the calibration learned again
        (the counting changed)."""
        self._entry_tokens.clear()
        self._pending.clear()
        self._count_later(self.tree.entries.values())
        self._pending.relearn = True

    def _count_pending_now(self) -> None:
        """`settle_counts`'s counting: what is left uncounted, taken into the calibration
        (the figure not recomputed)."""
        counts = CountsOnDemand(self._entry_tokens, self._pending, self._count)
        for entry_id in list(self._pending.uncounted):
            counts[entry_id]
        unledgered, relearn = self._pending.unledgered, self._pending.relearn
        self._pending = PendingCounts()
        if relearn:
            self._ledger = self._learn()
        else:
            for entry in unledgered:  # file order: parents first
                self._ledger.add(entry, self._entry_tokens[entry.id])

    def count_in_background(self) -> None:
        """Count what a mirror's write left uncounted in a worker thread (one task at a time;
        anything that needs the counts before it is done counts them itself)."""
        if self._pending and (self._counting is None or self._counting.done()):
            self._counting = asyncio.get_running_loop().create_task(self._count_pending())
            self._tasks.add(self._counting)
            self._counting.add_done_callback(self._tasks.discard)

    async def _count_pending(self) -> None:
        while self._pending.uncounted:
            info, batch = self.model_info, self._pending.batch()
            counts = await asyncio.to_thread(count_entries, batch, info)
            if self.model_info.counting != info.counting:
                continue  # a model switch made these counts stale: all are pending again
            for entry, tokens in zip(batch, counts):
                if self._pending.uncounted.pop(entry.id, None) is not None:
                    self._entry_tokens[entry.id] = tokens
        self.settle_counts()

    def keep_counts(self) -> None:
        """Keep the counts beside the file as the session leaves memory, for its next load
        (those known: a mirror's next load counts the rest)."""
        if self.file.writable:
            live = {entry.id for entry in self._path[live_from(self._path) :]}
            cold = cold_records(self.tree.entries.values(), live)
            keep_counts(self.file.path, self.model_info.counting, self._entry_tokens, cold, self._figures_to_keep())

    def _count(self, entry: Entry) -> int:
        info = self.model_info
        return count_entry(entry, info.encoding, info.image_rule, info.image_scale)

    def _learn(self) -> CalibrationLedger:
        """The calibration evidence, derived from the session's own entries (see
        tokens/calibration.py): nothing to store, a restart derives the same."""
        ledger = learn(self.tree.nodes(), self.entry_tokens, self._tokenizer_of_held_weakly(), self._root_tokenizer())
        ledger.keep_only(self.tree.leaf_id, self.tree.path_to, self.entry_tokens)
        return ledger

    def _kept_ledger(self, figures: KeptFigures) -> CalibrationLedger | None:
        """The ledger as the session had it when it left memory (session/counts.py), where
        learning it again would give the same: the same leaf, and every model id resolved
        to the same tokenizer; None otherwise."""
        if figures.leaf != self.tree.leaf_id:
            return None
        evidence = {tokenizer: Evidence(*growth) for tokenizer, growth in figures.evidence.items()}
        leaf = (figures.leaf, Since(*figures.since)) if figures.leaf is not None and figures.since is not None else None
        ledger = CalibrationLedger.restored(
            self._tokenizer_of_held_weakly(), figures.rootTokenizer, dict(figures.resolved), evidence, leaf
        )
        if not self._learned_alike(ledger):
            return None
        ledger.keep_only(self.tree.leaf_id, self.tree.path_to, self.entry_tokens)
        return ledger

    def _figures_to_keep(self) -> KeptFigures | None:
        """What the next load of the file as it is may take instead of its walks (None: a
        mirror's entries not all counted or written, or the settings changed how a model
        resolves since the calibration was learned)."""
        ledger = self._ledger
        if self._pending or self._unwritten or not self._learned_alike(ledger):
            return None
        leaf, calibration = self.tree.leaf_id, self._calibration_so_far()
        since = ledger.state_at(leaf)
        unseen = self._unseen
        evidence = (unseen.evidence.prompt, unseen.evidence.counted) if unseen.evidence is not None else None
        return KeptFigures(
            leaf=leaf,
            rootTokenizer=ledger.root_tokenizer,
            resolved=ledger.resolved,
            evidence={tokenizer: (growth.reported, growth.counted) for tokenizer, growth in ledger.evidence.items()},
            since=(since.prompt, since.counted, since.tokenizer) if leaf is not None else None,
            unseen=(calibration, evidence, unseen.settled) if self._unseen_learned_at == (leaf, calibration) else None,
        )

    def _root_tokenizer(self) -> str:
        """The tokenizer in force before the tree names a model: the default model's."""
        return resolve_model(self.settings.defaultModel, self.settings.models).tokenizer

    def _learned_alike(self, ledger: CalibrationLedger) -> bool:
        """Whether learning the calibration again under the settings in force would give
        `ledger`: the same tokenizer before any model is named, and every model id resolved
        to the tokenizer it was resolved to then."""
        return ledger.root_tokenizer == self._root_tokenizer() and ledger.resolves_alike(self._tokenizer_of)

    def _relearn(self) -> None:
        """The calibration learned again from every entry (now, or with a mirror's entries
        left uncounted, once they are counted)."""
        if self._pending:
            self._pending.relearn = True
        else:
            self._ledger = self._learn()

    def _tokenizer_of_held_weakly(self) -> Callable[[str], str]:
        """`_tokenizer_of` for the ledger to keep: a session holding its own bound method
        refers to itself, and would leave memory only at a full pass of the collector."""
        session = weakref.ref(self)
        return lambda model_id: cast(CountingState, session())._tokenizer_of(model_id)

    def _tokenizer_of(self, model_id: str) -> str:
        # Asked for every answer on load: resolved once per model (until the settings change).
        tokenizer = self._tokenizers.get(model_id)
        if tokenizer is None:
            tokenizer = self._tokenizers[model_id] = resolve_model(model_id, self.settings.models).tokenizer
        return tokenizer

    @property
    def calibration(self) -> float:
        """What counted tokens are multiplied by for this model: 1.0 where counting is exact."""
        if self._pending:
            self.settle_counts()
        return self._calibration_so_far()

    def _calibration_so_far(self) -> float:
        """The calibration learned from the entries counted so far (all of them, but during a
        mirror's first read)."""
        info = self.model_info
        return self._ledger.factor(info.tokenizer, info.calibration_prior)

    # --- model ------------------------------------------------------------------------

    def _use_model_in_force(self) -> None:
        """The model the tree names last (with the window its agent recorded), else the
        default model: the one a load of the file talks to."""
        latest = self.tree.latest_model_change
        if latest is None:
            self._use_model(self.settings.defaultModel)
        else:
            self._use_model(latest.model, latest.contextWindow)

    def _use_model(self, model_id: str, recorded_window: int | None = None, reported: int | None = None) -> None:
        """`reported`: the largest report while the session talked to `model_id`, where the
        caller knows it (else the tree is walked for it)."""
        self.model_id = model_id
        self._recorded_window = recorded_window
        info = resolve_model(model_id, self.settings.models, recorded_window)
        self.model_info = info
        self._widen_window(largest_report(self.tree.nodes(), model_id) if reported is None else reported)

    def _widen_window(self, answered: int) -> None:
        """A window smaller than a context the model answered is wrong, where contextd
        assumed it (the registry, a transcript's record): it is raised to that context, so a
        session that worked never reads over 100%. A window the user set is their budget."""
        override = best_match(self.model_id, self.settings.models)
        if answered > self.model_info.context_window and not (override and override.contextWindow):
            self.model_info = replace(self.model_info, context_window=answered)

