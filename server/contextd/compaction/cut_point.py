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


def valid_cuts(entries: Sequence[Entry]) -> list[bool]:
    """For each index, whether the kept part may begin there.

    It may begin at a message other than a tool result, provided no tool call before it has
    its result at or after it; otherwise the kept part would hold a result whose call was
    summarized away.
    """
    # Entries are told apart by their `type` and `role` tags rather than isinstance: a
    # pydantic model's isinstance costs a call into its metaclass whenever it says no.
    valid: list[bool] = []
    # +1 / -1 marks around each call..result span; a running sum > 0 means "inside a span".
    spans = [0] * (len(entries) + 1)
    call_index: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry.type != "message":
            valid.append(entry.type in SUMMARY_ENTRY_TYPES)
            continue
        message = entry.message
        valid.append(message.role != "toolResult")
        if message.role == "assistant":
            for block in message.content:
                if block.type == "toolCall":
                    call_index[block.id] = index
        elif message.role == "toolResult" and (called := call_index.get(message.toolCallId)) is not None:
            spans[called + 1] += 1
            spans[index + 1] -= 1
    inside = 0
    for index in range(len(entries)):
        inside += spans[index]
        if inside > 0:
            valid[index] = False
    return valid


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
    valid = valid_cuts(entries)
    reached = _index_reaching(entries, entry_tokens, keep_recent_tokens)
    if reached is None:
        return CutPoint(0)
    cut = _nearest_valid_cut(valid, reached)
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


def _nearest_valid_cut(valid: list[bool], reached: int) -> int | None:
    for index in range(reached, len(valid)):
        if valid[index]:
            return index
    for index in range(reached - 1, -1, -1):
        if valid[index]:
            return index
    return None


def _turn_start_before(entries: Sequence[Entry], cut: int) -> int | None:
    for index in range(cut - 1, -1, -1):
        if is_turn_start(entries[index]):
            return index
    return None
