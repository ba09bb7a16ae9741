"""The live state of one session: its tree, its context path, its model and its token figure.

`LiveState` appends entries and keeps the context's size current; the jobs, triggers, idle
timer and navigation that act on this state live in their own modules of this package.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from abc import ABC, abstractmethod
from collections import ChainMap
from dataclasses import replace
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from contextd.collector import collector_paused
from contextd.compaction.agent_points import ModelWindow
from contextd.compaction.context import (
    ContextItem,
    build_context,
    instructions_text,
    latest_compaction_index,
    open_tool_calls,
    opening_compaction,
    pruned_entry_ids,
    pruned_placeholder,
    visible_entries,
)
from contextd.compaction.short_summary import clip
from contextd.compaction.stats import compression_stats
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    Entry,
    IdleSettings,
    InstructionsEntry,
    LeafEntry,
    Message,
    MessageEntry,
    NON_NODE_TYPES,
    MirrorSource,
    ModelChangeEntry,
    SessionHeader,
    Settings,
    ToolResultMessage,
    Usage,
    UserMessage,
    is_node,
    message_text,
)
from contextd.results import (
    ChangeCause,
    CompactionFigures,
    FigureBreakdown,
    Figures,
    OpenResult,
    PruneFigures,
    StateResult,
    StatsResult,
    TokenUsage,
    WorkspaceActivity,
)
from contextd.session.agent_settings import mirror_compaction_point
from contextd.session.counts import Kept, KeptFigures, cold_records, keep_counts, read_counts
from contextd.session.deferred_counts import CountsOnDemand, PendingCounts, count_entries
from contextd.session.errors import InvalidAppend, ReadOnlyMirror
from contextd.session.events import SessionEvents
from contextd.session.index import timestamp
from contextd.store import EntryTree, SessionFile, new_entry_id
from contextd.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    count_entry,
    count_text,
    resolve_model,
)
from contextd.tokens.calibration import CalibrationLedger, Evidence, Since, learn
from contextd.tokens.context_size import (
    SUMMARIES,
    TokenFigure,
    breakdown,
    context_size,
    context_threshold,
    context_tokens_of,
    counted_parts,
    dropped_reasoning,
    largest_report,
    largest_reports,
    reports_context,
    usage_anchor,
)
from contextd.tokens.registry import best_match
from contextd.tokens.unseen import (
    UnseenEvidence,
    UnseenState,
    grew_past_counting,
    learn_unseen,
    reported_prompt,
    unseen_prior,
)

if TYPE_CHECKING:
    from contextd.session.running import RunningCompaction

SESSION_NAME_CHARS = 80
"""The longest name contextd gives a session (from a handoff's goal, a mirror's first request)."""


def check_tool_results(messages: Sequence[Message], pending: dict[str, str]) -> None:
    """Every toolResult must answer a toolCall that is still waiting for one."""
    pending = dict(pending)
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.id in pending:
                    raise InvalidAppend(
                        f"messages.{index}.content",
                        f"tool call id {call.id!r} is already waiting for its result",
                    )
                pending[call.id] = call.name
        elif (
            isinstance(message, ToolResultMessage)
            and pending.pop(message.toolCallId, None) is None
        ):
            raise InvalidAppend(
                f"messages.{index}.toolCallId",
                f"no tool call {message.toolCallId!r} is waiting for a result in this context",
            )


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


class LiveState(ABC):
    """One open session: its file, its tree, the model it talks to and the context's size."""

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
        self.model_id = settings.defaultModel
        self.model_info = resolve_model(self.model_id, settings.models)
        self._recorded_window: int | None = None
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
        """A mirror's largest report per model (`largest_reports`), the model in force at its
        last node and how many nodes they cover: each write adds what it brings."""
        latest = tree.latest_model_change
        if latest is not None:
            self._use_model(latest.model, latest.contextWindow)
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
    def name(self) -> str | None:
        return self._name

    def _derive_name(self) -> str | None:
        # A fork copies its parent's history, naming entries included: its own name is the
        # header's, unless it was renamed after the fork point.
        parent = self.header.parentSession
        inherited_through = parent.entryId if parent else None
        for entry in reversed(self._path) if self.tree.kinds.get("session_info") else ():
            if entry.id == inherited_through:
                break
            if entry.type == "session_info":  # a tag: this walks the whole path on each rebuild
                return entry.name
        if self.header.name is None and self.read_only:
            return self._first_request_line()
        return self.header.name

    def _first_request_line(self) -> str | None:
        """A mirror the agent gave no name is known by its first request, as agents list
        their sessions (first line of text, at most SESSION_NAME_CHARS)."""
        for entry in self._path:
            if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
                lines = [line.strip() for line in message_text(entry.message.content).splitlines() if line.strip()]
                if lines:  # a heading or tag opening the request says less than its first line of text
                    line = next((line for line in lines if not line.startswith(("#", "<"))), lines[0])
                    return clip(line, SESSION_NAME_CHARS)
        return None

    @property
    def path(self) -> list[Entry]:
        return self._path

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

    def settle_counts(self) -> None:
        """Count what is left uncounted and take it into the calibration, then recompute the
        figure (announced when that changed it)."""
        if not self._pending:
            return
        shown = self._usage_parts()
        self._count_pending_now()
        self.rebuild()
        self._announce_if_changed(shown)

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

    def _announce_if_changed(self, shown: tuple[object, ...]) -> None:
        """The figure announced where counting changed it from the `_usage_parts` `shown`."""
        if self._usage_parts() != shown:
            self.events.token_usage(self.usage())

    def _usage_parts(self) -> tuple[object, ...]:
        """What `usage_body` is made of that counting can change."""
        return self._figure, self.model_info, self._counted_parts, self._unseen_so_far()

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
        root = resolve_model(self.settings.defaultModel, self.settings.models).tokenizer
        ledger = learn(self.tree.nodes(), self.entry_tokens, self._tokenizer_of_held_weakly(), root)
        ledger.keep_only(self.tree.leaf_id, self.tree.path_to, self.entry_tokens)
        return ledger

    def _kept_ledger(self, figures: KeptFigures) -> CalibrationLedger | None:
        """The ledger as the session had it when it left memory (session/counts.py), where
        learning it again would give the same: the same leaf, and every model id resolved
        to the same tokenizer; None otherwise."""
        root = resolve_model(self.settings.defaultModel, self.settings.models).tokenizer
        if figures.leaf != self.tree.leaf_id or figures.rootTokenizer != root:
            return None
        evidence = {tokenizer: Evidence(*growth) for tokenizer, growth in figures.evidence.items()}
        leaf = (figures.leaf, Since(*figures.since)) if figures.leaf is not None and figures.since is not None else None
        ledger = CalibrationLedger.restored(self._tokenizer_of_held_weakly(), root, dict(figures.resolved), evidence, leaf)
        if not ledger.resolves_alike(self._tokenizer_of):
            return None
        ledger.keep_only(self.tree.leaf_id, self.tree.path_to, self.entry_tokens)
        return ledger

    def _figures_to_keep(self) -> KeptFigures | None:
        """What the next load of the file as it is may take instead of its walks (None: a
        mirror's entries not all counted or written, or the settings changed how a model
        resolves since the calibration was learned)."""
        ledger = self._ledger
        if self._pending or self._unwritten or not ledger.resolves_alike(self._tokenizer_of):
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

    def _tokenizer_of_held_weakly(self) -> Callable[[str], str]:
        """`_tokenizer_of` for the ledger to keep: a session holding its own bound method
        refers to itself, and would leave memory only at a full pass of the collector."""
        session = weakref.ref(self)
        return lambda model_id: cast(LiveState, session())._tokenizer_of(model_id)

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

    def _pruned_tokens(self, tokens: int) -> int:
        """The tool result message that stands for a pruned one of `tokens` tokens."""
        return MESSAGE_OVERHEAD_TOKENS + count_text(pruned_placeholder(tokens), self.model_info.encoding)

    @property
    def unseen_tokens(self) -> int:
        """What the agent sends that contextd never sees (system prompt, tool schemas), as
        the provider's reports taught it (see tokens/unseen.py); before they teach, a
        mirror's agent's prior."""
        if self._pending:
            self.settle_counts()
        return self._unseen_so_far()

    def _unseen_so_far(self) -> int:
        evidence = self._unseen.evidence
        if evidence is None:
            return unseen_prior(self.source["agent"] if self.source else None, self.model_info.tokenizer)
        return evidence.tokens(self._calibration_so_far())

    def _tokens_of(self, path: Sequence[Entry]) -> Callable[[Entry], int]:
        return context_tokens_of(
            path, self.entry_tokens, self._pruned_tokens, calibration=self.calibration, pruned=self._pruned_ids(path)
        )

    def _pruned_ids(self, path: Sequence[Entry]) -> set[str]:
        """`pruned_entry_ids(path)`; a tree without prunes has none: no walk to find them
        (a mirror's figure is made at every round its transcript grows)."""
        return pruned_entry_ids(path) if self.tree.kinds.get("prune") else set()

    def _learn_unseen(self) -> None:
        kept, self._kept_unseen = self._kept_unseen, None  # a load's first rebuild: as kept, if it holds
        calibration = self.calibration
        self._unseen = kept or learn_unseen(self._path, self.entry_tokens, self._pruned_tokens, calibration=calibration)
        self._unseen_learned_at = (self.tree.leaf_id, calibration)

    def figure_of(self, path: Sequence[Entry], tokens_of: Callable[[Entry], int] | None = None) -> TokenFigure:
        return context_size(
            path,
            self.entry_tokens,
            self._pruned_tokens,
            calibration=self.calibration,
            exact=self.model_info.exact,
            unseen=self.unseen_tokens,
            tokens_of=tokens_of if tokens_of is not None else self._tokens_of(path),
        )

    def figure_with_compaction(self, compaction: CompactionEntry) -> TokenFigure:
        """The figure the context would have with `compaction` (not yet written) as its leaf."""
        self.entry_tokens[compaction.id] = self._count(compaction)
        try:
            return self.figure_of([*self._path, compaction])
        finally:
            del self.entry_tokens[compaction.id]

    @property
    def tokens(self) -> int:
        """The figure as it stands: right after a mirror's first read, before its entries are
        all counted, the agent's latest report plus the count of what came after it."""
        return self._figure.tokens

    @property
    def threshold_tokens(self) -> int:
        return context_threshold(self.model_info.context_window, self.settings)

    def usage_body(self) -> dict[str, Any]:
        window = self.model_info.context_window
        return {
            "sessionId": self.session_id,
            "tokens": self._figure.tokens,
            "contextWindow": window,
            "percent": round(100 * self._figure.tokens / window, 1),
            "thresholdTokens": self.threshold_tokens,
            "source": self._figure.source,
            "calibration": self._figure.calibration,
            "model": self.model_id,
            "breakdown": breakdown(self._counted_parts, self._figure, self._unseen_so_far()).as_dict(),
            **({"agentCompaction": self._agent_compaction(self.source["agent"], window)} if self.source else {}),
        }

    def _agent_compaction(self, agent: str, window: int) -> dict[str, Any]:
        """A mirror's agent compacts it at its own point, which contextd works out from the
        agent's rules and configuration (it never compacts a mirror at its threshold)."""
        model = ModelWindow(window, self.model_info.max_output_tokens, recorded=window == self._recorded_window)
        return mirror_compaction_point(agent, self.header.workspace, model)

    # --- the context ------------------------------------------------------------------

    def rebuild(self, path: list[Entry] | None = None) -> None:
        """Recompute the path, pending tool calls and token figure from the tree (after any
        change that is not a plain append: load, compaction, prune, navigation, model).
        `path`: the path to the leaf, where the caller knows it without a walk."""
        self._path = path if path is not None else self.tree.path_to(self.tree.leaf_id)
        if not self._unwritten:  # a mirror's entries go cold once written (`write_mirrored`)
            self._keep_cold()
        self._name = self._derive_name()
        shown: tuple[object, ...] | None = None
        if self._pending and not self._figure_from_report():
            # No report anchors the figure: everything is counted anyway, here, so that the
            # walk below is the only one (`settle_counts` would rebuild from the root again).
            shown = self._usage_parts()
            self._count_pending_now()
        if not self._pending:
            kinds = self.tree.kinds
            # A tree without compactions and instructions shows its whole path, and one
            # without instructions and summaries has no counted parts: no walks to find them.
            visible = visible_entries(self._path) if kinds.get("compaction") or kinds.get("instructions") else self._path
            # The context's messages without building it: prunes and summaries call no tools.
            self._pending_calls = open_tool_calls(entry.message for entry in visible if entry.type == "message")
            self._learn_unseen()
            tokens_of = self._tokens_of(self._path)
            self._counted_parts = self._parts_counted(tokens_of, visible)
            self._figure = self.figure_of(self._path, tokens_of)
            self._widen_window(self._answered_context())
        if self.pending_usage is not None:
            self._figure = TokenFigure(
                self.pending_usage.context_tokens, 0, self._calibration_so_far(), anchored=True, exact=self.model_info.exact
            )
        if shown is not None:
            self._announce_if_changed(shown)

    def _keep_cold(self) -> None:
        """Entries out of the live context kept as their lines (see EntryTree.keep_cold)."""
        # Without a compaction in the tree all of the path is live: no walk to find where.
        self.tree.keep_cold(self._path, live_from(self._path) if self.tree.kinds.get("compaction") else 0)

    def _parts_counted(self, tokens_of: Callable[[Entry], int], visible: Sequence[Entry] | None = None) -> tuple[int, int]:
        """`counted_parts` of the path; a tree without instructions and summaries has none: no
        walks to find them (a mirror's figure is made at every round its transcript grows)."""
        if not any(self.tree.kinds.get(kind) for kind in ("instructions", *SUMMARIES)):
            return (0, 0)
        return counted_parts(self._path, tokens_of, visible)

    def _figure_from_report(self) -> bool:
        """A mirror's figure before its entries are counted: the agent's latest report after
        the latest compaction, plus what came after it, counted now (with the calibration and
        unseen part learned so far; `settle_counts` refines them). False where no report
        anchors the context: then everything visible is counted anyway."""
        if usage_anchor(self._path) is None:
            return False
        counts = CountsOnDemand(self._entry_tokens, self._pending, self._count)
        calibration = self._calibration_so_far()
        tokens_of = context_tokens_of(
            self._path, counts, self._pruned_tokens, calibration=calibration, pruned=self._pruned_ids(self._path)
        )
        self._counted_parts = self._parts_counted(tokens_of)
        self._figure = context_size(
            self._path, counts, self._pruned_tokens, calibration=calibration, exact=self.model_info.exact, tokens_of=tokens_of
        )
        return True

    def _answered_context(self) -> int:
        """The figure at the latest valid answer of the path (0 with none): a context the
        model answered, so one that fit its window, reported or not (a GLM model behind
        Claude Code reports zeros)."""
        for index in range(len(self._path) - 1, -1, -1):
            entry = self._path[index]
            if entry.type == "message" and entry.brief.role == "assistant" and not entry.brief.failed:
                return self._figure.tokens if index == len(self._path) - 1 else self.figure_of(self._path[: index + 1]).tokens
        return 0

    def context_items(self) -> list[ContextItem]:
        return build_context(self._path, self.entry_tokens)

    def context_messages(self) -> list[Message]:
        return [item.message for item in self.context_items()]

    def opening_compaction(self) -> CompactionEntry | None:
        """The compaction whose summary opens the context, for formats that replay it."""
        return opening_compaction(self._path)

    def instructions_text(self) -> str | None:
        """The system prompt: the instructions standing at the leaf, whatever was compacted."""
        return instructions_text(self._path)

    # --- appending --------------------------------------------------------------------

    def _write(self, entry_class: type[Any], **fields: Any) -> Entry:
        return self._write_all([entry_class(id="", parentId=None, **fields)])[0]

    def _write_all(self, drafts: Sequence[Entry]) -> list[Entry]:
        """Entries appended in order, each a child of the one before: stored all at once,
        and only then taken into memory, so a failed write (a full disk) leaves the
        session as it was, on disk and here."""
        taken: ChainMap[str, Entry] = ChainMap({}, self.tree.entries)  # not a copy: O(1) per append
        parent_id = self.tree.leaf_id
        entries = []
        for draft in drafts:
            entry = draft.model_copy(update={"id": new_entry_id(taken), "parentId": parent_id})
            taken[entry.id] = entry
            if is_node(entry):
                parent_id = entry.id
            entries.append(entry)
        self.file.append_all(entries)
        for entry in entries:
            self._take(entry)
        return entries

    def _take(self, entry: Entry) -> None:
        """An entry now stored joins the tree and the figures."""
        tokens = self._count(entry)
        self.tree.add(entry)
        self.entry_tokens[entry.id] = tokens
        if is_node(entry):
            self._ledger.add(entry, tokens)

    def _extend_path(self, entry: Entry) -> None:
        """The cheap path for a new leaf: update the figure without recounting the context."""
        self._path.append(entry)  # a message names nothing: the name (see `rebuild`) stands
        if isinstance(entry, MessageEntry):
            message = entry.message
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    self._pending_calls[call.id] = call.name
                prompt = reported_prompt(message)
                if prompt is not None and self._teaches_unseen(prompt):
                    self._learn_unseen()
                    if not reports_context(message):
                        # An overflow stating its prompt anchors nothing: the figure is
                        # counted again with the unseen part it taught.
                        self._figure = self.figure_of(self._path)
                        return
                if message.usage is not None and reports_context(message):
                    # A new anchor (the answer may also have taught the calibration).
                    self._figure = TokenFigure(
                        message.usage.context_tokens,
                        0,
                        self.calibration,
                        anchored=True,
                        exact=self.model_info.exact,
                    )
                    self._widen_window(self._figure.tokens)
                    return
            elif isinstance(message, ToolResultMessage):
                self._pending_calls.pop(message.toolCallId, None)
            elif self._figure.anchored:
                self._figure = replace(self._figure, reported=self._figure.reported - self._reasoning_dropped())
        self._figure = self._figure.plus(self.entry_tokens[entry.id]).calibrated(self.calibration)
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage) and not entry.message.failed:
            self._widen_window(self._figure.tokens)  # the model answered this context: it fit

    def _teaches_unseen(self, prompt: int) -> bool:
        """Whether an answer whose provider stated `prompt` teaches the unseen part: it is its
        stretch's first report, or its prompt outgrew the figure (tools the agent connected:
        tokens/unseen.py)."""
        expected = self._figure.tokens if self._figure.anchored else None
        return not self._unseen.settled or (expected is not None and grew_past_counting(prompt, expected))

    def _reasoning_dropped(self) -> int:
        """What a user message just appended makes the provider drop from the anchoring
        report's context: its turn's reasoning, if this is the first user message after it
        (see `dropped_reasoning`); walks back to the anchor only."""
        for index in range(len(self._path) - 2, -1, -1):
            entry = self._path[index]
            if entry.type == "message" and entry.brief.role == "user":
                return 0
            if entry.type == "message" and reports_context(entry.brief):
                return dropped_reasoning(self._path, index, self.entry_tokens, self.calibration)
        return 0

    def append_messages(self, messages: Sequence[Message]) -> list[str]:
        """Validate the whole batch first, so a bad message stores nothing."""
        check_tool_results(messages, self._pending_calls)
        entries = self._write_all([MessageEntry(id="", parentId=None, message=message) for message in messages])
        entry_ids = []
        for entry in entries:
            self._extend_path(entry)
            entry_ids.append(entry.id)
        self.announce("append")
        self.after_append(messages)
        return entry_ids

    def append_node(self, entry_class: type[Any], **fields: Any) -> Entry:
        """Append a non-message node (compaction, prune, summaries, model, name) and recount."""
        entry = self._write(entry_class, **fields)
        self.rebuild()
        return entry

    def set_instructions(self, text: str, source: str) -> str:
        """Instructions of `source` from the leaf on (an empty text withdraws them)."""
        entry = self.append_node(InstructionsEntry, text=text, source=source)
        self.announce("instructions")
        self.touch()
        return entry.id

    def append_annotation(self, entry_class: type[Any], **fields: Any) -> Entry:
        """A `label` or `leaf` line: it annotates the tree without growing it."""
        entry = self._write(entry_class, **fields)
        if isinstance(entry, LeafEntry):
            self.rebuild()
        return entry

    # --- mirrors ----------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """A mirror of another agent's transcript: only the transcript writes to it."""
        return self.source is not None

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyMirror(self.session_id)

    def mirror(self, entries: Sequence[Entry], leaf_id: str | None, pending: Usage | None) -> list[CompactionEntry]:
        """Write entries imported from the followed transcript as they are (ids, parents),
        then put the leaf where the transcript stands; returns the compactions written. A
        failed write (StorageFailed) leaves them in memory only: the session is to be closed
        (the follower does, and reads that part of the transcript again)."""
        compactions = self.mirror_in_memory(entries, leaf_id, pending)
        self.write_mirrored()
        return compactions

    def mirror_in_memory(
        self, entries: Sequence[Entry], leaf_id: str | None, pending: Usage | None
    ) -> list[CompactionEntry]:
        """`mirror`'s first half: the entries join the tree and the figure, not the file yet
        (`write_mirrored` appends them): a follower announces the figure in between. A
        mirror copies the agent's transcript, which stays the source of truth: a crash
        before the write reads that part of the transcript again.

        `pending` is the usage the agent reported for an answer not written yet (the rest
        of it may still come): until it is, that is the figure, as the agent itself shows."""
        with collector_paused():  # the entries join the tree: nothing here is garbage
            return self._mirror(entries, leaf_id, pending)

    def write_mirrored(self) -> None:
        """Append what `mirror_in_memory` took in, all or none (StorageFailed: they stay
        `unsaved`, and the session is to be closed); then those out of the live context go
        cold as the lines written, after the announcement (a first read's figure waits for
        none of it, and each entry is encoded once)."""
        if self._unwritten or self.file.unmade:  # a new mirror's file is made here, even empty
            lines = self.file.append_all(self._unwritten)
            written = zip(self._unwritten, lines)
            self.tree.lines.update((entry.id, line[:-1]) for entry, line in written if entry.type == "message")
            self._unwritten = []
            self._keep_cold()

    @property
    def unsaved(self) -> bool:
        """Whether memory holds entries the file does not (a mirror's write that failed)."""
        return bool(self._unwritten)

    def _mirror(self, entries: Sequence[Entry], leaf_id: str | None, pending: Usage | None) -> list[CompactionEntry]:
        self.pending_usage = pending
        counting, model_before = self.model_info.counting, self.model_id
        change_before, leaf_before = self.tree.latest_model_change, self.tree.leaf_id
        reports, model_at_end = self._reports_so_far()
        self._unwritten.extend(entries)
        for entry in entries:
            self.tree.add(entry, unwritten=True)  # made light or cold once written
        self._count_later(entries)  # the figure counts only what follows the latest report
        self._reports = reports, largest_reports(entries, reports, model_at_end), self.tree.node_count
        latest_change = self.tree.latest_model_change
        if latest_change is not None and latest_change is not change_before:
            # The last model only (pi's transcripts switch hundreds of times), with the
            # reports found so far: no walk of the whole tree for them.
            self._use_model(latest_change.model, latest_change.contextWindow, reports.get(latest_change.model, 0))
        self._widen_window(largest_report(entries, self.model_id, model_before))
        if self.model_info.counting != counting:
            self._recount_later()
        if leaf_id is not None and leaf_id != self.tree.leaf_id and self.tree.is_node_id(leaf_id):
            # "leaf-" ids cannot meet an imported id (uuids, pi's hex ids, Codex's line ids).
            move = LeafEntry(id=f"leaf-{new_entry_id(self.tree.entries)}", parentId=self.tree.leaf_id, targetId=leaf_id)
            self._unwritten.append(move)
            self.tree.add(move)
        self.rebuild(self._path_grown(leaf_before, entries))
        return [entry for entry in entries if entry.type == "compaction"]  # tags: isinstance is slow on a no

    def _reports_so_far(self) -> tuple[dict[str | None, int], str | None]:
        """The largest reports per model of the nodes the tree holds, and the model in force
        after them: those the last write left, unless nodes came another way (a load, a
        navigation's summary), then from one walk of the tree."""
        reports, model_at_end, covered = self._reports
        if covered == self.tree.node_count:
            return reports, model_at_end
        reports = {}
        return reports, largest_reports(self.tree.nodes(), reports, None)

    def _path_grown(self, leaf_before: str | None, entries: Sequence[Entry]) -> list[Entry] | None:
        """The path to the leaf where `entries` only continued the path to `leaf_before` (a
        transcript's usual growth: no walk from the root); None where they went elsewhere."""
        if (self._path[-1].id if self._path else None) != leaf_before:
            return None
        grown, parent = list(self._path), leaf_before
        for entry in entries:
            if entry.type in NON_NODE_TYPES:
                continue  # labels and leaf moves grow no path (a move shows in the leaf below)
            if entry.parentId != parent:
                return None
            grown.append(entry)
            parent = entry.id
        return grown if parent == self.tree.leaf_id else None

    def announce(self, cause: str) -> None:
        usage = self.usage()  # once: a mirror's works out where its agent compacts
        self.events.session_changed(self.session_id, self.leaf_id, cause)
        self.events.token_usage(usage)
        self.events.workspace_activity(self.activity(cause, usage, self.leaf_id))

    def announce_deletion(self) -> None:
        """The session's files are gone: whoever had it open or watches its workspace hears
        it once, with the figure it had (no leaf any more, no tokenUsage)."""
        self.events.session_changed(self.session_id, None, "deleted")
        self.events.workspace_activity(self.activity("deleted", self.usage(), None))

    def updated_at(self) -> str:
        """The time the file was last written, as `session/list` shows it (now, for a file
        that is gone: a deleted session)."""
        try:
            return timestamp(os.stat(self.file.path).st_mtime_ns)
        except OSError:
            return timestamp(time.time_ns())

    def activity(self, cause: str, usage: TokenUsage, leaf_id: str | None) -> WorkspaceActivity:
        """What a change tells the connections watching the session's workspace: which
        session, why, its leaf and figure (`usage`, the one its tokenUsage sends), and when
        its file was last written."""
        return WorkspaceActivity(
            sessionId=self.session_id,
            name=self.name,
            workspace=self.header.workspace,
            cause=cast(ChangeCause, cause),  # validated: a cause the model does not know is refused
            leafId=leaf_id,
            usage=usage,
            source=MirrorSource.model_validate(self.source) if self.source else None,
            updatedAt=self.updated_at(),
        )

    @property
    def compacting(self) -> bool:
        return self._running is not None

    # --- what the other jobs of a session provide -----------------------------------------

    @abstractmethod
    def after_append(self, messages: Sequence[Message]) -> None:
        """The automatic triggers, run after every batch of messages (see triggers.py)."""

    @abstractmethod
    def touch(self) -> None:
        """Activity on the session: (re)arm or cancel the idle timer (see idle.py)."""

    @abstractmethod
    def cancel_idle_timer(self) -> None:
        """Stop the idle timer, if armed (see idle.py)."""

    # --- model ------------------------------------------------------------------------

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

    def set_model(self, model_id: str) -> None:
        self.record_model(model_id)
        self.announce("model")

    def record_model(self, model_id: str) -> None:
        """Switch to `model_id` and write its `model_change` entry without announcing it:
        a new session's first entry, which its `open` announces."""
        old_counting = self.model_info.counting
        self._use_model(model_id)
        if self.model_info.counting != old_counting:
            self._count_all()
        self.append_node(ModelChangeEntry, model=model_id)

    def apply_settings(self, settings: Settings) -> None:
        old_counting = self.model_info.counting
        self.settings = settings
        self._tokenizers.clear()
        self._use_model(self.model_id, self._recorded_window)
        if self.model_info.counting != old_counting:
            self._count_all()
        self.rebuild()

    @property
    def node_count(self) -> int:
        """Every node of the tree, abandoned branches included (labels and leaf moves are not nodes)."""
        return sum(1 for _ in self.tree.nodes())

    def usage(self) -> TokenUsage:
        return TokenUsage.model_validate(self.usage_body())

    def opened(self) -> OpenResult:
        """What session/open answers."""
        return OpenResult(**self._open_fields())

    def state(self) -> StateResult:
        """What session/open answers, and where the session stands."""
        return StateResult(
            **self._open_fields(), workspace=self.header.workspace, entries=self.node_count, compacting=self.compacting
        )

    def _open_fields(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "name": self.name,
            "leafId": self.leaf_id,
            "model": self.model_id,
            "contextWindow": self.model_info.context_window,
            "usage": self.usage(),
            "path": str(self.file.path),
            "source": MirrorSource.model_validate(self.source) if self.source is not None else None,
        }

    def stats(self) -> StatsResult:
        """How much compaction and pruning took out of the current branch."""
        self.settle_counts()
        figures = compression_stats(self._path, self.entry_tokens, self.tokens, self._figure.calibration)
        parts = breakdown(self._counted_parts, self._figure, self._unseen_so_far())
        return StatsResult(
            sessionId=self.session_id,
            treeNodes=self.node_count,
            history=Figures(entries=figures.history_entries, tokens=figures.history_tokens),
            context=Figures(entries=figures.context_entries, tokens=figures.context_tokens),
            compactions=CompactionFigures(
                count=figures.compactions,
                tokensSaved=figures.compaction_tokens_saved,
                summaryTokens=figures.summary_tokens,
            ),
            prunes=PruneFigures(count=figures.prunes, tokensSaved=figures.prune_tokens_saved),
            ratio=figures.ratio,
            breakdown=FigureBreakdown(**parts.as_dict()),
        )
