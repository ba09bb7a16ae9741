"""The idle timer: compact a big context after the session has sat unused for a while."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from contextd import results
from contextd.model import IdleSettings
from contextd.results import IdleState
from contextd.session.errors import NothingToCompactError
from contextd.session.triggers import CompactionTriggers


class IdleTimer(CompactionTriggers):
    """Timers are loop callbacks, not threads: many sessions cost nothing."""

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
        if idle.enabled and not self.read_only and self._running is None and self.tokens >= self.idle_threshold():
            self._arm_idle_timer(idle.timeoutSeconds)
        else:
            self.cancel_idle_timer()

    def _arm_idle_timer(self, seconds: float) -> None:
        self._cancel_timer_handle()
        loop = asyncio.get_running_loop()
        self._idle_handle = loop.call_later(seconds, self._idle_fired)
        due = datetime.now(UTC) + timedelta(seconds=seconds)
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
        try:
            self._prepare("idle", None)
        except NothingToCompactError as error:
            # Sitting idle with nothing old enough to fold away is no failure: the timer
            # ends without a compaction, and `reason` says why.
            self._idle_event("cancelled", reason=str(error))
            return
        self._idle_event("fired")
        if self._running is None:
            self.spawn(self._auto_compact("idle"))

    def _idle_event(self, state: IdleState, *, dueAt: str | None = None, reason: str | None = None) -> None:
        self.events.idle_timer(results.IdleTimer(sessionId=self.session_id, state=state, dueAt=dueAt, reason=reason))

    def configure_idle(self, idle: IdleSettings) -> None:
        """The session's own idle settings; the request that set them arms the timer (once)
        as any request on the session does."""
        self.idle_override = idle

    @property
    def idle_timer_armed(self) -> bool:
        return self._idle_handle is not None
