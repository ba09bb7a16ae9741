"""What a live session tells the outside world, and the silent listener for sessions nobody watches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from contextd.results import (
        BeforeCompactParams,
        BeforeNavigateParams,
        CompactionFinished,
        CompactionStarted,
        IdleTimer,
        TokenUsage,
        WorkspaceActivity,
    )


class SessionEvents(Protocol):
    """What a live session tells the outside world; the server turns these into notifications."""

    def token_usage(self, usage: TokenUsage) -> None: ...

    def session_changed(self, session_id: str, leaf_id: str | None, cause: str) -> None: ...

    def compaction_started(self, body: CompactionStarted) -> None: ...

    def compaction_finished(self, body: CompactionFinished) -> None: ...

    def compaction_progress(self, compaction_id: str, stage: str, message: str) -> None: ...

    async def before_compact(self, body: BeforeCompactParams) -> HookAnswer: ...

    async def before_navigate(self, body: BeforeNavigateParams) -> HookAnswer: ...

    def idle_timer(self, body: IdleTimer) -> None: ...

    def workspace_activity(self, activity: WorkspaceActivity) -> None:
        """Any change of the session, for whoever watches its workspace (see
        `LiveState.activity`): sent after sessionChanged and tokenUsage."""


@dataclass(frozen=True)
class HookAnswer:
    """What a client's hook (beforeCompact, beforeNavigate) decided; the default lets the
    job proceed. `instructions` are beforeCompact's only."""

    cancel: bool = False
    summary: str | None = None
    instructions: str | None = None


class SilentEvents:
    """For sessions nobody watches: read-only views and tests."""

    def token_usage(self, usage: TokenUsage) -> None:
        pass

    def session_changed(self, session_id: str, leaf_id: str | None, cause: str) -> None:
        pass

    def compaction_started(self, body: CompactionStarted) -> None:
        pass

    def compaction_finished(self, body: CompactionFinished) -> None:
        pass

    def compaction_progress(self, compaction_id: str, stage: str, message: str) -> None:
        pass

    async def before_compact(self, body: BeforeCompactParams) -> HookAnswer:
        return HookAnswer()

    async def before_navigate(self, body: BeforeNavigateParams) -> HookAnswer:
        return HookAnswer()

    def idle_timer(self, body: IdleTimer) -> None:
        pass

    def workspace_activity(self, activity: WorkspaceActivity) -> None:
        pass
