"""Live sessions: the in-memory state of each open session, its token figure and its events.

`SessionManager` opens, creates, finds and evicts sessions; `LiveSession` appends entries,
keeps the context's token figure current and tells the client through `SessionEvents`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from datetime import datetime, timedelta, timezone
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from contextd.compaction.prepare import (
    CompactionPreparation,
    NothingToCompact,
    assemble_compaction_summary,
    prepare_compaction,
)
from contextd.compaction.branch import BranchSummaryPreparation, prepare_branch_summary
from contextd.compaction.files import format_file_lists
from contextd.compaction.handoff import prepare_handoff
from contextd.compaction.prune import plan_prune
from contextd.compaction.context import (
    ContextItem,
    build_context,
    open_tool_calls,
    pruned_placeholder,
)
from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    CompactionReason,
    Entry,
    HandoffEntry,
    IdleSettings,
    LabelEntry,
    LeafEntry,
    Message,
    MessageEntry,
    ModelChangeEntry,
    ParentSession,
    PruneEntry,
    SessionHeader,
    SessionInfoEntry,
    Settings,
    SummarizerInfo,
    ToolResultMessage,
    UserMessage,
    is_node,
    message_text,
)
from contextd.store import (
    EntryTree,
    SessionFile,
    SessionListing,
    Store,
    StoreError,
    new_entry_id,
    new_session_id,
)
from contextd.summarizers.base import SummarizerError
from contextd.summarizers.chain import Summary, build_summarizer
from contextd.tokens import count_entry, count_text, resolve_model
from contextd.tokens.context_size import TokenFigure, context_size, context_threshold

log = logging.getLogger(__name__)

T = TypeVar("T")


class EntryNotFound(StoreError):
    def __init__(self, entry_id: str) -> None:
        super().__init__(f"entry {entry_id!r} not found in this session")
        self.entry_id = entry_id


class InvalidAppend(StoreError):
    """A batch of messages that cannot join the context; `field` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class CompactionRunning(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"a compaction of session {session_id!r} is already running")
        self.session_id = session_id


class NothingToCompactError(StoreError):
    def __init__(self, session_id: str, why: str) -> None:
        super().__init__(f"nothing to compact: {why}")
        self.session_id = session_id


class CompactionVetoed(StoreError):
    """The client's beforeCompact hook said no."""

    def __init__(self) -> None:
        super().__init__("the client cancelled the compaction")


class CompactionFailed(StoreError):
    """The summarizer gave up; the session is exactly as it was."""

    def __init__(self, session_id: str, provider: str, why: str) -> None:
        super().__init__(f"compaction failed: {why}")
        self.session_id = session_id
        self.provider = provider


