"""The results of contextd's requests and the bodies of its notifications, as pydantic
models: one definition of each shape that protocol.md shows and tests hold the server to
(tests/unit/test_protocol_doc.py checks the examples, tests/client/test_result_shapes.py the
real daemon's answers). `RESULTS` gives the shapes each method's result takes (compact's
dry run is a second one), `NOTIFICATION_BODIES` each notification's body."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from contextd.model import MirrorSource, ParentSession, Settings


class Result(BaseModel):
    """A result names exactly these fields: one more or one fewer is a difference."""

    model_config = ConfigDict(extra="forbid", strict=True)


Usage = dict[str, Any]
"""The contextd/tokenUsage notification's body (not a model yet)."""


class OpenResult(Result):
    sessionId: str
    name: str | None
    leafId: str | None
    model: str
    contextWindow: int
    usage: Usage
    path: str
    source: MirrorSource | None = None
    """A mirror's agent and transcript; absent for every other session."""


class StateResult(OpenResult):
    workspace: str
    entries: int
    compacting: bool


class SessionRow(Result):
    """A session as contextd/session/list and contextd/workspace/watch list it."""

    sessionId: str
    name: str | None
    workspace: str | None
    entries: int
    tokens: int
    updatedAt: str
    parentSession: ParentSession | None = None
    """The session and entry it was forked or handed off from."""
    source: MirrorSource | None = None
    damaged: str | None = None
    """Why the session file cannot be opened."""


class SessionsResult(Result):
    sessions: list[SessionRow]


class Figures(Result):
    entries: int
    tokens: int


class CompactionFigures(Result):
    count: int
    tokensSaved: int
    summaryTokens: int


class PruneFigures(Result):
    count: int
    tokensSaved: int


class StatsResult(Result):
    sessionId: str
    treeNodes: int
    history: Figures
    context: Figures
    compactions: CompactionFigures
    prunes: PruneFigures
    ratio: float
    breakdown: dict[str, int]
    """The tokenUsage body's breakdown."""


class TreeNode(Result):
    id: str
    parentId: str | None
    type: str
    role: str | None = None
    """A message's role."""
    preview: str
    tokens: int
    timestamp: str
    children: list[str]
    label: str | None = None
    shortSummary: str | None = None
    """A compaction's or branch summary's one line."""
    firstKeptEntryId: str | None = None
    tokensBefore: int | None = None
    tokensAfter: int | None = None
    """The three of a compaction."""


class TreeResult(Result):
    leafId: str | None
    nodes: list[TreeNode]


class IdleConfigureResult(Result):
    enabled: bool
    timeoutSeconds: float
    thresholdTokens: int | None
    thresholdPercent: float
    sessionId: str | None = None
    effectiveThresholdTokens: int | None = None
    """These two for one session's idle compaction; absent for the daemon-wide settings."""


class ConnectionRow(Result):
    id: int
    client: str | None
    """The name its initialize gave (clientInfo.name)."""
    sessions: list[str]
    workspaces: list[str]
    allWorkspaces: bool
    connectedAt: str


class LoadedSession(Result):
    sessionId: str
    name: str | None
    tokens: int
    connections: list[int]
    """The ids of the connections that have it open."""


class DaemonStatus(Result):
    pid: int
    address: str | None
    """The socket or host:port it listens on; None on stdio."""
    dataDir: str
    dedicated: bool
    startedAt: str
    connections: list[ConnectionRow]
    sessions: list[LoadedSession]
    connection: int
    """The id of the connection that asked."""


class FollowResult(Result):
    enabled: bool
    agents: list[str]
    roots: dict[str, str]
    allWorkspaces: bool
    mirrors: int


class NavigateResult(Result):
    leafId: str | None
    branchSummaryId: str | None = None
    """The summary left of the branch, when one was asked for."""
    editorText: str | None = None
    """A user message navigated to: its text, for the client's input box."""


class ContextResult(Result):
    messages: list[dict[str, Any]]
    """In the format asked for (neutral, anthropic, openai or openai-responses)."""
    system: str | None = None
    tokens: int


class CompactResult(Result):
    entryId: str
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: int
    summarizer: dict[str, Any]
    """The provider and model that wrote the summary (the compaction entry's `summarizer`)."""
    shortSummary: str | None


class CompactPreview(Result):
    """`dryRun`: what a compaction would do, no summarizer called."""

    firstKeptEntryId: str | None
    summarizeEntryIds: list[str]
    keptEntryIds: list[str]
    pruneEntryIds: list[str]
    tokensBefore: int
    tokensKept: int
    tokensAfter: int
    tokensAfterMax: int
    splitTurn: bool
    summary: str


