"""The live state rebuilt from the path: the session's name, pending tool calls, the unseen
part and the token figure, recomputed after a change that is not a plain append, kept up
cheaply on one, and settled once a mirror's entries are all counted.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import replace
from collections.abc import Callable, Sequence

from contextd.compaction.context import open_tool_calls, pruned_entry_ids, pruned_placeholder, visible_entries
from contextd.compaction.short_summary import clip
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    Entry,
    MessageEntry,
    NON_NODE_TYPES,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from contextd.results import TokenUsage
from contextd.session.counting import CountingState, live_from
from contextd.session.deferred_counts import CountsOnDemand
from contextd.tokens import MESSAGE_OVERHEAD_TOKENS, count_text
from contextd.tokens.context_size import (
    SUMMARIES,
    TokenFigure,
    context_size,
    context_threshold,
    context_tokens_of,
    counted_parts,
    dropped_reasoning,
    reports_context,
    usage_anchor,
)
from contextd.tokens.unseen import grew_past_counting, learn_unseen, reported_prompt, unseen_prior


SESSION_NAME_CHARS = 80
"""The longest name contextd gives a session (from a handoff's goal, a mirror's first request)."""


class FigureState(CountingState):
    """The session's name, pending tool calls, unseen part and token figure, as its path gives them."""

    @abstractmethod
    def usage(self) -> TokenUsage:
        """The figure as tokenUsage sends it (reports.py)."""

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

    def settle_counts(self) -> None:
        """Count what is left uncounted and take it into the calibration, then recompute the
        figure (announced when that changed it)."""
        if not self._pending:
            return
        shown = self._usage_parts()
        self._count_pending_now()
        self.rebuild()
        self._announce_if_changed(shown)

    def _announce_if_changed(self, shown: tuple[object, ...]) -> None:
        """The figure announced where counting changed it from the `_usage_parts` `shown`."""
        if self._usage_parts() != shown:
            self.events.token_usage(self.usage())

    def _usage_parts(self) -> tuple[object, ...]:
        """What `usage_body` is made of that counting can change."""
        return self._figure, self.model_info, self._counted_parts, self._unseen_so_far()

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

