"""Pruning: replacing old tool output with a placeholder, before anything is summarized."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextd.compaction.context import pruned_entry_ids, visible_entries
from contextd.compaction.sizes import PRUNED_RESULT_TOKENS
from contextd.model import Entry, MessageEntry, PruningSettings, ToolResultMessage


@dataclass(frozen=True)
class PrunePlan:
    """The tool results to prune (oldest first) and the tokens that saves the context.

    The session records it as a `prune` entry with `entryIds` and `tokensSaved`.
    """

    entry_ids: tuple[str, ...]
    tokens_saved: int


def plan_prune(
    path: Sequence[Entry], entry_tokens: Mapping[str, int], settings: PruningSettings
) -> PrunePlan | None:
    """The prune worth doing on `path` (root -> leaf), or None.

    Walking back from the newest visible entry, the newest `settings.protectTokens` of tool
    output stay: a result is protected while the unpruned tool output newer than it totals
    less than `protectTokens`. Older results are pruned unless they are already pruned,
    folded away by a compaction, from a tool in `settings.protectedTools`, or too small to
    gain anything. The plan is returned only if it saves more than `settings.minimumSavings`
    tokens (and never when pruning is disabled).
    """
    if not settings.enabled:
        return None
    already_pruned = pruned_entry_ids(path)
    protected_tools = set(settings.protectedTools)
    newer_output = 0
    candidates: list[str] = []
    saved = 0
    for entry in reversed(visible_entries(path)):
        result = _tool_result(entry)
        if result is None or entry.id in already_pruned:
            continue
        tokens = entry_tokens.get(entry.id, 0)
        prunable = (
            newer_output >= settings.protectTokens
            and result.toolName not in protected_tools
            and tokens > PRUNED_RESULT_TOKENS
        )
        if prunable:
            candidates.append(entry.id)
            saved += tokens - PRUNED_RESULT_TOKENS
        newer_output += tokens
    if saved <= settings.minimumSavings:
        return None
    return PrunePlan(entry_ids=tuple(reversed(candidates)), tokens_saved=saved)


def _tool_result(entry: Entry) -> ToolResultMessage | None:
    if isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage):
        return entry.message
    return None
