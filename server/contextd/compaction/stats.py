"""How much compaction and pruning took out of a session: its compression statistics.

The history is the path root->leaf as written; the context is what the model sees of it
now. Both are measured in entries and tokens, so a user can tell what was folded away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextd.compaction.context import MESSAGE_BEARING_TYPES, latest_compaction_index, visible_entries
from contextd.model import CompactionEntry, Entry, PruneEntry


@dataclass(frozen=True)
class CompressionStats:
    history_entries: int
    history_tokens: int
    context_entries: int
    context_tokens: int
    compactions: int
    compaction_tokens_saved: int
    summary_tokens: int
    prunes: int
    prune_tokens_saved: int

    @property
    def ratio(self) -> float:
        """The share of the history's tokens the context still holds (1.0: nothing folded)."""
        if self.history_tokens == 0:
            return 1.0
        return round(self.context_tokens / self.history_tokens, 4)

    def as_dict(self) -> dict[str, object]:
        return {
            "history": {"entries": self.history_entries, "tokens": self.history_tokens},
            "context": {"entries": self.context_entries, "tokens": self.context_tokens},
            "compactions": {
                "count": self.compactions,
                "tokensSaved": self.compaction_tokens_saved,
                "summaryTokens": self.summary_tokens,
            },
            "prunes": {"count": self.prunes, "tokensSaved": self.prune_tokens_saved},
            "ratio": self.ratio,
        }


def compression_stats(
    path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    context_tokens: int,
    calibration: float = 1.0,
) -> CompressionStats:
    """Statistics of the path root->leaf; `context_tokens` is the session's current figure.

    History tokens count every message-bearing entry as written (summaries included, since
    the model read them when they were current), times `calibration` as the figure's counted
    parts are; a compaction saved what it took out, its `tokensBefore - tokensAfter`.
    """
    # Types, not the messages: entries outside the live context are not parsed for this.
    conversation = [entry for entry in path if entry.type in MESSAGE_BEARING_TYPES]
    compactions = [entry for entry in path if isinstance(entry, CompactionEntry)]
    prunes = [entry for entry in path if isinstance(entry, PruneEntry)]
    latest = latest_compaction_index(path)
    return CompressionStats(
        history_entries=len(conversation),
        history_tokens=round(calibration * sum(entry_tokens.get(entry.id, 0) for entry in conversation)),
        context_entries=sum(1 for entry in visible_entries(path) if entry.type in MESSAGE_BEARING_TYPES),
        context_tokens=context_tokens,
        compactions=len(compactions),
        compaction_tokens_saved=sum(max(0, c.tokensBefore - c.tokensAfter) for c in compactions),
        summary_tokens=round(calibration * entry_tokens.get(path[latest].id, 0)) if latest is not None else 0,
        prunes=len(prunes),
        prune_tokens_saved=sum(prune.tokensSaved for prune in prunes),
    )