class HistoryRow(Result):
    """What a search hit and a fetched entry both say of an entry."""

    entryId: str
    type: str
    role: str | None = None
    tool: str | None = None
    timestamp: str
    branch: str
    """`current` or `abandoned`."""
    foldedBy: str | None
    """The compaction whose summary stands for it on the current branch."""


class SearchHit(HistoryRow):
    snippet: str


class SearchResult(Result):
    sessionId: str
    hits: list[SearchHit]


class HistoryEntry(HistoryRow):
    parentId: str | None
    text: str
    tokens: int
    truncated: bool | None = None


class HistoryEntries(Result):
    sessionId: str
    entries: list[HistoryEntry]
    omitted: list[str]
    """Entries asked for that the token budget left out."""


class SourceItem(Result):
    item: int
    section: str
    text: str
    entryIds: list[str]


class SourcesResult(Result):
    sessionId: str
    entryId: str
    items: list[SourceItem]


class SpanSummary(Result):
    sessionId: str
    summary: str
    firstKeptEntryId: str | None
    summarizeEntryIds: list[str]
    tokensBefore: int
    details: dict[str, Any]
    """The files read and modified in the span."""


class AppendResult(Result):
    entryIds: list[str]
    leafId: str | None
    usage: Usage


class SetInstructionsResult(Result):
    entryId: str
    leafId: str | None
    usage: Usage


class SetModelResult(Result):
    model: str
    contextWindow: int
    usage: Usage


class CloseResult(Result):
    closed: bool


class DeleteResult(Result):
    deleted: bool
    sessionId: str
    path: str


class AbortResult(Result):
    aborted: bool


class HandoffResult(Result):
    sessionId: str
    entryId: str
    document: str


class LabelResult(Result):
    entryId: str
    label: str | None


class ForkResult(Result):
    sessionId: str
    leafId: str | None


class EmptyResult(Result):
    pass


class SettingsResult(Result):
    workspace: str | None
    settings: Settings
    sources: dict[str, str]
    """Each key set above the built-in layer, and the layer that set it."""
    userFile: str
    userFileError: str | None


RESULTS: dict[str, tuple[type[Result], ...]] = {
    "contextd/compact": (CompactResult, CompactPreview),
    "contextd/history/search": (SearchResult,),
    "contextd/history/get": (HistoryEntries,),
    "contextd/history/sources": (SourcesResult,),
    "contextd/history/summarize": (SpanSummary,),
    "contextd/session/open": (OpenResult,),
    "contextd/session/state": (StateResult,),
    "contextd/session/list": (SessionsResult,),
    "contextd/workspace/watch": (SessionsResult,),
    "contextd/session/stats": (StatsResult,),
    "contextd/tree": (TreeResult,),
    "contextd/idle/configure": (IdleConfigureResult,),
    "contextd/session/append": (AppendResult,),
    "contextd/session/setInstructions": (SetInstructionsResult,),
    "contextd/session/setModel": (SetModelResult,),
    "contextd/session/close": (CloseResult,),
    "contextd/session/delete": (DeleteResult,),
    "contextd/compact/abort": (AbortResult,),
    "contextd/handoff": (HandoffResult,),
    "contextd/label": (LabelResult,),
    "contextd/fork": (ForkResult,),
    "contextd/workspace/unwatch": (EmptyResult,),
    "contextd/settings": (SettingsResult,),
    "contextd/daemon/status": (DaemonStatus,),
    "contextd/follow": (FollowResult,),
    "contextd/navigate": (NavigateResult,),
    "contextd/session/context": (ContextResult,),
}


class SessionChanged(Result):
    sessionId: str
    leafId: str | None
    cause: str


class WorkspaceActivity(Result):
    sessionId: str
    name: str | None
    workspace: str
    cause: str
    leafId: str | None
    usage: Usage
    source: MirrorSource | None = None
    updatedAt: str


class CompactionStarted(Result):
    sessionId: str
    compactionId: str
    reason: str
    tokensBefore: int


class CompactionFinished(CompactionStarted):
    outcome: str
    tokensAfter: int | None = None
    entryId: str | None = None
    shortSummary: str | None = None
    error: str | None = None
    willRetry: bool
    handoffSessionId: str | None = None
    model: str | None = None
    contextWindow: int | None = None
    previousModel: str | None = None
    previousContextWindow: int | None = None
    """The last four for a promotion to a larger model."""


class IdleTimer(Result):
    sessionId: str
    state: str
    dueAt: str | None = None
    reason: str | None = None


NOTIFICATION_BODIES: dict[str, type[Result]] = {
    "contextd/sessionChanged": SessionChanged,
    "contextd/workspace/activity": WorkspaceActivity,
    "contextd/compactionStarted": CompactionStarted,
    "contextd/compactionFinished": CompactionFinished,
    "contextd/idleTimer": IdleTimer,
}
