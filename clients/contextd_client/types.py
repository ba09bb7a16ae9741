"""The shapes of contextd's results and notifications, as the daemon sends them (camelCase).

These are TypedDicts: the values are the plain dicts from the wire, so a field the daemon
adds later is simply there, and nothing is renamed on the way.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

Message = dict[str, Any]
"""A neutral message (`role` user | assistant | toolResult), see protocol.md."""

ContextFormat = Literal["neutral", "anthropic", "openai", "openai-responses"]
CompactionReason = Literal[
    "manual", "threshold", "overflow", "incomplete", "idle", "handoff", "branch", "agent"
]


class Breakdown(TypedDict):
    """Where the figure's tokens are; the parts add up to `tokens`."""

    instructions: int
    summary: int
    messages: int
    unseen: int
    """What the agent sends that contextd never sees (system prompt, tool schemas)."""


class TokenUsage(TypedDict):
    sessionId: str
    tokens: int
    contextWindow: int
    percent: float
    thresholdTokens: int
    source: Literal["usage", "counted", "estimated"]
    calibration: float
    """What counted tokens were multiplied by: 1.0 for OpenAI models (exact counts)."""
    model: str
    breakdown: Breakdown
    agentCompaction: NotRequired[AgentCompaction]
    """A mirror's only: where its agent compacts it."""


class AgentCompaction(TypedDict):
    enabled: bool
    tokens: int | None
    percent: float | None
    basis: str


class ParentSession(TypedDict):
    id: str
    entryId: NotRequired[str | None]


class MirrorSource(TypedDict):
    """The transcript a mirrored session follows (see contextd/follow in protocol.md)."""

    agent: str
    path: str


class OpenResult(TypedDict):
    sessionId: str
    name: str | None
    leafId: str | None
    model: str
    contextWindow: int
    usage: TokenUsage
    path: str
    source: NotRequired[MirrorSource]


class SessionSummary(TypedDict):
    sessionId: str
    name: NotRequired[str | None]
    workspace: str
    entries: int
    tokens: int
    updatedAt: str
    parentSession: NotRequired[ParentSession | None]
    source: NotRequired[MirrorSource]
    damaged: NotRequired[str]
    """Why the session file cannot be opened (protocol.md, contextd/session/list)."""


class ListResult(TypedDict):
    sessions: list[SessionSummary]


class AppendResult(TypedDict):
    entryIds: list[str]
    leafId: str
    usage: TokenUsage


class SetInstructionsResult(TypedDict):
    entryId: str
    leafId: str
    usage: TokenUsage


class ContextResult(TypedDict):
    messages: list[Message]
    system: NotRequired[str]
    tokens: int


class StateResult(TypedDict):
    sessionId: str
    name: NotRequired[str | None]
    workspace: str
    leafId: str | None
    model: str
    contextWindow: int
    entries: int
    usage: TokenUsage
    compacting: bool
    path: str
    source: NotRequired[MirrorSource]


class EntriesAndTokens(TypedDict):
    entries: int
    tokens: int


class CompactionSavings(TypedDict):
    count: int
    tokensSaved: int
    summaryTokens: int


class PruneSavings(TypedDict):
    count: int
    tokensSaved: int


class StatsResult(TypedDict):
    sessionId: str
    treeNodes: int
    history: EntriesAndTokens
    context: EntriesAndTokens
    compactions: CompactionSavings
    prunes: PruneSavings
    ratio: float
    breakdown: Breakdown


class SetModelResult(TypedDict):
    model: str
    contextWindow: int
    usage: TokenUsage


class CloseResult(TypedDict):
    closed: bool


class FollowResult(TypedDict):
    """The daemon-wide follow settings in force and how many transcripts are followed."""

    enabled: bool
    agents: list[str]
    roots: dict[str, str]
    allWorkspaces: bool
    mirrors: int


class DeleteResult(TypedDict):
    deleted: bool
    sessionId: str
    path: str


