"""The automatic triggers: the threshold, a context overflow and a truncated answer (which
try a promotion to a larger model before compacting)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from contextd.compaction.prune import plan_prune
from contextd.model import (
    AssistantMessage,
    CompactionReason,
    LeafEntry,
    Message,
    PruneEntry,
)
from contextd.session.errors import (
    CompactionFailed,
    CompactionRunning,
    CompactionVetoed,
    NothingToCompactError,
)
from contextd.results import CompactionStarted
from contextd.session.jobs import CompactionJobs
from contextd.tokens.promotion import promotion_target
from contextd.tokens.registry import ModelInfo

log = logging.getLogger(__name__)


class CompactionTriggers(CompactionJobs):
    """Starts compactions (or handoffs) on its own when the context calls for one."""

    _skip_reported = False
    """A threshold compaction found nothing to compact and said so; said again only once the
    context has been under the threshold (each append over it would otherwise repeat it)."""

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
        if self.tokens < self.threshold_tokens:
            self._skip_reported = False
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
        """The failed answer leaves the context, then a larger model (a promotion) or else a
        compaction makes room for a retry."""
        if not self.auto_compaction:
            return
        # A job under way makes the room itself; the model does not change under it.
        larger = None if self._busy() else promotion_target(
            self.model_info, self.settings.compaction.promotion, self.settings.models
        )
        if self._recovering and larger is None:
            # The retry after our compaction failed the same way: compacting again would loop.
            self._report_failure(reason, "the context is still too large right after a compaction")
            return
        failed = self._path[-1]
        self.append_annotation(LeafEntry, targetId=failed.parentId)
        self.announce(reason)
        if larger is not None:
            self._promote(reason, larger)
            return
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
            if will_retry:
                # The client was told to resend once this compaction is done.
                self._report_failure(reason, str(error))
            else:
                self._report_skip(reason, str(error))
        except (CompactionFailed, CompactionRunning, CompactionVetoed) as error:
            log.warning("session %s: %s compaction: %s", self.session_id, reason, error)

    def _promote(self, reason: CompactionReason, larger: ModelInfo) -> None:
        """Move to the larger model instead of compacting; the client retries on it. Reported
        as a compaction that finishes `promoted`, so clients waiting on the overflow hear."""
        previous = self.model_info
        started = self._start_instant_job(reason, f"Moving to {larger.id}")
        self.set_model(larger.id)
        self._recovering = False  # a new window: if it overflows too, that one compacts
        self._finish(
            started,
            outcome="promoted",
            willRetry=True,
            tokensAfter=self.tokens,
            model=self.model_id,
            contextWindow=self.model_info.context_window,
            previousModel=previous.id,
            previousContextWindow=previous.context_window,
        )
        log.info("session %s: %s on %s, promoted to %s", self.session_id, reason, previous.id, larger.id)

    def _report_failure(self, reason: CompactionReason, error: str) -> None:
        """A compaction that cannot start is still reported, so clients can stop waiting."""
        self._finish(self._start_instant_job(reason, "Compacting"), outcome="failed", error=error)

    def _report_skip(self, reason: CompactionReason, why: str) -> None:
        """A full session left as it is is reported once, so clients can say why and what to
        do (the recent part a compaction keeps holds nearly all of it)."""
        log.info("session %s: %s compaction skipped: %s", self.session_id, reason, why)
        if not self._skip_reported:
            self._skip_reported = True
            self._finish(self._start_instant_job(reason, "Compacting"), outcome="skipped", error=why)

    def _start_instant_job(self, reason: CompactionReason, progress: str) -> CompactionStarted:
        """compactionStarted (and `$/progress` begin) of a job that finishes at once; `_finish`
        ends it, so every started compaction finishes exactly once."""
        started = self._started(secrets.token_hex(6), reason, self.tokens)
        # `$/progress` comes in pairs: a client shows no `end` without its `begin`.
        self.events.compaction_progress(started.compactionId, "begin", progress)
        return started
