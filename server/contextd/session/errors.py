"""The errors a session raises; each is a `StoreError` the server maps to a JSON-RPC code."""

from __future__ import annotations

from contextd.store import StoreError


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


class ClientVetoed(StoreError):
    """A client's hook (beforeCompact, beforeNavigate) said no: the request is cancelled."""


class CompactionVetoed(ClientVetoed):
    def __init__(self) -> None:
        super().__init__("the client cancelled the compaction")


class NavigationVetoed(ClientVetoed):
    def __init__(self) -> None:
        super().__init__("the client's beforeNavigate hook cancelled the navigation")


class CompactionFailed(StoreError):
    """The summarizer gave up; the session is exactly as it was."""

    def __init__(self, session_id: str, provider: str, why: str) -> None:
        super().__init__(f"compaction failed: {why}")
        self.session_id = session_id
        self.provider = provider


class ReadOnlyMirror(StoreError):
    """A write to a session that mirrors another agent's transcript."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} is a read-only mirror")
        self.session_id = session_id
