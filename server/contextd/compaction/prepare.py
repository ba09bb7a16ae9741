"""Preparing a compaction: what is summarized, what is kept, and the requests to send.

The session calls `prepare_compaction`, sends the preparation's requests to a summarizer,
joins the answers with `assemble_compaction_summary` and appends a `compaction` entry with
the preparation's `first_kept_entry_id`, `tokens_before`, `files` (as `details`), `reason`
and `instructions`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from contextd.compaction.context import context_messages, pruned_entry_ids, visible_entries
from contextd.compaction.cut_point import CutPoint, find_cut_point, is_turn_start
from contextd.compaction.files import (
    carried_details,
    collect_files,
    format_file_lists,
    without_file_lists,
)
from contextd.compaction.request import (
    TURN_PREFIX_SHARE_OF_RESERVE,
    build_request,
    max_summary_tokens,
)
from contextd.compaction.sizes import entry_sizes
from contextd.model import (
    CompactionEntry,
    CompactionReason,
    Entry,
    FileDetails,
    Message,
    PreserveData,
    Settings,
)
from contextd.summarizers.base import SummaryRequest

TURN_CONTEXT_HEADING = "## Turn context (split turn)"

OVERFLOW_KEEP_DIVISORS = (1, 2, 4)
"""An overflow compaction keeps `keepRecentTokens`, else half of it, else a quarter: the
provider said the context does not fit, and its word beats our count (it sees a system prompt
and tool schemas we never do, and the configured window may be too large)."""
NO_EARLIER_HISTORY = "(No earlier history: the conversation so far is a single turn.)"


@dataclass(frozen=True)
class NothingToCompact:
    """Why a compaction would change nothing; `message` is fit to show a user."""

    reason: Literal["empty", "just_compacted", "fits"]
    message: str


@dataclass(frozen=True)
class CompactionPreparation:
    """Everything about a compaction except the summaries themselves.

    `summarize_entry_ids` are the entries whose messages the summaries replace (the history,
    then a split turn's prefix); `kept_entry_ids` the entries whose messages stay verbatim,
    from `first_kept_entry_id` on. Together they are every message of the current context
    but the previous summary, which `history_request` updates. `tokens_after` is an upper
    bound: the kept tokens plus the most the summaries may take (`estimated_tokens_after`
    gives an honest estimate). `keep_recent_tokens` is what the cut aimed to keep.
    """

    first_kept_entry_id: str
    summarize_entry_ids: tuple[str, ...]
    kept_entry_ids: tuple[str, ...]
    previous_summary: str | None
    tokens_before: int
    tokens_kept: int
    tokens_after: int
    keep_recent_tokens: int
    files: FileDetails
    history_request: SummaryRequest | None
    turn_prefix_request: SummaryRequest | None
    reason: CompactionReason
    instructions: str | None
    previous_entry_id: str | None = None
    """The compaction whose summary this one updates: items carried from it name it."""

    @property
    def requests(self) -> tuple[SummaryRequest, ...]:
        """The requests to send to the summarizer (they are independent of each other)."""
        return tuple(r for r in (self.history_request, self.turn_prefix_request) if r)

    @property
    def is_split_turn(self) -> bool:
        return self.turn_prefix_request is not None


def prepare_compaction(
    path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    settings: Settings,
    *,
    instructions: str | None = None,
    reason: CompactionReason = "manual",
    tokens_before: int | None = None,
    calibration: float = 1.0,
) -> CompactionPreparation | NothingToCompact:
    """Plan the compaction of the context at the end of `path` (root -> leaf).

    The cut is searched over the context's entries after its latest compaction, which
    begin at that compaction's `firstKeptEntryId`: the entries the previous compaction kept
    are summarized (into an update of its summary) or kept again, never dropped. About
    `settings.compaction.keepRecentTokens` of the newest context stays verbatim.

    `entry_tokens` gives each entry's counted tokens and `calibration` the model's tokens
    per counted token: the cut is made in the model's tokens. `tokens_before` is the
    context's size as the session reports it; without it the visible entries are added up.
    Returns NothingToCompact when the path is empty, ends in a compaction, or fits in the
    kept part, even (for an `overflow`) in a quarter of it: see OVERFLOW_KEEP_DIVISORS.
    """
    if not path:
        return NothingToCompact("empty", "The session has no entries.")
    if path[-1].type == "compaction":
        return NothingToCompact("just_compacted", "Nothing was added since the last compaction.")
    span = _span(path, entry_tokens, calibration)
    keep_recent, cut = _cut(span, settings.compaction.keepRecentTokens, reason)
    if cut.first_kept_index == 0:
        return NothingToCompact("fits", fits_message(sum(span.sizes.values()), tokens_before, keep_recent))
    return _prepare_at(
        span, settings, cut, keep_recent,
        instructions=instructions, reason=reason, tokens_before=tokens_before,
    )


def _cut(span: _Span, keep_recent_tokens: int, reason: CompactionReason) -> tuple[int, CutPoint]:
    """The cut that keeps `keep_recent_tokens`, or for an overflow the first of its shares in
    OVERFLOW_KEEP_DIVISORS that leaves something to summarize; and the tokens it aimed to keep.
    A cut at 0 keeps everything: there is nothing to summarize."""
    divisors = OVERFLOW_KEEP_DIVISORS if reason == "overflow" else OVERFLOW_KEEP_DIVISORS[:1]
    for divisor in divisors:
        keep_recent = keep_recent_tokens // divisor
        cut = find_cut_point(span.candidates, span.sizes, keep_recent)
        if cut.first_kept_index > 0:
            break
    return keep_recent, cut


def fits_message(history: int, figure: int | None, keep_recent: int) -> str:
    """Why there is nothing to compact, in the figure the user sees: a figure well above the
    history holds what the agent sends besides it (system prompt, tools), which no
    compaction folds away."""
    fits = f"the history's {history:,} tokens fit in the {keep_recent:,} recent tokens a compaction keeps"
    if figure is not None and figure > history:
        return (
            f"{fits}; the rest of the {figure:,} the session shows is what the agent sends "
            "besides the history (system prompt, tools), which no compaction folds away"
        )
    return fits


def prepare_span(
    path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    settings: Settings,
    first_kept_entry_id: str | None,
) -> CompactionPreparation | NothingToCompact:
    """The compaction of the context at the end of `path` that keeps it from
    `first_kept_entry_id` on (None: keeps nothing), the cut another agent chose, so contextd
    summarizes the span that agent's compaction folds away. A kept entry inside a turn makes
    the turn's beginning a split turn's prefix, as `find_cut_point` would. The preparation's
    `first_kept_entry_id` is "" when nothing is kept."""
    span = _span(path, entry_tokens, 1.0)
    candidates = span.candidates
    ids = [entry.id for entry in candidates]
    kept_at = ids.index(first_kept_entry_id) if first_kept_entry_id in ids else len(ids)
    if kept_at == 0:
        return NothingToCompact("fits", "Nothing comes before the first kept entry.")
    turn_start = None
    if kept_at < len(candidates) and not is_turn_start(candidates[kept_at]):
        turn_start = next((i for i in range(kept_at - 1, -1, -1) if is_turn_start(candidates[i])), None)
    return _prepare_at(
        span, settings, CutPoint(kept_at, turn_start), settings.compaction.keepRecentTokens,
        instructions=None, reason="manual", tokens_before=None,
    )


@dataclass(frozen=True)
class _Span:
    """The context at the end of a path, worked out once per preparation: its visible entries
    and the pruned ones among them, the compaction that opens it (`previous`), the entries
    after that compaction (`candidates`, where the cut is searched), each visible entry's
    size and each pruned one's tokens before its prune (its placeholder says how many), in
    the model's tokens."""

    visible: list[Entry]
    pruned: set[str]
    previous: CompactionEntry | None
    candidates: list[Entry]
    sizes: dict[str, int]
    pruned_tokens: dict[str, int]


def _span(path: Sequence[Entry], entry_tokens: Mapping[str, int], calibration: float) -> _Span:
    # Calibrated here, for the visible entries only, in the walk that sizes them anyway:
    # a calibrated copy of every count of the session would cost more than the cut.
    visible = visible_entries(path)
    pruned = pruned_entry_ids(path)
    previous = visible[0] if visible and isinstance(visible[0], CompactionEntry) else None
    candidates = visible[1:] if previous else visible
    sizes = entry_sizes(visible, pruned, entry_tokens, calibration)
    pruned_tokens = {entry_id: round(entry_tokens.get(entry_id, 0) * calibration) for entry_id in pruned}
    return _Span(visible, pruned, previous, candidates, sizes, pruned_tokens)


def _prepare_at(
    span: _Span,
    settings: Settings,
    cut: CutPoint,
    keep_recent: int,
    *,
    instructions: str | None,
    reason: CompactionReason,
    tokens_before: int | None,
) -> CompactionPreparation:
    """The preparation of the compaction whose kept part starts at `cut` (an index into
    `span.candidates`)."""
    messages = context_messages(span.visible, span.pruned, span.pruned_tokens)
    history, prefix, kept = _split(span.candidates, cut, messages)
    history_messages = [messages[e.id] for e in history]
    prefix_messages = [messages[e.id] for e in prefix]
    previous = span.previous
    files = collect_files(
        history_messages + prefix_messages,
        settings.compaction,
        carried_details((previous, *history, *prefix)),
    )
    previous_summary = without_file_lists(previous.summary) if previous else None
    requests = _summary_requests(
        history_messages,
        prefix_messages,
        reserve_tokens=settings.compaction.reserveTokens,
        previous_summary=previous_summary,
        previous_preserve_data=previous.provider_state() if previous else None,
        files=files,
        instructions=instructions,
    )
    tokens_kept = sum([span.sizes[e.id] for e in span.candidates[cut.first_kept_index :]])
    return CompactionPreparation(
        first_kept_entry_id=_first_kept_entry_id(span.candidates, cut),
        summarize_entry_ids=tuple([e.id for e in history + prefix]),
        kept_entry_ids=tuple([e.id for e in kept]),
        previous_summary=previous_summary,
        tokens_before=sum(span.sizes.values()) if tokens_before is None else tokens_before,
        tokens_kept=tokens_kept,
        tokens_after=tokens_kept + _summary_bound(previous, span.sizes, requests),
        keep_recent_tokens=keep_recent,
        files=files,
        history_request=requests[0],
        turn_prefix_request=requests[1],
        reason=reason,
        instructions=instructions,
        previous_entry_id=previous.id if previous else None,
    )


def _first_kept_entry_id(candidates: Sequence[Entry], cut: CutPoint) -> str:
    """The entry the kept part begins with (it may carry no message: a model change just
    before the cut is kept with it), or "" when nothing is kept."""
    return candidates[cut.first_kept_index].id if cut.first_kept_index < len(candidates) else ""


def _summary_bound(
    previous: CompactionEntry | None,
    sizes: Mapping[str, int],
    requests: tuple[SummaryRequest | None, SummaryRequest | None],
) -> int:
    """The most the summaries may take: what each request may write, and the previous
    summary when it is reused as it is (no new history to update it with)."""
    history_request, _ = requests
    reused = sizes[previous.id] if previous and not history_request else 0
    return reused + sum(request.max_tokens for request in requests if request)


def assemble_compaction_summary(
    preparation: CompactionPreparation,
    *,
    history_summary: str | None = None,
    turn_prefix_summary: str | None = None,
) -> str:
    """The `summary` of the compaction entry: the history summary (or, when there was no
    new history, the previous summary), a "## Turn context (split turn)" section for a
    split turn, then the `<read-files>` / `<modified-files>` lists.

    Raises ValueError when a summary the preparation asked for is missing.
    """
    if preparation.history_request is not None:
        main = _required(history_summary, "history_summary")
    else:
        main = preparation.previous_summary or NO_EARLIER_HISTORY
    parts = [without_file_lists(main).strip()]
    if preparation.turn_prefix_request is not None:
        turn = without_file_lists(_required(turn_prefix_summary, "turn_prefix_summary")).strip()
        parts.append(f"{TURN_CONTEXT_HEADING}\n\n{turn}")
    return "\n\n".join(parts) + format_file_lists(preparation.files)


def split_turn_context(summary: str) -> str | None:
    """The split-turn part of a summary `assemble_compaction_summary` wrote (its heading
    and text, without the file lists), or None when the compaction did not split a turn."""
    _, heading, turn = summary.rpartition(TURN_CONTEXT_HEADING)
    if not heading:
        return None
    return f"{heading}\n\n{without_file_lists(turn).strip()}"


def offline_summary(preparation: CompactionPreparation) -> str:
    """The summary the offline summarizer writes for `preparation`: deterministic, local and
    cheap, so a dry run can measure the compaction's result instead of guessing it."""
    return assemble_compaction_summary(
        preparation,
        history_summary=_offline(preparation.history_request),
        turn_prefix_summary=_offline(preparation.turn_prefix_request),
    )


def _offline(request: SummaryRequest | None) -> str | None:
    # Imported on first use: the extractive summarizer is a large module (its patterns are
    # compiled at import) that a daemon needs only once it previews or compacts.
    from contextd.summarizers.offline import summarize_offline

    return summarize_offline(request) if request is not None else None


def expected_summary_tokens(offline_tokens: int, earlier_summary_tokens: Sequence[int]) -> int:
    """How big the coming summary will be: as big as this session's earlier summaries by the
    same summarizer on average, when there are some, else as big as the offline summary
    (the default summarizer's own output; for a model, the best size we can measure)."""
    if earlier_summary_tokens:
        return round(sum(earlier_summary_tokens) / len(earlier_summary_tokens))
    return offline_tokens


def _summary_requests(
    history: Sequence[Message],
    prefix: Sequence[Message],
    *,
    reserve_tokens: int,
    previous_summary: str | None,
    previous_preserve_data: PreserveData | None,
    files: FileDetails,
    instructions: str | None,
) -> tuple[SummaryRequest | None, SummaryRequest | None]:
    """The history request (an update when there is a previous summary) and the turn
    prefix request, each only when it has messages to read."""
    history_request = None
    if history:
        history_request = build_request(
            "compaction",
            history,
            template="update" if previous_summary else "compaction",
            max_tokens=max_summary_tokens(reserve_tokens),
            files=files,
            previous_summary=previous_summary,
            instructions=instructions,
            previous_preserve_data=previous_preserve_data,
        )
        # A split turn opens with the user's request: the history's questions are answered.
        history_request = replace(history_request, followed_by_request=bool(prefix))
    turn_prefix_request = None
    if prefix:
        # Without history, the turn's beginning is all there is to summarize after the
        # previous summary; a provider can compact it whole only when it wrote that one too.
        whole = not history and (previous_summary is None or previous_preserve_data is not None)
        turn_prefix_request = build_request(
            "turn_prefix",
            prefix,
            template="turn_prefix",
            max_tokens=max_summary_tokens(reserve_tokens, TURN_PREFIX_SHARE_OF_RESERVE),
            files=files,
            instructions=instructions,
            previous_preserve_data=previous_preserve_data if whole else None,
            whole_history=whole,
        )
    return history_request, turn_prefix_request


def _split(
    candidates: Sequence[Entry], cut: CutPoint, messages: Mapping[str, Message]
) -> tuple[list[Entry], list[Entry], list[Entry]]:
    """The message-bearing entries of the history, the turn prefix and the kept part."""

    def with_message(entries: Sequence[Entry]) -> list[Entry]:
        return [entry for entry in entries if entry.id in messages]

    return (
        with_message(candidates[: cut.history_end]),
        with_message(candidates[cut.history_end : cut.first_kept_index]),
        with_message(candidates[cut.first_kept_index :]),
    )


def _required(summary: str | None, name: str) -> str:
    if summary is None:
        raise ValueError(f"{name} is required: the preparation asked for it")
    return summary
