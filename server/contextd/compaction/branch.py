"""Summarizing the branch a navigation leaves, so what happened there is not lost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextd.compaction.context import ContextItem, build_context
from contextd.compaction.files import carried_details, collect_files
from contextd.compaction.request import build_request, max_summary_tokens
from contextd.compaction.sizes import visible_sizes
from contextd.model import Entry, FileDetails, MessageEntry, Settings, ToolResultMessage
from contextd.summarizers.base import SummaryRequest


@dataclass(frozen=True)
class BranchSummaryPreparation:
    """The summary request for a branch being left.

    The session sends `request`, appends the file lists to the answer (`format_file_lists`)
    and records a `branch_summary` entry with `fromId=from_id` and `details=files` on the
    target's path.
    """

    from_id: str
    common_ancestor_id: str | None
    entry_ids: tuple[str, ...]
    files: FileDetails
    request: SummaryRequest


def branch_being_left(
    old_path: Sequence[Entry], target_path: Sequence[Entry]
) -> tuple[list[Entry], str | None]:
    """The entries of `old_path` after its deepest entry that is also on `target_path`, and
    that common ancestor's id (None when the paths share nothing). Both paths run root -> leaf.
    """
    target_ids = {entry.id for entry in target_path}
    for index in range(len(old_path) - 1, -1, -1):
        if old_path[index].id in target_ids:
            return list(old_path[index + 1 :]), old_path[index].id
    return list(old_path), None


def prepare_branch_summary(
    old_path: Sequence[Entry],
    target_path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    token_budget: int | None,
    settings: Settings,
    *,
    instructions: str | None = None,
) -> BranchSummaryPreparation | None:
    """The summary to make when the leaf moves from the end of `old_path` to the end of
    `target_path`, or None when the move leaves nothing behind (e.g. moving forward).

    The summarizer reads the branch as its context showed it (compaction summaries and
    pruned results included), newest first, as much as fits in `token_budget` tokens
    (None: all of it); it never begins with a tool result cut off from its call. The file
    lists cover the whole branch, including what earlier summaries in it carried.
    """
    branch, ancestor_id = branch_being_left(old_path, target_path)
    if not branch:
        return None
    branch_ids = {entry.id for entry in branch}
    items = [item for item in build_context(old_path, entry_tokens) if item.entry_id in branch_ids]
    chosen = _newest_within_budget(items, visible_sizes(old_path, entry_tokens), token_budget)
    if not chosen:
        return None
    branch_messages = [entry.message for entry in branch if isinstance(entry, MessageEntry)]
    files = collect_files(branch_messages, settings.compaction, carried_details(branch))
    request = build_request(
        "branch",
        [item.message for item in chosen],
        template="branch",
        max_tokens=max_summary_tokens(settings.branchSummary.reserveTokens),
        files=files,
        instructions=instructions,
    )
    return BranchSummaryPreparation(
        from_id=old_path[-1].id,
        common_ancestor_id=ancestor_id,
        entry_ids=tuple(item.entry_id for item in chosen),
        files=files,
        request=request,
    )


def _newest_within_budget(
    items: Sequence[ContextItem], sizes: Mapping[str, int], budget: int | None
) -> list[ContextItem]:
    start = len(items)
    used = 0
    while start > 0:
        cost = sizes.get(items[start - 1].entry_id, 0)
        if budget is not None and used + cost > budget:
            break
        used += cost
        start -= 1
    while start < len(items) and isinstance(items[start].message, ToolResultMessage):
        start += 1
    return list(items[start:])
