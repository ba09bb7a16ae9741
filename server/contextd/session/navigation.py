"""Moving in a session's tree: the tree view, labels, navigate (with a branch summary) and
the history a fork starts from."""

from __future__ import annotations

import asyncio
from typing import Any

from contextd.compaction.branch import (
    BranchSummaryPreparation,
    branch_being_left,
    prepare_branch_summary,
)
from contextd.compaction.context import build_context, open_tool_calls
from contextd.compaction.files import format_file_lists
from contextd.compaction.provenance import branch_details
from contextd.compaction.short_summary import clip, short_summary, summary_line
from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    FileDetails,
    HandoffEntry,
    InstructionsEntry,
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
from contextd.results import BeforeNavigateParams, NavigateResult, TreeNode
from contextd.session.errors import (
    CompactionFailed,
    CompactionRunning,
    EntryNotFound,
    NavigationVetoed,
    NothingToCompactError,
)
from contextd.session.jobs import CompactionJobs
from contextd.session.running import RunningCompaction
from contextd.summarizers.base import SummarizerError
from contextd.summarizers.chain import build_summarizer
from contextd.summarizers.errors import redact

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
    elif isinstance(entry, InstructionsEntry):
        text = f"instructions ({entry.source}): {entry.text or 'withdrawn'}"
    else:
        text = entry.type
    return one_line(text, PREVIEW_CHARS)


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace runs as one space), clipped to `limit` characters.
    Only as much of the text is read as the line needs: a preview of a long tool output
    costs no more than one of a short one."""
    size = 4 * limit
    while True:
        head = " ".join(text[:size].split())
        # The words of a prefix begin the words of the whole: past `limit`, the rest is cut.
        if len(head) > limit or size >= len(text):
            return clip(head, limit)
        size *= 4


def _answers(entry: Entry, pending: dict[str, str]) -> bool:
    return (
        isinstance(entry, MessageEntry)
        and isinstance(entry.message, ToolResultMessage)
        and entry.message.toolCallId in pending
    )


class Navigation(CompactionJobs):
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

    def tree_nodes(self) -> list[TreeNode]:
        """Every node, abandoned branches and compacted history included, oldest first."""
        return [self._tree_node(entry) for entry in self.tree.nodes()]

    def _tree_node(self, entry: Entry) -> TreeNode:
        node: TreeNode = {
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
        if entry.id in self.tree.labels:
            node["label"] = self.tree.labels[entry.id]
        if isinstance(entry, (CompactionEntry, BranchSummaryEntry)):
            node["shortSummary"] = summary_line(entry)
        if isinstance(entry, CompactionEntry):
            # What came before it on its path is folded into its summary.
            node["firstKeptEntryId"] = entry.firstKeptEntryId
            node["tokensBefore"] = entry.tokensBefore
            node["tokensAfter"] = entry.tokensAfter
        return node

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.node(entry_id)
        self.append_annotation(LabelEntry, targetId=entry_id, label=label)
        self.announce("label")

    async def navigate(
        self, target_id: str, *, summarize: bool = False, instructions: str | None = None
    ) -> NavigateResult:
        """Move the leaf to `target_id`, optionally leaving a summary of the branch behind.

        Navigating to a user message puts the leaf on its parent and hands the message's
        text back for editing. The client's beforeNavigate hook may cancel the move or
        supply the summary. The summary is made before anything is written, so a cancelled
        or failed summary leaves the session where it was.
        """
        if self._running is not None:
            raise CompactionRunning(self.session_id)
        target = self.node(target_id)
        new_leaf, editor_text = self._landing(target)
        self._navigations += 1  # waiting for the hook or the summary: stays in memory
        try:
            hook = await self.events.before_navigate(
                self._navigate_hook_body(target.id, new_leaf, summarize, instructions)
            )
            if hook.cancel:
                raise NavigationVetoed()
            if self._running is not None:  # a compaction started while the client decided
                raise CompactionRunning(self.session_id)
            supplied = hook.summary
            preparation = (
                self._branch_preparation(new_leaf, instructions, whole_branch=supplied is not None)
                if summarize or supplied is not None
                else None
            )
            if preparation is None:
                return self._move_leaf(new_leaf, editor_text, None)

            async def work(_: RunningCompaction) -> tuple[dict[str, Any], NavigateResult]:
                summary = redact(supplied if supplied is not None else await self._summarize_branch(preparation))
                # Where each item came from, traced off the loop like the summary itself.
                details = await asyncio.to_thread(branch_details, preparation, summary)
                result = self._move_leaf(new_leaf, editor_text, (preparation, summary, details))
                finished = {
                    "entryId": result.branchSummaryId,
                    "tokensAfter": self.tokens,
                    "shortSummary": short_summary(summary),
                }
                return finished, result

            # A job like a compaction: started/finished events, progress, abort, one at a time.
            return await self.run_job("branch", self.tokens, work)
        finally:
            self._navigations -= 1

    def _landing(self, target: Entry) -> tuple[str | None, str | None]:
        """Where a move to `target` puts the leaf, and the text handed back for editing: a
        user message's parent and its text; past the results of an answer's tool calls."""
        if isinstance(target, MessageEntry) and isinstance(target.message, UserMessage):
            return target.parentId, message_text(target.message.content)
        return self.through_results(target.id), None

    def _navigate_hook_body(
        self, target_id: str, new_leaf: str | None, summarize: bool, instructions: str | None
    ) -> BeforeNavigateParams:
        """What contextd/beforeNavigate tells the client: where the leaf goes and what it leaves."""
        left_behind, ancestor_id = branch_being_left(self._path, self.tree.path_to(new_leaf))
        return BeforeNavigateParams(
            sessionId=self.session_id,
            targetId=target_id,
            leafId=self.leaf_id,
            newLeafId=new_leaf,
            commonAncestorId=ancestor_id,
            leftBehindEntryIds=[entry.id for entry in left_behind],
            summarize=summarize,
            instructions=instructions,
        )

    def _move_leaf(
        self,
        new_leaf: str | None,
        editor_text: str | None,
        summary: tuple[BranchSummaryPreparation, str, FileDetails] | None,
    ) -> NavigateResult:
        branch_summary_id = None
        self.append_annotation(LeafEntry, targetId=new_leaf)
        if summary is not None:
            preparation, text, details = summary
            branch_summary_id = self.append_node(
                BranchSummaryEntry,
                fromId=preparation.from_id,
                summary=text + format_file_lists(preparation.files),
                details=details,
                shortSummary=short_summary(text),
            ).id
        self._recovering = False
        self.announce("navigate")
        return NavigateResult(leafId=self.leaf_id, branchSummaryId=branch_summary_id, editorText=editor_text)

    def through_results(self, entry_id: str) -> str:
        """`entry_id`, or past it to the results that answer its tool calls: going back to
        an answer that called tools means going back to after those tools ran."""
        pending = open_tool_calls(item.message for item in build_context(self.tree.path_to(entry_id), self.entry_tokens))
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

    def _branch_preparation(
        self, new_leaf: str | None, instructions: str | None, *, whole_branch: bool = False
    ) -> BranchSummaryPreparation | None:
        """The summary request for the branch a move to `new_leaf` leaves; None when the
        move leaves nothing behind. A branch that does not fit the budget is an error: the
        user asked for a summary and must not lose that branch silently. `whole_branch`
        (the client supplies the summary, no summarizer reads it) lifts the budget."""
        window = self.model_info.context_window
        reserve = self.settings.branchSummary.reserveTokens
        target_path = self.tree.path_to(new_leaf)
        preparation = prepare_branch_summary(
            self._path,
            target_path,
            self.entry_tokens,
            None if whole_branch else max(window - reserve, 1),
            self.settings,
            instructions=instructions,
        )
        if preparation is None and branch_being_left(self._path, target_path)[0]:
            raise NothingToCompactError(
                self.session_id,
                f"the branch you leave does not fit the summary budget of {max(window - reserve, 0)}"
                f" tokens (context window {window} - branchSummary.reserveTokens {reserve});"
                " lower branchSummary.reserveTokens or navigate without a summary",
            )
        return preparation

    async def _summarize_branch(self, preparation: BranchSummaryPreparation) -> str:
        summarizer = build_summarizer(self.settings.summarizer)
        try:
            answer = await summarizer.summarize_with_info(preparation.request)
        except SummarizerError as error:
            raise CompactionFailed(self.session_id, self.settings.summarizer.provider, str(error)) from None
        return answer.text

    def fork_history(self, entry_id: str) -> list[Entry]:
        """The path from the root through `entry_id` (and the results of its tool calls,
        when it called tools): the history a fork starts with."""
        return self.tree.path_to(self.through_results(self.node(entry_id).id))
