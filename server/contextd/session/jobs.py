"""The running job of a session: a compaction or a handoff, one at a time, and its abort.

Each job reports compactionStarted/compactionFinished; whatever stops it (a failure, an
abort, a cancelled request), the session keeps everything it had.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from contextd.compaction.context import standing_instructions
from contextd.compaction.handoff import prepare_handoff
from contextd.compaction.prepare import (
    CompactionPreparation,
    NothingToCompact,
    assemble_compaction_summary,
    expected_summary_tokens,
    offline_summary,
    prepare_compaction,
)
from contextd.compaction.provenance import compaction_details, handoff_details
from contextd.compaction.prune import plan_prune
from contextd.compaction.short_summary import short_summary
from contextd.model import (
    CompactionEntry,
    CompactionReason,
    HandoffEntry,
    InstructionsEntry,
    ParentSession,
    PreserveData,
    SummarizerInfo,
)
from contextd.results import (
    BeforeCompactParams,
    CompactionFinished,
    CompactionReason as JobReason,
    CompactionStarted,
    CompactPreview,
)
from contextd.session.errors import (
    CompactionFailed,
    CompactionRunning,
    CompactionVetoed,
    NothingToCompactError,
)
from contextd.session.running import RunningCompaction
from contextd.session.state import LiveState
from contextd.store import StorageFailed
from contextd.summarizers.base import SummarizerError
from contextd.summarizers.chain import Summary, build_summarizer
from contextd.summarizers.errors import redact

T = TypeVar("T")

COMPACTION_FIELDS = {
    "summary", "firstKeptEntryId", "tokensBefore", "reason", "summarizer", "details", "instructions",
    "shortSummary", "preserveData",
}
"""What a compaction draft hands on to the entry that is written (id, parent and tokensAfter
are the written entry's own)."""
NewSession = TypeVar("NewSession", bound=LiveState)


def _text(summary: Summary | None) -> str | None:
    return summary.text if summary is not None else None


def _without_turn_prefix(prepared: CompactionPreparation) -> CompactionPreparation:
    """A summary supplied by the client covers everything summarized, split turn included."""
    return replace(prepared, turn_prefix_request=None, history_request=prepared.history_request
                   or prepared.turn_prefix_request)


class CompactionJobs(LiveState):
    """Compaction and handoff of the live state, run as one job at a time."""

    async def preview_compaction(self, instructions: str | None = None) -> CompactPreview:
        """What `compact` would do, without calling a summarizer.

        `tokensAfter` is an estimate: the context with the summary the offline summarizer
        writes for it (cheap and local), resized to this session's earlier summaries by the
        configured summarizer when there are some. `tokensAfterMax` is the upper bound: the
        kept part plus the most the summaries may take, plus the part of the prompt the agent
        sends that contextd never sees. `summary` is that offline summary: a
        preview of what would be kept of the history (for a mirror, what to carry into a
        fresh agent session). The summary is written in a thread: on a large session it takes
        long enough to hold up every other request."""
        prepared = self._prepare("manual", instructions)
        prune = plan_prune(self._path, self.entry_tokens, self.settings.pruning)
        summary = redact(await asyncio.to_thread(offline_summary, prepared))
        return CompactPreview(
            firstKeptEntryId=prepared.first_kept_entry_id,
            summarizeEntryIds=list(prepared.summarize_entry_ids),
            keptEntryIds=list(prepared.kept_entry_ids),
            pruneEntryIds=list(prune.entry_ids) if prune else [],
            tokensBefore=prepared.tokens_before,
            tokensKept=prepared.tokens_kept,
            tokensAfter=self._estimate_tokens_after(prepared, summary),
            tokensAfterMax=prepared.tokens_after + self.unseen_tokens,
            splitTurn=prepared.is_split_turn,
            summary=summary,
        )

    def _estimate_tokens_after(self, prepared: CompactionPreparation, offline: str) -> int:
        provider = self.settings.summarizer.provider
        draft = self._compaction_draft(prepared, offline, SummarizerInfo(provider="offline"))
        offline_tokens = self._count(draft)
        earlier = [
            self.entry_tokens[entry.id]
            for entry in self._path
            if isinstance(entry, CompactionEntry) and entry.summarizer.provider == provider != "offline"
        ]
        expected = expected_summary_tokens(offline_tokens, earlier)
        return self.figure_with_compaction(draft).tokens + round(
            (expected - offline_tokens) * self.calibration
        )

    def _prepare(self, reason: CompactionReason, instructions: str | None) -> CompactionPreparation:
        prepared = prepare_compaction(
            self._path,
            self.entry_tokens,
            self.settings,
            calibration=self.calibration,
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
            entry = await self._write_compaction(current, summaries)
            fields = {"tokensAfter": entry.tokensAfter, "entryId": entry.id, "shortSummary": entry.shortSummary}
            return fields, entry

        entry = await self.run_job(reason, prepared.tokens_before, work, will_retry=will_retry)
        self.announce("compaction")
        return entry

    def _hook_body(self, running: RunningCompaction, prepared: CompactionPreparation) -> BeforeCompactParams:
        return BeforeCompactParams(
            sessionId=self.session_id,
            compactionId=running.compaction_id,
            reason=prepared.reason,
            tokensBefore=prepared.tokens_before,
            firstKeptEntryId=prepared.first_kept_entry_id,
            summarizeEntryIds=list(prepared.summarize_entry_ids),
            keptEntryIds=list(prepared.kept_entry_ids),
            previousSummary=prepared.previous_summary,
        )

    async def run_job(
        self,
        reason: JobReason,
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
        started = self._started(running.compaction_id, reason, tokens_before)
        self.events.compaction_progress(running.compaction_id, "begin", "Summarizing history")
        try:
            fields, value = await work(running)
        except asyncio.CancelledError:
            outcome = "aborted" if running.aborted else "cancelled"
            self._finish(started, outcome=outcome, error=f"{reason} compaction {outcome}")
            raise
        except CompactionVetoed:
            self._finish(started, outcome="cancelled", error="cancelled by the client's beforeCompact")
            raise
        except SummarizerError as error:
            self._finish(started, outcome="failed", error=str(error))
            raise CompactionFailed(self.session_id, self.settings.summarizer.provider, str(error)) from None
        except (NothingToCompactError, StorageFailed) as error:
            self._finish(started, outcome="failed", error=str(error))
            raise
        finally:
            self._running = None
        self._finish(started, outcome="compacted", willRetry=running.will_retry, **fields)
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

    async def _write_compaction(
        self, prepared: CompactionPreparation, summaries: dict[str, Summary]
    ) -> CompactionEntry:
        """Append the compaction entry: the summaries put together, its `details` (the file
        lists and where each item came from) and the provider state a native compaction
        returned."""
        # A summary is stored and sent: no key this process knows may be in it, in any form.
        text = redact(
            assemble_compaction_summary(
                prepared,
                history_summary=_text(summaries.get("history")),
                turn_prefix_summary=_text(summaries.get("turn_prefix")),
            )
        )
        # Tracing every item to its entries scans the whole span: off the loop, like
        # the summary itself, so that other requests are answered meanwhile.
        details = await asyncio.to_thread(compaction_details, prepared, text)
        author = next(iter(summaries.values())).summarizer
        preserve_data = self._preserve_data(prepared, summaries)
        # Checked after the last await, so that nothing moves the leaf before the append.
        if all(entry.id != prepared.first_kept_entry_id for entry in self._path):
            raise NothingToCompactError(
                self.session_id, "the session moved to another branch while compacting"
            )
        draft = self._compaction_draft(prepared, text, author, preserve_data)
        tokens_after = self.figure_with_compaction(draft).tokens
        fields = draft.model_dump(include=COMPACTION_FIELDS)
        fields["details"] = details
        entry = self.append_node(CompactionEntry, **{**fields, "tokensAfter": tokens_after})
        assert isinstance(entry, CompactionEntry)
        return entry

    def _preserve_data(
        self, prepared: CompactionPreparation, summaries: dict[str, Summary]
    ) -> PreserveData | None:
        """The provider state standing for what was summarized: the history summary's; when
        only a split turn's beginning was summarized, the state a provider made of it (it
        holds the previous one), else the previous compaction's, which still holds the
        history before that turn."""
        if (history := summaries.get("history")) is not None:
            return history.preserve_data
        turn = summaries.get("turn_prefix")
        if turn is not None and turn.preserve_data is not None:
            return turn.preserve_data.model_copy(update={"coversSplitTurn": True})
        previous = self.tree.entries.get(prepared.previous_entry_id or "")
        if isinstance(previous, CompactionEntry) and (state := previous.provider_state()) is not None:
            return state.model_copy(update={"coversSplitTurn": None})
        return None

    def _compaction_draft(
        self,
        prepared: CompactionPreparation,
        summary: str,
        author: SummarizerInfo,
        preserve_data: PreserveData | None = None,
    ) -> CompactionEntry:
        """The compaction entry `prepared` would write with `summary`, before it is written."""
        return CompactionEntry(
            id="draft",
            parentId=self.leaf_id,
            summary=summary,
            firstKeptEntryId=prepared.first_kept_entry_id,
            tokensBefore=prepared.tokens_before,
            tokensAfter=0,
            reason=prepared.reason,
            summarizer=author,
            details=prepared.files,
            instructions=prepared.instructions,
            shortSummary=short_summary(summary),
            preserveData=preserve_data,
        )

    def _started(self, compaction_id: str, reason: JobReason, tokens_before: int) -> CompactionStarted:
        """compactionStarted of a job; `_finish` reports how it ended."""
        started = CompactionStarted(
            sessionId=self.session_id,
            compactionId=compaction_id,
            reason=reason,
            tokensBefore=tokens_before,
        )
        self.events.compaction_started(started)
        return started

    def _finish(self, started: CompactionStarted, **fields: Any) -> None:
        """compactionFinished of the job `started` began: the fields of CompactionFinished
        that say how it ended (`outcome` always; `willRetry` is False unless given)."""
        fields.setdefault("willRetry", False)
        self.events.compaction_progress(started.compactionId, "end", fields["outcome"])
        self.events.compaction_finished(CompactionFinished(**dict(started), **fields))

    def abort_compaction(self) -> bool:
        running = self._running
        if running is None or running.task is None:
            return False
        running.aborted = True
        running.task.cancel()
        return True

    async def handoff(
        self, goal: str | None, start_session: Callable[[ParentSession], NewSession]
    ) -> tuple[NewSession, HandoffEntry]:
        """Write a handoff document with the summarizer and start a new session with it."""
        preparation = prepare_handoff(self.path, self.entry_tokens, self.settings, goal)
        summarizer = build_summarizer(self.settings.summarizer)

        async def work(running: RunningCompaction) -> tuple[dict[str, Any], tuple[NewSession, HandoffEntry]]:
            answer = await summarizer.summarize_with_info(preparation.request)
            document = redact(answer.text)
            details = await asyncio.to_thread(handoff_details, preparation, document)
            fresh = start_session(ParentSession(id=self.session_id, entryId=self.leaf_id))
            for standing in standing_instructions(self.path):  # instructions outlive a handoff too
                fresh.append_node(InstructionsEntry, text=standing.text, source=standing.source)
            entry = fresh.append_node(
                HandoffEntry,
                document=document,
                fromSession=self.session_id,
                details=details,
                unseenTokens=self.unseen_tokens or None,  # the same agent goes on: its prompt too
            )
            assert isinstance(entry, HandoffEntry)
            fields = {"tokensAfter": fresh.tokens, "entryId": entry.id, "handoffSessionId": fresh.session_id}
            return fields, (fresh, entry)

        fresh, entry = await self.run_job("handoff", self.tokens, work)
        fresh.announce("handoff")
        return fresh, entry

    def _busy(self) -> bool:
        return self._running is not None or any(not task.done() for task in self._tasks)

    def spawn(self, work: Any) -> asyncio.Task[Any]:
        """Background work of this session; it dies with the session."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
