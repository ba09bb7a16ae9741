"""Moving in a session's tree: the tree view, labels, navigate (with a branch summary) and
the history a fork starts from."""

from __future__ import annotations

from typing import Any

from contextd.compaction.branch import BranchSummaryPreparation, prepare_branch_summary
from contextd.compaction.context import build_context, open_tool_calls
from contextd.compaction.files import format_file_lists
from contextd.compaction.short_summary import short_summary, summary_line
from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    HandoffEntry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    PruneEntry,
    SessionInfoEntry,
    ToolResultMessage,
    UserMessage,
    is_node,
    message_text,
)
from contextd.session.errors import CompactionFailed, CompactionRunning, EntryNotFound
from contextd.session.state import LiveState
from contextd.summarizers.base import SummarizerError
from contextd.summarizers.chain import build_summarizer

PREVIEW_CHARS = 100


def entry_preview(entry: Entry) -> str:
    """One short line that tells a person what the entry is."""
    if isinstance(entry, MessageEntry):
        message = entry.message
        text = message_text(message.content)
        if isinstance(message, AssistantMessage) and message.tool_calls:
            calls = ", ".join(call.name for call in message.tool_calls)
            text = f"{text} [{calls}]" if text else f"[{calls}]"
        if isinstance(message, ToolResultMessage):
            text = f"{message.toolName}: {text}"
    elif isinstance(entry, (CompactionEntry, BranchSummaryEntry)):
        text = f"{entry.type}: {summary_line(entry)}"
    elif isinstance(entry, HandoffEntry):
        text = f"handoff from {entry.fromSession}: {entry.document}"
    elif isinstance(entry, ModelChangeEntry):
        text = f"model: {entry.model}"
    elif isinstance(entry, SessionInfoEntry):
        text = f"name: {entry.name}"
    elif isinstance(entry, PruneEntry):
        text = f"pruned {len(entry.entryIds)} tool results ({entry.tokensSaved} tokens)"
    else:
        text = entry.type
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


def _answers(entry: Entry, pending: dict[str, str]) -> bool:
    return (
        isinstance(entry, MessageEntry)
        and isinstance(entry.message, ToolResultMessage)
        and entry.message.toolCallId in pending
    )


class Navigation(LiveState):
    """The tree of a live session and moving its leaf."""

    @property
    def navigating(self) -> bool:
        """A navigation is waiting for its branch summary."""
        return self._navigations > 0

    def node(self, entry_id: str) -> Entry:
        entry = self.tree.entries.get(entry_id)
        if entry is None or not is_node(entry):
            raise EntryNotFound(entry_id)
        return entry

    def tree_nodes(self) -> list[dict[str, Any]]:
        """Every node, abandoned branches and compacted history included, oldest first."""
        nodes = []
        for entry in self.tree.nodes():
            node: dict[str, Any] = {
                "id": entry.id,
                "parentId": entry.parentId,
                "type": entry.type,
                "preview": entry_preview(entry),
                "tokens": self.entry_tokens.get(entry.id, 0),
                "timestamp": entry.timestamp,
                "children": list(self.tree.children.get(entry.id, [])),
            }
            if isinstance(entry, MessageEntry):
                node["role"] = entry.message.role
            if isinstance(entry, (CompactionEntry, BranchSummaryEntry)):
                node["shortSummary"] = summary_line(entry)
            if entry.id in self.tree.labels:
                node["label"] = self.tree.labels[entry.id]
            nodes.append(node)
        return nodes

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.node(entry_id)
        self.append_annotation(LabelEntry, targetId=entry_id, label=label)
        self.announce("label")

    async def navigate(
        self, target_id: str, *, summarize: bool = False, instructions: str | None = None
    ) -> dict[str, Any]:
        """Move the leaf to `target_id`, optionally leaving a summary of the branch behind.

        Navigating to a user message puts the leaf on its parent and hands the message's
        text back for editing. The summary is made before anything is written, so a
        cancelled or failed summary leaves the session where it was.
        """
        if self._running is not None:
            raise CompactionRunning(self.session_id)
        target = self.node(target_id)
        editor_text = None
        new_leaf: str | None = target.id
        if isinstance(target, MessageEntry) and isinstance(target.message, UserMessage):
            editor_text = message_text(target.message.content)
            new_leaf = target.parentId
        else:
            new_leaf = self.through_results(target.id)
        result: dict[str, Any] = {}
        summary = None
        if summarize:
            self._navigations += 1
            try:
                summary = await self._branch_summary(new_leaf, instructions)
            finally:
                self._navigations -= 1
        self.append_annotation(LeafEntry, targetId=new_leaf)
        if summary is not None:
            preparation, text = summary
            entry = self.append_node(
                BranchSummaryEntry,
                fromId=preparation.from_id,
                summary=text + format_file_lists(preparation.files),
                details=preparation.files,
                shortSummary=short_summary(text),
            )
            result["branchSummaryId"] = entry.id
        self._recovering = False
        self.announce("navigate")
        result["leafId"] = self.leaf_id
        if editor_text is not None:
            result["editorText"] = editor_text
        return result

    def through_results(self, entry_id: str) -> str:
        """`entry_id`, or past it to the results that answer its tool calls: going back to
        an answer that called tools means going back to after those tools ran."""
        pending = open_tool_calls(build_context(self.tree.path_to(entry_id), self.entry_tokens))
        while pending:
            answer = next(
                (
                    child
                    for child in reversed(self.tree.children.get(entry_id, []))
                    if _answers(self.tree.entries[child], pending)
                ),
                None,
            )
            if answer is None:
                break
            result = self.tree.entries[answer]
            assert isinstance(result, MessageEntry) and isinstance(result.message, ToolResultMessage)
            pending.pop(result.message.toolCallId)
            entry_id = answer
        return entry_id

    async def _branch_summary(
        self, new_leaf: str | None, instructions: str | None
    ) -> tuple[BranchSummaryPreparation, str] | None:
        budget = self.model_info.context_window - self.settings.branchSummary.reserveTokens
        preparation = prepare_branch_summary(
            self._path,
            self.tree.path_to(new_leaf),
            self.entry_tokens,
            max(budget, 1),
            self.settings,
            instructions=instructions,
        )
        if preparation is None:
            return None
        summarizer = build_summarizer(self.settings.summarizer)
        try:
            answer = await summarizer.summarize_with_info(preparation.request)
        except SummarizerError as error:
            raise CompactionFailed(self.session_id, self.settings.summarizer.provider, str(error)) from None
        return preparation, answer.text


    def fork_history(self, entry_id: str) -> list[Entry]:
        """The path from the root through `entry_id` (and the results of its tool calls,
        when it called tools): the history a fork starts with."""
        return self.tree.path_to(self.through_results(self.node(entry_id).id))
