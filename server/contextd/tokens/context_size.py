"""How full a context is: provider usage where it still holds, counted tokens after it.

DESIGN.md: the size is the usage the provider reported on the last valid assistant answer
of the current context, plus the counted tokens of everything after it; with no such
answer, everything is counted, plus the part of the prompt contextd never sees as the
session learned it (`contextd.tokens.unseen`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Literal, TypeGuard

from contextd.compaction.context import (
    pruned_entry_ids,
    standing_instructions,
    visible_entries,
)
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    Entry,
    HandoffEntry,
    Message,
    MessageEntry,
    PruneEntry,
    Settings,
)
from contextd.tokens.calibration import stated_window

TokenSource = Literal["usage", "counted", "estimated"]


@dataclass(frozen=True)
class TokenFigure:
    """The context's size: what the anchor answer reported plus what was counted after it.

    `counted` is in o200k/cl100k tokens and is multiplied by `calibration` (1.0 for a model
    whose encoding ships, see `contextd.tokens.calibration`). `unseen` is the learned part
    of the prompt contextd never sees, added when no report anchors the figure (a report
    holds it already)."""

    reported: int
    counted: int
    calibration: float
    anchored: bool
    exact: bool
    unseen: int = 0

    @property
    def tokens(self) -> int:
        return self.reported + self.unseen + round(self.counted * self.calibration)

    @property
    def source(self) -> TokenSource:
        if self.anchored:
            return "usage"
        return "counted" if self.exact else "estimated"

    def plus(self, counted: int) -> TokenFigure:
        return replace(self, counted=self.counted + counted)

    def calibrated(self, calibration: float) -> TokenFigure:
        return replace(self, calibration=calibration)


def context_threshold(window: int, settings: Settings) -> int:
    """The token count past which automatic compaction starts (DESIGN.md, Settings)."""
    compaction = settings.compaction
    if compaction.thresholdTokens is not None:
        return min(compaction.thresholdTokens, window)
    if compaction.thresholdPercent is not None:
        return int(window * compaction.thresholdPercent)
    # A reserve meant for big windows must not swallow a small one: it takes at most half.
    reserve = min(max(compaction.reserveTokens, int(window * 0.15)), window // 2)
    return window - reserve


def largest_report(entries: Iterable[Entry], model_id: str, model_before: str | None = None) -> int:
    """The largest context a provider reported, or window an overflow error stated, while
    the session talked to `model_id` (0 with none), entries in file order, `model_before`
    in force before them. A window smaller than that is plainly wrong: the model took that
    much, or its provider says so ("exceeds the model's maximum context length 202750")."""
    return reports_by_model(entries).largest_for(model_id, model_before)


@dataclass(frozen=True)
class ReportsByModel:
    """What one walk of entries finds for `largest_report`, whatever model was in force
    before them (a mirror's write asks it of two models: one walk)."""

    before: int
    """The largest before the first model change, under the model in force before them."""
    after: dict[str, int]
    """The largest after it, by the model changed to."""
    last_model: str | None
    """The model the last change changed to (None: no change)."""

    def largest_for(self, model_id: str, model_before: str | None) -> int:
        return max(self.before if model_before == model_id else 0, self.after.get(model_id, 0))

    def add_to(self, reports: dict[str | None, int], model_before: str | None) -> str | None:
        """`reports` grown by these (`largest_report` of every model at once: a mirror adds
        what each write brings to what it found before, without walking the whole tree
        again); returns the model in force after them."""
        for model, size in ((model_before, self.before), *self.after.items()):
            if size > reports.get(model, 0):
                reports[model] = size
        return self.last_model if self.last_model is not None else model_before


def reports_by_model(entries: Iterable[Entry]) -> ReportsByModel:
    """`ReportsByModel` of `entries`, in file order."""
    before, current = 0, None
    after: dict[str, int] = {}
    for entry in entries:
        # Tags and the brief, each read once: this walks every node of a load and of a
        # mirror's write (an attribute of a pydantic model is slow to read).
        if entry.type == "message":
            answer = entry.brief
            if answer.role != "assistant":
                continue
            usage = answer.usage
            if answer.failed:  # its usage says nothing (`reports_context`), its error may
                size = stated_window(answer.errorMessage) or 0
            elif usage is not None:
                size = usage.context_tokens  # all zeros (no report) never beats a size
            else:
                continue
            if current is None:
                before = max(before, size)
            elif size > after.get(current, 0):
                after[current] = size
        elif entry.type == "model_change":
            current = entry.model
    return ReportsByModel(before, after, current)


def usage_anchor(path: Sequence[Entry]) -> int | None:
    """Index in `path` of the latest valid answer written after the path's latest compaction
    or prune, the answer whose reported usage still describes this context.

    Path order, not context order: a compaction keeps answers from before it, and their
    usage describes the context before the compaction. Failed answers never carry a
    trustworthy figure (see `reports_context`).
    """
    for index in range(len(path) - 1, -1, -1):
        entry = path[index]
        if isinstance(entry, (CompactionEntry, PruneEntry)):
            return None
        if entry.type == "message" and reports_context(entry.brief):
            return index
    return None


def reports_context(message: Message) -> TypeGuard[AssistantMessage]:
    """Whether `message` is an answer whose usage tells the context's size: a valid answer
    with usage that is not all zeros (some agents write zeros for providers that report
    nothing, e.g. Claude Code in front of GLM)."""
    return (
        message.role == "assistant"
        and message.usage is not None
        and message.usage.context_tokens > 0
        and not message.failed
    )


def context_tokens_of(
    path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    pruned_tokens: Callable[[int], int],
    *,
    calibration: float,
    pruned: Set[str] | None = None,
) -> Callable[[Entry], int]:
    """Counts an entry of `path` as the context holds it: a pruned result as its placeholder,
    an answer of the turn under way as at least the output its provider reported (in
    counted tokens: divided by `calibration`). `pruned`: `pruned_entry_ids(path)` where the
    caller knows it without a walk (an empty set for a tree that holds no prune)."""
    if pruned is None:
        pruned = pruned_entry_ids(path)
    outputs = turn_outputs(path)
    if not pruned and not outputs:  # most contexts: every entry as counted (the load sums them all)
        return lambda entry: entry_tokens.get(entry.id, 0)

    def tokens_of(entry: Entry) -> int:
        counted = entry_tokens.get(entry.id, 0)
        if entry.id in pruned:
            return pruned_tokens(counted)
        return max(counted, round(outputs.get(entry.id, 0) / calibration))

    return tokens_of


def turn_outputs(path: Sequence[Entry], end: int | None = None) -> dict[str, int]:
    """The reported output of each valid answer that reasoned (holds a thinking block) after
    the last user message, compaction and prune of `path[:end]` (the whole path by default;
    an index, not a slice: no copy).

    Reasoning models send their reasoning back within a turn: the provider counts it in
    every later request of the turn and drops it at the next user message (gpt-5.x through
    Codex: a turn's `reasoning` items, encrypted, 1-12k tokens each; Anthropic strips the
    thinking of earlier turns too). A transcript holds at most a summary of it, so an answer
    of the turn under way counts as what its provider reported it wrote. Only in the context
    that produced it: a context contextd rebuilt (compacted, pruned) holds an answer as the
    transcript does, without the reasoning."""
    outputs: dict[str, int] = {}
    for index in range((len(path) if end is None else end) - 1, -1, -1):
        entry = path[index]
        if isinstance(entry, (CompactionEntry, PruneEntry, HandoffEntry)) or (
            entry.type == "message" and entry.brief.role == "user"
        ):
            break
        # An answer without a thinking block reasoned nothing a new turn could drop,
        # whatever output it reports.
        if entry.type == "message" and reports_context(answer := entry.brief) and answer.reasoned:
            assert answer.usage is not None
            outputs[entry.id] = answer.usage.output
    return outputs


def context_size(
    path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    pruned_tokens: Callable[[int], int],
    *,
    calibration: float = 1.0,
    exact: bool = True,
    unseen: int = 0,
    tokens_of: Callable[[Entry], int] | None = None,
) -> TokenFigure:
    """The size of the context at the end of `path`.

    `entry_tokens` holds each entry's counted tokens; `pruned_tokens(n)` counts the
    placeholder that stands for a pruned result of `n` tokens. Counted parts are multiplied
    by `calibration`; `exact` says the encoding is the model's own; `unseen` is added to a
    figure no report anchors. `tokens_of`: `context_tokens_of(path, ...)` when the caller
    has it already (it walks the path).
    """
    if tokens_of is None:
        tokens_of = context_tokens_of(path, entry_tokens, pruned_tokens, calibration=calibration)
    anchor = usage_anchor(path)
    if anchor is None:
        # Instructions are in every context, before the conversation (the system prompt).
        visible = [*standing_instructions(path), *visible_entries(path)]
        counted = sum(tokens_of(entry) for entry in visible)
        return TokenFigure(0, counted, calibration, anchored=False, exact=exact, unseen=unseen)
    anchored = path[anchor]
    assert isinstance(anchored, MessageEntry) and isinstance(anchored.message, AssistantMessage)
    assert anchored.message.usage is not None
    reported = anchored.message.usage.context_tokens
    if any(entry.type == "message" and entry.brief.role == "user" for entry in path[anchor + 1 :]):
        reported -= dropped_reasoning(path, anchor, entry_tokens, calibration)
    # Everything after the anchor is after the latest compaction, so all of it is visible.
    after = sum(tokens_of(entry) for entry in path[anchor + 1 :])
    return TokenFigure(reported, after, calibration, anchored=True, exact=exact)


def dropped_reasoning(path: Sequence[Entry], anchor: int, entry_tokens: Mapping[str, int], calibration: float) -> int:
    """What the provider drops from the context the report at `path[anchor]` holds once a
    user message starts a new turn: the reasoning of that turn's answers, their reported
    output beyond what the transcript holds of them (see `turn_outputs`)."""
    return sum(
        max(output - round(entry_tokens.get(entry_id, 0) * calibration), 0)
        for entry_id, output in turn_outputs(path, anchor + 1).items()
    )


SUMMARIES = frozenset({"compaction", "handoff"})
"""Entry types whose text stands for history: a compaction's summary, a handoff's document."""


@dataclass(frozen=True)
class Breakdown:
    """Where a figure's tokens are, the way Claude Code's /context splits a window: the
    standing instructions, the summary opening the context, the conversation, and what the
    agent sends that contextd never sees. The parts add up to the figure."""

    instructions: int
    summary: int
    messages: int
    unseen: int

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


def counted_parts(
    path: Sequence[Entry], tokens_of: Callable[[Entry], int], visible: Sequence[Entry] | None = None
) -> tuple[int, int]:
    """The counted tokens of the standing instructions and of the summaries in the context
    at the end of `path` (they change only when a node is written, never on a message);
    `visible`: `visible_entries(path)` when the caller has it already (it walks the path)."""
    return (
        sum(tokens_of(entry) for entry in standing_instructions(path)),
        sum(tokens_of(entry) for entry in (visible_entries(path) if visible is None else visible) if entry.type in SUMMARIES),
    )


def breakdown(parts: tuple[int, int], figure: TokenFigure, unseen: int) -> Breakdown:
    """`figure` split into its parts, given the `counted_parts` of its path; `unseen` is the
    session's learned unseen part, which a report anchoring the figure holds too. Parts are
    taken in order from the figure, so a report smaller than the counted parts shrinks the
    last ones, never the sum."""
    left = figure.tokens
    taken = []
    for wanted in (*(round(tokens * figure.calibration) for tokens in parts), unseen):
        part = min(wanted, left)
        taken.append(part)
        left -= part
    instructions, summary, unseen_part = taken
    return Breakdown(instructions, summary, left, unseen_part)
