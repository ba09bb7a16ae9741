"""How full a context is: provider usage where it still holds, counted tokens after it.

DESIGN.md: the size is the usage the provider reported on the last valid assistant answer
of the current context, plus the counted tokens of everything after it; with no such
answer, everything is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from contextd.compaction.context import pruned_entry_ids, visible_entries
from contextd.model import AssistantMessage, CompactionEntry, Entry, MessageEntry, PruneEntry, Settings

TokenSource = Literal["usage", "counted"]


@dataclass(frozen=True)
class TokenFigure:
    tokens: int
    source: TokenSource


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


def usage_anchor(visible: Sequence[Entry]) -> int | None:
    """Index of the last assistant answer whose reported usage still describes this context.

    A compaction or prune after it rewrote what the model sees, so usage from before one
    no longer applies; failed answers never carry a trustworthy figure.
    """
    for index in range(len(visible) - 1, -1, -1):
        entry = visible[index]
        if isinstance(entry, (CompactionEntry, PruneEntry)):
            return None
        if (
            isinstance(entry, MessageEntry)
            and isinstance(entry.message, AssistantMessage)
            and entry.message.usage is not None
            and not entry.message.failed
        ):
            return index
    return None


def context_size(
    path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    pruned_tokens: Callable[[int], int],
) -> TokenFigure:
    """The size of the context at the end of `path`.

    `entry_tokens` holds each entry's counted tokens; `pruned_tokens(n)` counts the
    placeholder that stands for a pruned result of `n` tokens.
    """
    visible = visible_entries(path)
    pruned = pruned_entry_ids(path)

    def tokens_of(entry: Entry) -> int:
        counted = entry_tokens.get(entry.id, 0)
        return pruned_tokens(counted) if entry.id in pruned else counted

    anchor = usage_anchor(visible)
    if anchor is None:
        return TokenFigure(sum(tokens_of(entry) for entry in visible), "counted")
    anchored = visible[anchor]
    assert isinstance(anchored, MessageEntry) and isinstance(anchored.message, AssistantMessage)
    assert anchored.message.usage is not None
    after = sum(tokens_of(entry) for entry in visible[anchor + 1 :])
    return TokenFigure(anchored.message.usage.context_tokens + after, "usage")
