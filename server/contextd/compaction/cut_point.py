"""Where a compaction cuts: the oldest entry that stays in the context verbatim."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextd.model import Entry


@dataclass(frozen=True)
class CutPoint:
    """A cut in a list of entries.

    `entries[first_kept_index:]` stay verbatim. When the first kept message is not the start
    of a turn, `turn_start_index` is where that turn began: `entries[turn_start_index:
    first_kept_index]` is the turn's prefix, summarized on its own so the kept rest of the
    turn still makes sense.
    """

    first_kept_index: int
    turn_start_index: int | None = None

    @property
    def is_split_turn(self) -> bool:
        return self.turn_start_index is not None

    @property
    def history_end(self) -> int:
        """Where the history for the main summary ends (the turn prefix is not part of it)."""
        if self.turn_start_index is not None:
            return self.turn_start_index
        return self.first_kept_index


SUMMARY_ENTRY_TYPES = frozenset({"compaction", "branch_summary", "handoff"})
"""Entries whose text the model reads as a user message."""


def has_message(entry: Entry) -> bool:
    """Whether the entry puts a message into the context (labels, prunes, ... do not)."""
    return entry.type == "message" or entry.type in SUMMARY_ENTRY_TYPES


def is_turn_start(entry: Entry) -> bool:
    """A user message, or a summary or handoff, which the model reads as a user message."""
    if entry.type == "message":
        return entry.message.role == "user"
    return entry.type in SUMMARY_ENTRY_TYPES


def valid_cuts(entries: Sequence[Entry], start: int = 0) -> list[bool]:
    """For each index from `start` on, whether the kept part may begin there.

    It may begin at a message other than a tool result, provided no tool call before it has
    its result at or after it; otherwise the kept part would hold a result whose call was
    summarized away. From a `start` past 0 the entries before it are read only for the
    calls of results from `start` on (`find_cut_point` needs the newest entries alone).
    """
    # Entries are told apart by their `type` and `role` tags rather than isinstance: a
    # pydantic model's isinstance costs a call into its metaclass whenever it says no.
    valid: list[bool] = []
    # +1 / -1 marks around each call..result span; a running sum > 0 means "inside a span".
    spans = [0] * (len(entries) - start + 1)
    call_index: dict[str, int] = {}
    called_earlier: dict[str, int] = {}  # call id -> the latest result whose call is not from `start` on
    for index in range(start, len(entries)):
        entry = entries[index]
        if entry.type != "message":
            valid.append(entry.type in SUMMARY_ENTRY_TYPES)
            continue
        message = entry.message
        valid.append(message.role != "toolResult")
        if message.role == "assistant":
            for block in message.content:
                if block.type == "toolCall":
                    call_index[block.id] = index
        elif message.role == "toolResult":
            called = call_index.get(message.toolCallId)
            if called is not None:
                spans[called - start + 1] += 1
                spans[index - start + 1] -= 1
            else:
                called_earlier[message.toolCallId] = index
    # A result whose call came before `start` is inside its span from `start` on.
    for result_index in _results_called_before(entries, start, called_earlier):
        spans[0] += 1
        spans[result_index - start + 1] -= 1
    inside = 0
    for offset in range(len(valid)):
        inside += spans[offset]
        if inside > 0:
            valid[offset] = False
    return valid


def _results_called_before(entries: Sequence[Entry], start: int, results: dict[str, int]) -> list[int]:
    """Of `results` (call id -> result index), those whose call is among `entries[:start]`,
    searched from `start` back only until every one is found (a call is most often just
    before its result); `results` is emptied of those found."""
    found: list[int] = []
    index = start
    while results and index > 0:
        index -= 1
        entry = entries[index]
        if entry.type == "message" and entry.message.role == "assistant":
            for block in entry.message.content:
                if block.type == "toolCall" and block.id in results:
                    found.append(results.pop(block.id))
    return found


def find_cut_point(
    entries: Sequence[Entry], entry_tokens: Mapping[str, int], keep_recent_tokens: int
) -> CutPoint:
    """The cut that keeps about `keep_recent_tokens` of the newest entries.

    `entries` are the context's entries in order (for a compacted session: the entries after
    the compaction entry in `visible_entries`); `entry_tokens` their sizes as the model sees
    them. Walking back from the newest entry, the cut goes at the first valid cut (see
    `valid_cuts`) at or after the entry where the kept size reaches `keep_recent_tokens`, or
    at the newest valid cut if there is none after it. Entries that carry no message and
    sit just before the cut (model changes, prunes, labels) move into the kept part.

    `first_kept_index == 0` means everything fits: there is nothing to summarize.
    """
    reached = _index_reaching(entries, entry_tokens, keep_recent_tokens)
    if reached is None:
        return CutPoint(0)
    # Only the entries from `reached` on are checked, as a rule: the history before them
    # is read only when none of them may begin the kept part.
    cut = next((reached + offset for offset, ok in enumerate(valid_cuts(entries, reached)) if ok), None)
    if cut is None:
        valid = valid_cuts(entries)
        cut = next((index for index in range(reached - 1, -1, -1) if valid[index]), None)
        if cut is None:
            return CutPoint(0)
    first_kept_message = cut
    while cut > 0 and not has_message(entries[cut - 1]):
        cut -= 1
    if cut == 0 or is_turn_start(entries[first_kept_message]):
        return CutPoint(cut)
    return CutPoint(cut, _turn_start_before(entries, cut))


def _index_reaching(
    entries: Sequence[Entry], entry_tokens: Mapping[str, int], budget: int
) -> int | None:
    """The index at which the newest entries add up to `budget` tokens, if they ever do."""
    kept = 0
    for index in range(len(entries) - 1, -1, -1):
        kept += entry_tokens.get(entries[index].id, 0)
        if kept >= budget:
            return index
    return None


def _turn_start_before(entries: Sequence[Entry], cut: int) -> int | None:
    for index in range(cut - 1, -1, -1):
        if is_turn_start(entries[index]):
            return index
    return None