class CompactResult(TypedDict):
    entryId: str
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: int
    summarizer: NotRequired[dict[str, Any]]
    shortSummary: NotRequired[str | None]


class CompactPlan(TypedDict):
    """What `compact(dry_run=True)` would do, without doing it."""

    firstKeptEntryId: str | None
    summarizeEntryIds: list[str]
    keptEntryIds: list[str]
    pruneEntryIds: list[str]
    tokensBefore: int
    tokensKept: NotRequired[int]
    tokensAfter: int
    """An estimate: the kept tokens plus the summary the offline summarizer writes."""
    tokensAfterMax: int
    """An upper bound: the kept tokens plus the summary's budget."""
    splitTurn: NotRequired[bool]
    summary: NotRequired[str]
    """The offline summary the estimate was measured with: a preview of the summary."""


class AbortResult(TypedDict):
    aborted: bool


class HandoffResult(TypedDict):
    sessionId: str
    entryId: str
    document: str


class TreeNode(TypedDict):
    id: str
    parentId: str | None
    type: str
    role: NotRequired[str]
    preview: str
    label: NotRequired[str | None]
    tokens: int
    timestamp: NotRequired[str]
    children: list[str]
    shortSummary: NotRequired[str]
    """On compaction and branch_summary nodes: the summary's one line."""
    firstKeptEntryId: NotRequired[str | None]
    """On compaction nodes, with `tokensBefore` and `tokensAfter`."""
    tokensBefore: NotRequired[int]
    tokensAfter: NotRequired[int]


class TreeResult(TypedDict):
    nodes: list[TreeNode]
    leafId: str | None


class LabelResult(TypedDict):
    entryId: str
    label: str | None


class IdleConfigureResult(TypedDict):
    sessionId: NotRequired[str]
    enabled: bool
    timeoutSeconds: float
    thresholdTokens: int | None
    thresholdPercent: float
    effectiveThresholdTokens: NotRequired[int]


class NavigateResult(TypedDict):
    leafId: str | None
    branchSummaryId: NotRequired[str]
    editorText: NotRequired[str]


class ForkResult(TypedDict):
    sessionId: str
    leafId: str | None


class CompactionStarted(TypedDict):
    sessionId: str
    compactionId: str
    reason: CompactionReason
    tokensBefore: int


class CompactionFinished(TypedDict):
    sessionId: str
    compactionId: str
    reason: CompactionReason
    outcome: Literal["compacted", "failed", "aborted", "cancelled", "promoted", "skipped"]
    tokensBefore: int
    tokensAfter: NotRequired[int]
    entryId: NotRequired[str]
    shortSummary: NotRequired[str]
    error: NotRequired[str]
    willRetry: bool
    handoffSessionId: NotRequired[str]
    model: NotRequired[str]
    """With `promoted`: the larger model the session moved to, and its window."""
    contextWindow: NotRequired[int]
    previousModel: NotRequired[str]
    previousContextWindow: NotRequired[int]


class SessionChanged(TypedDict):
    sessionId: str
    leafId: str | None
    cause: str


class WorkspaceActivity(TypedDict):
    """A change of any session of a watched workspace, whoever made it."""

    sessionId: str
    name: str | None
    workspace: str
    cause: str
    leafId: str | None
    usage: TokenUsage
    source: NotRequired[MirrorSource]
    updatedAt: str


class IdleTimer(TypedDict):
    sessionId: str
    state: Literal["armed", "fired", "cancelled"]
    dueAt: NotRequired[str]


TOKEN_USAGE = "contextd/tokenUsage"
COMPACTION_STARTED = "contextd/compactionStarted"
COMPACTION_FINISHED = "contextd/compactionFinished"
SESSION_CHANGED = "contextd/sessionChanged"
IDLE_TIMER = "contextd/idleTimer"
WORKSPACE_ACTIVITY = "contextd/workspace/activity"
NOTIFICATIONS = (TOKEN_USAGE, COMPACTION_STARTED, COMPACTION_FINISHED, SESSION_CHANGED, IDLE_TIMER, WORKSPACE_ACTIVITY)