class SessionEvents(Protocol):
    """What a live session tells the outside world; the server turns these into notifications."""

    def token_usage(self, body: dict[str, Any]) -> None: ...

    def session_changed(self, session_id: str, leaf_id: str | None, cause: str) -> None: ...

    def compaction_started(self, body: dict[str, Any]) -> None: ...

    def compaction_finished(self, body: dict[str, Any]) -> None: ...

    def compaction_progress(self, compaction_id: str, stage: str, message: str) -> None: ...

    async def before_compact(self, body: dict[str, Any]) -> HookAnswer: ...

    def idle_timer(self, body: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class HookAnswer:
    """What a client's beforeCompact hook decided; the default lets the compaction proceed."""

    cancel: bool = False
    summary: str | None = None
    instructions: str | None = None


def check_tool_results(messages: Sequence[Message], pending: dict[str, str]) -> None:
    """Every toolResult must answer a toolCall that is still waiting for one."""
    pending = dict(pending)
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.id in pending:
                    raise InvalidAppend(
                        f"messages.{index}.content",
                        f"tool call id {call.id!r} is already waiting for its result",
                    )
                pending[call.id] = call.name
        elif isinstance(message, ToolResultMessage):
            if pending.pop(message.toolCallId, None) is None:
                raise InvalidAppend(
                    f"messages.{index}.toolCallId",
                    f"no tool call {message.toolCallId!r} is waiting for a result in this context",
                )


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
        text = f"{entry.type}: {entry.summary}"
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


@dataclass
class RunningCompaction:
    compaction_id: str
    reason: str
    task: asyncio.Task[Any] | None
    aborted: bool = False
    will_retry: bool = False
    """Whether the client should resend its request once this job is done."""


def _answers(entry: Entry, pending: dict[str, str]) -> bool:
    return (
        isinstance(entry, MessageEntry)
        and isinstance(entry.message, ToolResultMessage)
        and entry.message.toolCallId in pending
    )


def _text(summary: Summary | None) -> str | None:
    return summary.text if summary is not None else None


def _without_turn_prefix(prepared: CompactionPreparation) -> CompactionPreparation:
    """A summary supplied by the client covers everything summarized, split turn included."""
    return replace(prepared, turn_prefix_request=None, history_request=prepared.history_request
                   or prepared.turn_prefix_request)


class LiveSession:
    """One open session: its file, its tree, the model it talks to and the context's size."""

    def __init__(
        self, file: SessionFile, tree: EntryTree, settings: Settings, events: SessionEvents
    ) -> None:
        self.file = file
        self.tree = tree
        self.settings = settings
        self.events = events
        self.entry_tokens: dict[str, int] = {}
        self.model_id = settings.defaultModel
        self.model_info = resolve_model(self.model_id, settings.models)
        self._path: list[Entry] = []
        self._pending_calls: dict[str, str] = {}
        self._figure = TokenFigure(0, "counted")
        self._running: RunningCompaction | None = None
        self._recovering = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._idle_handle: asyncio.TimerHandle | None = None
        self.idle_override: IdleSettings | None = None
        self.hand_off: Callable[[], Awaitable[Any]] | None = None
        """Set by the manager: starts a handoff of this session (strategy `handoff`)."""
        self._refresh_model_from(tree.nodes())
        self._count_all(tree.entries.values())
        self.rebuild()

    # --- identity ---------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.file.session_id

    @property
    def header(self) -> SessionHeader:
        return self.file.header

    @property
    def leaf_id(self) -> str | None:
        return self.tree.leaf_id

    @property
    def name(self) -> str | None:
        for entry in reversed(self._path):
            if isinstance(entry, SessionInfoEntry):
                return entry.name
        return self.header.name

    @property
    def path(self) -> list[Entry]:
        return self._path

    # --- tokens -----------------------------------------------------------------------

    def _count_all(self, entries: Iterable[Entry]) -> None:
        encoding = self.model_info.encoding
        for entry in entries:
            self.entry_tokens[entry.id] = count_entry(entry, encoding)

    def _pruned_tokens(self, tokens: int) -> int:
        return count_text(pruned_placeholder(tokens), self.model_info.encoding)

    def figure_of(self, path: Sequence[Entry]) -> TokenFigure:
        return context_size(path, self.entry_tokens, self._pruned_tokens)

    @property
    def tokens(self) -> int:
        return self._figure.tokens

    @property
    def threshold_tokens(self) -> int:
        return context_threshold(self.model_info.context_window, self.settings)

    def usage_body(self) -> dict[str, Any]:
        window = self.model_info.context_window
        return {
            "sessionId": self.session_id,
            "tokens": self._figure.tokens,
            "contextWindow": window,
            "percent": round(100 * self._figure.tokens / window, 1),
            "thresholdTokens": self.threshold_tokens,
            "source": self._figure.source,
            "model": self.model_id,
        }

    # --- the context ------------------------------------------------------------------

    def rebuild(self) -> None:
        """Recompute the path, pending tool calls and token figure from the tree (after any
        change that is not a plain append: load, compaction, prune, navigation, model)."""
        self._path = self.tree.path_to(self.tree.leaf_id)
        self._pending_calls = open_tool_calls(self.context_items())
        self._figure = self.figure_of(self._path)

    def context_items(self) -> list[ContextItem]:
        return build_context(self._path, self.entry_tokens)

    def context_messages(self) -> list[Message]:
        return [item.message for item in self.context_items()]

    # --- appending --------------------------------------------------------------------

    def _write(self, entry_class: type[Any], **fields: Any) -> Entry:
        entry = entry_class(id=new_entry_id(self.tree.entries), parentId=self.tree.leaf_id, **fields)
        tokens = count_entry(entry, self.model_info.encoding)
        self.file.append(entry)
        self.tree.add(entry)
        self.entry_tokens[entry.id] = tokens
        return entry

    def _extend_path(self, entry: Entry) -> None:
        """The cheap path for a new leaf: update the figure without recounting the context."""
        self._path.append(entry)
        if isinstance(entry, MessageEntry):
            message = entry.message
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    self._pending_calls[call.id] = call.name
                if message.usage is not None and not message.failed:
                    self._figure = TokenFigure(message.usage.context_tokens, "usage")
                    return
            elif isinstance(message, ToolResultMessage):
                self._pending_calls.pop(message.toolCallId, None)
        self._figure = TokenFigure(
            self._figure.tokens + self.entry_tokens[entry.id], self._figure.source
        )

    def append_messages(self, messages: Sequence[Message]) -> list[str]:
        """Validate the whole batch first, so a bad message stores nothing."""
        check_tool_results(messages, self._pending_calls)
        entry_ids = []
        for message in messages:
            entry = self._write(MessageEntry, message=message)
            self._extend_path(entry)
            entry_ids.append(entry.id)
        self.announce("append")
        self.after_append(messages)
        return entry_ids

    def append_node(self, entry_class: type[Any], **fields: Any) -> Entry:
        """Append a non-message node (compaction, prune, summaries, model, name) and recount."""
        entry = self._write(entry_class, **fields)
        self.rebuild()
        return entry

    def append_annotation(self, entry_class: type[Any], **fields: Any) -> Entry:
        """A `label` or `leaf` line: it annotates the tree without growing it."""
        entry = self._write(entry_class, **fields)
        if isinstance(entry, LeafEntry):
            self.rebuild()
        return entry

    def announce(self, cause: str) -> None:
        self.events.session_changed(self.session_id, self.leaf_id, cause)
        self.events.token_usage(self.usage_body())

    # --- compaction -------------------------------------------------------------------

    @property
    def compacting(self) -> bool:
        return self._running is not None

    def preview_compaction(self, instructions: str | None = None) -> dict[str, Any]:
        """What `compact` would do, without calling a summarizer."""
        prepared = self._prepare("manual", instructions)
        prune = plan_prune(self._path, self.entry_tokens, self.settings.pruning)
        return {
            "firstKeptEntryId": prepared.first_kept_entry_id,
            "summarizeEntryIds": list(prepared.summarize_entry_ids),
            "keptEntryIds": list(prepared.kept_entry_ids),
            "pruneEntryIds": list(prune.entry_ids) if prune else [],
            "tokensBefore": prepared.tokens_before,
            "tokensKept": prepared.tokens_kept,
            "tokensAfter": prepared.tokens_after,
            "splitTurn": prepared.is_split_turn,
        }

    def _prepare(self, reason: CompactionReason, instructions: str | None) -> CompactionPreparation:
        prepared = prepare_compaction(
            self._path,
            self.entry_tokens,
            self.settings,
            instructions=instructions,
            reason=reason,
            tokens_before=self.tokens,
        )
        if isinstance(prepared, NothingToCompact):
            raise NothingToCompactError(self.session_id, prepared.message)
        return prepared

    async def compact(
        self,
        reason: CompactionReason,
        instructions: str | None = None,
        *,
        will_retry: bool = False,
    ) -> CompactionEntry:
        """Summarize the old part of the context into a `compaction` entry.

        Runs in the calling task, so cancelling that task (a `$/cancelRequest`, or `abort`)
        stops it; whatever stops it, the session is left exactly as it was.
        """
        prepared = self._prepare(reason, instructions)

        async def work(running: RunningCompaction) -> tuple[dict[str, Any], CompactionEntry]:
            hook = await self.events.before_compact(self._hook_body(running, prepared))
            if hook.cancel:
                raise CompactionVetoed()
            current = prepared
            if hook.instructions:
                joined = "\n\n".join(filter(None, [instructions, hook.instructions]))
                current = self._prepare(reason, joined)
            if hook.summary:
                summaries = {"history": Summary(hook.summary, SummarizerInfo(provider="client"))}
                current = _without_turn_prefix(current)
            else:
                summaries = await self._summarize(current)
            self.events.compaction_progress(running.compaction_id, "report", "Writing the summary")
            entry = self._write_compaction(current, summaries)
            return {"tokensAfter": entry.tokensAfter, "entryId": entry.id}, entry

        entry = await self.run_job(reason, prepared.tokens_before, work, will_retry=will_retry)
        self.announce("compaction")
        return entry

    def _hook_body(self, running: RunningCompaction, prepared: CompactionPreparation) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "compactionId": running.compaction_id,
            "reason": prepared.reason,
            "tokensBefore": prepared.tokens_before,
            "firstKeptEntryId": prepared.first_kept_entry_id,
            "summarizeEntryIds": list(prepared.summarize_entry_ids),
            "keptEntryIds": list(prepared.kept_entry_ids),
            "previousSummary": prepared.previous_summary,
        }

    async def run_job(
        self,
        reason: str,
        tokens_before: int,
        work: Callable[[RunningCompaction], Awaitable[tuple[dict[str, Any], T]]],
        *,
        will_retry: bool = False,
    ) -> T:
        """Run one summarizing job (a compaction or a handoff) with its started/finished events.

        One job at a time per session. Whatever stops the job, it is reported and the
        session keeps everything it had."""
        if self._running is not None:
            raise CompactionRunning(self.session_id)
        running = RunningCompaction(
            secrets.token_hex(6), reason, asyncio.current_task(), will_retry=will_retry
        )
        self._running = running
        self.cancel_idle_timer()
        body = {"compactionId": running.compaction_id, "reason": reason, "tokensBefore": tokens_before}
        self.events.compaction_started({"sessionId": self.session_id, **body})
        self.events.compaction_progress(running.compaction_id, "begin", "Summarizing history")
        try:
            fields, value = await work(running)
        except asyncio.CancelledError:
            outcome = "aborted" if running.aborted else "cancelled"
            self._finish(body, outcome=outcome, error=f"{reason} compaction {outcome}")
            raise
        except CompactionVetoed:
            self._finish(body, outcome="cancelled", error="cancelled by the client's beforeCompact")
            raise
        except SummarizerError as error:
            self._finish(body, outcome="failed", error=str(error))
            raise CompactionFailed(self.session_id, self.settings.summarizer.provider, str(error)) from None
        except NothingToCompactError as error:
            self._finish(body, outcome="failed", error=str(error))
            raise
        finally:
            self._running = None
        self._finish(body, outcome="compacted", willRetry=running.will_retry, **fields)
        self.touch()
        return value

    async def _summarize(self, prepared: CompactionPreparation) -> dict[str, Summary]:
        summarizer = build_summarizer(self.settings.summarizer)
        requests = {
            name: request
            for name, request in (
                ("history", prepared.history_request),
                ("turn_prefix", prepared.turn_prefix_request),
            )
            if request is not None
        }
        tasks = [
            asyncio.ensure_future(summarizer.summarize_with_info(request))
            for request in requests.values()
        ]
        try:
            answers = await asyncio.gather(*tasks)
        finally:
            for task in tasks:  # one failed: the others' answers are of no use now
                task.cancel()
        return dict(zip(requests, answers))

    def _write_compaction(
        self, prepared: CompactionPreparation, summaries: dict[str, Summary]
    ) -> CompactionEntry:
        if all(entry.id != prepared.first_kept_entry_id for entry in self._path):
            raise NothingToCompactError(
                self.session_id, "the session moved to another branch while compacting"
            )
        text = assemble_compaction_summary(
            prepared,
            history_summary=_text(summaries.get("history")),
            turn_prefix_summary=_text(summaries.get("turn_prefix")),
        )
        author = next(iter(summaries.values())).summarizer
        fields: dict[str, Any] = dict(
            summary=text,
            firstKeptEntryId=prepared.first_kept_entry_id,
            tokensBefore=prepared.tokens_before,
            reason=prepared.reason,
            summarizer=author,
            details=prepared.files,
            instructions=prepared.instructions,
        )
        draft = CompactionEntry(id="draft", parentId=self.leaf_id, tokensAfter=0, **fields)
        self.entry_tokens[draft.id] = count_entry(draft, self.model_info.encoding)
        tokens_after = self.figure_of([*self._path, draft]).tokens
        del self.entry_tokens[draft.id]
        entry = self.append_node(CompactionEntry, tokensAfter=tokens_after, **fields)
        assert isinstance(entry, CompactionEntry)
        return entry

    def _finish(self, body: dict[str, Any], **fields: Any) -> None:
        outcome = fields["outcome"]
        fields.setdefault("willRetry", False)
        self.events.compaction_progress(body["compactionId"], "end", outcome)
        self.events.compaction_finished({"sessionId": self.session_id, **body, **fields})

    def abort_compaction(self) -> bool:
        running = self._running
        if running is None or running.task is None:
            return False
        running.aborted = True
        running.task.cancel()
        return True

    # --- automatic compaction ---------------------------------------------------------

    @property
    def auto_compaction(self) -> bool:
        compaction = self.settings.compaction
        return compaction.enabled and compaction.strategy != "off"

    def after_append(self, messages: Sequence[Message]) -> None:
        """The automatic triggers: an overflow or a truncated answer, else the threshold."""
        last = messages[-1]
        if isinstance(last, AssistantMessage):
            if last.stopReason == "error" and last.errorKind == "context_overflow":
                self._recover("overflow")
                return
            if last.stopReason == "length":
                self._recover("incomplete")
                return
            if not last.failed:
                self._recovering = False
        self._check_threshold()

    def _check_threshold(self) -> None:
        if not self.auto_compaction or self._busy() or self.tokens < self.threshold_tokens:
            return
        self._prune_if_worth_it()
        if self.tokens < self.threshold_tokens:
            return
        if self.settings.compaction.strategy == "handoff" and self.hand_off is not None:
            self.spawn(self._auto_handoff(self.hand_off))
        else:
            self.spawn(self._auto_compact("threshold"))

    async def _auto_handoff(self, hand_off: Callable[[], Awaitable[Any]]) -> None:
        try:
            await hand_off()
        except (CompactionFailed, CompactionRunning) as error:
            log.warning("session %s: threshold handoff: %s", self.session_id, error)

    def _prune_if_worth_it(self) -> None:
        plan = plan_prune(self._path, self.entry_tokens, self.settings.pruning)
        if plan is not None:
            self.append_node(PruneEntry, entryIds=list(plan.entry_ids), tokensSaved=plan.tokens_saved)
            self.announce("prune")

    def _recover(self, reason: CompactionReason) -> None:
        """The failed answer leaves the context, then a compaction makes room for a retry."""
        if not self.auto_compaction:
            return
        if self._recovering:
            # The retry after our compaction failed the same way: compacting again would loop.
            self._report_failure(reason, "the context is still too large right after a compaction")
            return
        failed = self._path[-1]
        self.append_annotation(LeafEntry, targetId=failed.parentId)
        self.announce(reason)
        self._recovering = True
        running = self._running
        if running is not None and running.reason != "handoff":
            running.will_retry = True  # the compaction already under way makes the room
        elif not self._busy():
            self.spawn(self._auto_compact(reason, will_retry=True))

    async def _auto_compact(self, reason: CompactionReason, *, will_retry: bool = False) -> None:
        try:
            await self.compact(reason, will_retry=will_retry)
        except NothingToCompactError as error:
            if will_retry or reason == "idle":
                # The client was told a compaction is coming (a retry, a fired timer).
                self._report_failure(reason, str(error))
            else:
                log.info("session %s: %s compaction skipped: %s", self.session_id, reason, error)
        except (CompactionFailed, CompactionRunning, CompactionVetoed) as error:
            log.warning("session %s: %s compaction: %s", self.session_id, reason, error)

    def _report_failure(self, reason: CompactionReason, error: str) -> None:
        """A compaction that cannot start is still reported, so clients can stop waiting."""
        body = {"compactionId": secrets.token_hex(6), "reason": reason, "tokensBefore": self.tokens}
        self.events.compaction_started({"sessionId": self.session_id, **body})
        self._finish(body, outcome="failed", error=error)

    def _busy(self) -> bool:
        return self._running is not None or any(not task.done() for task in self._tasks)

    def has_pending_work(self) -> bool:
        """A job running or a timer armed: such a session stays in memory."""
        return self._busy() or self._idle_handle is not None

    def spawn(self, work: Any) -> asyncio.Task[Any]:
        """Background work of this session; it dies with the session."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- the tree and moving in it ------------------------------------------------------

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
        summary = await self._branch_summary(new_leaf, instructions) if summarize else None
        self.append_annotation(LeafEntry, targetId=new_leaf)
        if summary is not None:
            preparation, text = summary
            entry = self.append_node(
                BranchSummaryEntry,
                fromId=preparation.from_id,
                summary=text + format_file_lists(preparation.files),
                details=preparation.files,
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

    # --- idle compaction ------------------------------------------------------------------

    @property
    def idle_settings(self) -> IdleSettings:
        return self.idle_override or self.settings.idle

    def idle_threshold(self) -> int:
        idle = self.idle_settings
        if idle.thresholdTokens is not None:
            return idle.thresholdTokens
        return int(self.model_info.context_window * idle.thresholdPercent)

    def touch(self) -> None:
        """Activity on the session: (re)arm the idle timer if the context is big enough,
        else cancel it. Timers are loop callbacks, not threads: many sessions cost nothing."""
        idle = self.idle_settings
        if idle.enabled and self._running is None and self.tokens >= self.idle_threshold():
            self._arm_idle_timer(idle.timeoutSeconds)
        else:
            self.cancel_idle_timer()

    def _arm_idle_timer(self, seconds: float) -> None:
        self._cancel_timer_handle()
        loop = asyncio.get_running_loop()
        self._idle_handle = loop.call_later(seconds, self._idle_fired)
        due = datetime.now(timezone.utc) + timedelta(seconds=seconds)
        self._idle_event("armed", dueAt=due.isoformat(timespec="milliseconds").replace("+00:00", "Z"))

    def cancel_idle_timer(self) -> None:
        if self._cancel_timer_handle():
            self._idle_event("cancelled")

    def _cancel_timer_handle(self) -> bool:
        handle, self._idle_handle = self._idle_handle, None
        if handle is None:
            return False
        handle.cancel()
        return True

    def _idle_fired(self) -> None:
        self._idle_handle = None
        self._idle_event("fired")
        if self._running is None:
            self.spawn(self._auto_compact("idle"))

    def _idle_event(self, state: str, **fields: Any) -> None:
        self.events.idle_timer({"sessionId": self.session_id, "state": state, **fields})

    def configure_idle(self, idle: IdleSettings) -> None:
        self.idle_override = idle
        self.touch()

    # --- model ------------------------------------------------------------------------

    def _refresh_model_from(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            if isinstance(entry, ModelChangeEntry):
                self._use_model(entry.model)

    def _use_model(self, model_id: str) -> None:
        self.model_id = model_id
        self.model_info = resolve_model(model_id, self.settings.models)

    def set_model(self, model_id: str) -> None:
        old_encoding = self.model_info.encoding
        self._use_model(model_id)
        if self.model_info.encoding != old_encoding:
            self._count_all(self.tree.entries.values())
        self.append_node(ModelChangeEntry, model=model_id)
        self.announce("model")

    def apply_settings(self, settings: Settings) -> None:
        old_encoding = self.model_info.encoding
        self.settings = settings
        self._use_model(self.model_id)
        if self.model_info.encoding != old_encoding:
            self._count_all(self.tree.entries.values())
        self.rebuild()

    def close(self) -> None:
        self.cancel_idle_timer()
        for task in list(self._tasks):
            task.cancel()
        self.abort_compaction()
        self.file.close()

    def state(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "name": self.name,
            "workspace": self.header.workspace,
            "leafId": self.leaf_id,
            "model": self.model_id,
            "contextWindow": self.model_info.context_window,
            "entries": sum(1 for _ in self.tree.nodes()),
            "usage": self.usage_body(),
            "compacting": self.compacting,
            "path": str(self.file.path),
        }


class SessionManager:
    """Every session this daemon has open, loaded on demand and evicted when unused."""

    max_loaded = 64
    """Open sessions kept in memory; the least recently used beyond this are written off to
    disk (they already are) and reloaded on their next request."""

    def __init__(self, store: Store, settings: Settings, events: SessionEvents) -> None:
        self.store = store
        self.settings = settings
        self.events = events
        self._loaded: OrderedDict[str, LiveSession] = OrderedDict()

    def create(
        self,
        workspace: str,
        *,
        name: str | None = None,
        model: str | None = None,
        parent: ParentSession | None = None,
    ) -> LiveSession:
        header = SessionHeader(
            id=new_session_id(), workspace=workspace, name=name, parentSession=parent
        )
        session = LiveSession(self.store.create(header), EntryTree(), self.settings, self.events)
        session.set_model(model or self.settings.defaultModel)
        if name:
            session.append_node(SessionInfoEntry, name=name)
        self._remember(session)
        return session

    def fork(self, source: LiveSession, entry_id: str) -> LiveSession:
        """A new session whose history is the path from the root through `entry_id` (and the
        results of its tool calls, when it called tools)."""
        path = source.tree.path_to(source.through_results(source.node(entry_id).id))
        header = SessionHeader(
            id=new_session_id(),
            workspace=source.header.workspace,
            name=source.name,
            parentSession=ParentSession(id=source.session_id, entryId=entry_id),
        )
        file = self.store.create(header)
        for entry in path:
            file.append(entry)
        session = LiveSession(file, tree_of(path), self.settings, self.events)
        self._remember(session)
        return session

    async def handoff(self, source: LiveSession, goal: str | None) -> tuple[LiveSession, HandoffEntry]:
        """Write a handoff document with the summarizer and start a new session with it."""
        request = prepare_handoff(source.path, source.entry_tokens, source.settings, goal)
        summarizer = build_summarizer(source.settings.summarizer)

        async def work(running: RunningCompaction) -> tuple[dict[str, Any], tuple[LiveSession, HandoffEntry]]:
            answer = await summarizer.summarize_with_info(request)
            fresh = self.create(
                source.header.workspace,
                model=source.model_id,
                parent=ParentSession(id=source.session_id, entryId=source.leaf_id),
            )
            entry = fresh.append_node(HandoffEntry, document=answer.text, fromSession=source.session_id)
            assert isinstance(entry, HandoffEntry)
            fields = {"tokensAfter": fresh.tokens, "entryId": entry.id, "handoffSessionId": fresh.session_id}
            return fields, (fresh, entry)

        fresh, entry = await source.run_job("handoff", source.tokens, work)
        fresh.announce("handoff")
        return fresh, entry

    def get(self, session_id: str) -> LiveSession:
        """The live session, loading it from disk when it is not in memory."""
        session = self._loaded.get(session_id)
        if session is not None:
            self._loaded.move_to_end(session_id)
            return session
        listing = self.store.find_session(session_id)
        return self._load(listing)

    def _load(self, listing: SessionListing) -> LiveSession:
        file, loaded = self.store.open(listing)
        session = LiveSession(file, tree_of(loaded.entries), self.settings, self.events)
        self._remember(session)
        return session

    def _remember(self, session: LiveSession) -> None:
        session.hand_off = lambda: self.handoff(session, None)
        self._loaded[session.session_id] = session
        idle = [
            sid
            for sid, live in self._loaded.items()
            if sid != session.session_id and not live.has_pending_work()
        ]
        for evicted_id in idle[: max(0, len(self._loaded) - self.max_loaded)]:
            self._loaded.pop(evicted_id).close()
            log.info("session %s evicted from memory; it reloads on its next request", evicted_id)

    def close(self, session_id: str) -> bool:
        session = self._loaded.pop(session_id, None)
        if session is None:
            self.store.find_session(session_id)  # unknown ids still answer "not found"
            return False
        session.close()
        return True

    def close_all(self) -> None:
        while self._loaded:
            _, session = self._loaded.popitem()
            session.close()

    def loaded_session(self, session_id: str) -> LiveSession | None:
        return self._loaded.get(session_id)

    def loaded(self) -> list[LiveSession]:
        return list(self._loaded.values())

    def apply_settings(self, settings: Settings) -> None:
        self.settings = settings
        for session in self._loaded.values():
            session.apply_settings(settings)
            session.events.token_usage(session.usage_body())

    def listing(self, workspace: str | None) -> list[dict[str, Any]]:
        rows = []
        for listing in self.store.listings(workspace):
            live = self._loaded.get(listing.session_id)
            rows.append(self._listing_row(listing, live))
        rows.sort(key=lambda row: row["updatedAt"], reverse=True)
        return rows

    def _listing_row(self, listing: SessionListing, live: LiveSession | None) -> dict[str, Any]:
        session = live or self._read_only_view(listing)
        header = session.header
        row: dict[str, Any] = {
            "sessionId": listing.session_id,
            "name": session.name,
            "workspace": header.workspace,
            "entries": sum(1 for _ in session.tree.nodes()),
            "tokens": session.tokens,
            "updatedAt": _updated_at(listing.path),
        }
        if header.parentSession is not None:
            row["parentSession"] = header.parentSession.model_dump(exclude_none=True)
        return row

    def _read_only_view(self, listing: SessionListing) -> LiveSession:
        """A session read from disk without taking its lock, for listing only."""
        file, loaded = self.store.peek(listing)
        return LiveSession(file, tree_of(loaded.entries), self.settings, SilentEvents())


def tree_of(entries: Iterable[Entry]) -> EntryTree:
    tree = EntryTree()
    for entry in entries:
        tree.add(entry)
    return tree


def _updated_at(path: Path) -> str:
    stamp = datetime.fromtimestamp(os.stat(path).st_mtime, timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class SilentEvents:
    """For sessions nobody watches: read-only views and tests."""

    def token_usage(self, body: dict[str, Any]) -> None:
        pass

    def session_changed(self, session_id: str, leaf_id: str | None, cause: str) -> None:
        pass

    def compaction_started(self, body: dict[str, Any]) -> None:
        pass

    def compaction_finished(self, body: dict[str, Any]) -> None:
        pass

    def compaction_progress(self, compaction_id: str, stage: str, message: str) -> None:
        pass

    async def before_compact(self, body: dict[str, Any]) -> HookAnswer:
        return HookAnswer()

    def idle_timer(self, body: dict[str, Any]) -> None:
        pass
