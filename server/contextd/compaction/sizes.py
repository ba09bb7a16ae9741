"""How many tokens each visible entry costs the model, prunes applied."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
    pruned = pruned_entry_ids(path)
    return {
        entry.id: PRUNED_RESULT_TOKENS if entry.id in pruned else entry_tokens.get(entry.id, 0)
        for entry in visible_entries(path)
    }
