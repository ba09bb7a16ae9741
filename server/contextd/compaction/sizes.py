"""How many tokens each visible entry costs the model, prunes applied."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set

from contextd.compaction.context import pruned_entry_ids, visible_entries
from contextd.model import Entry

PRUNED_RESULT_TOKENS = 12
"""Estimated cost of `[Output pruned: N tokens]`: about 8 tokens of text plus message framing.

The compaction core has no tokenizer; a pruned result is small either way, and this figure is
only used to decide where to cut and how much a prune saves.
"""


def visible_sizes(path: Sequence[Entry], entry_tokens: Mapping[str, int]) -> dict[str, int]:
    """Tokens of each entry the model sees on `path`, keyed by entry id.

    A pruned tool result costs its placeholder, not the output the session counted for it.
    """
    return entry_sizes(visible_entries(path), pruned_entry_ids(path), entry_tokens)


def entry_sizes(
    visible: Iterable[Entry], pruned: Set[str], entry_tokens: Mapping[str, int], calibration: float = 1.0
) -> dict[str, int]:
    """`visible_sizes` of the entries `visible_entries` gave and the prunes
    `pruned_entry_ids` gave, for a caller that works those out once for other uses too;
    each count times `calibration` (rounded), the model's tokens per counted token."""
    if calibration == 1.0:
        return {
            entry.id: PRUNED_RESULT_TOKENS if entry.id in pruned else entry_tokens.get(entry.id, 0)
            for entry in visible
        }
    return {
        entry.id: PRUNED_RESULT_TOKENS if entry.id in pruned else round(entry_tokens.get(entry.id, 0) * calibration)
        for entry in visible
    }
