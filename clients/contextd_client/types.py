"""The shapes of contextd's results and notifications, as the daemon sends them (camelCase).

Generated from the daemon's models (contextd.results) by contextd_client.typegen: do not
edit. These are TypedDicts: the values are the plain dicts from the wire, and nothing is
renamed on the way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

if TYPE_CHECKING:  # for the type checker only: importing pydantic took most of a command's start
    from pydantic import JsonValue

Message = dict[str, "JsonValue"]
"""A neutral message (`role` user | assistant | toolResult), see protocol.md; the daemon
validates it."""


ChangeCause = Literal[
    "open",
    "append",
    "compaction",
    "prune",
    "navigate",
    "model",
    "label",
    "instructions",
    "fork",
    "handoff",
    "overflow",
    "incomplete",
    "deleted",
]


CompactionOutcome = Literal["compacted", "failed", "aborted", "cancelled", "promoted", "skipped"]


CompactionReason = Literal[
    "manual",
    "threshold",
    "overflow",
    "incomplete",
    "idle",
    "handoff",
    "branch",
    "agent",
]


ContextFormat = Literal["neutral", "anthropic", "openai", "openai-responses"]


UsageSource = Literal["usage", "counted", "estimated"]


class AbortResult(TypedDict):
    aborted: bool


class AgentCompaction(TypedDict):
    """Where a mirror's agent compacts its own session, from the agent's rules and its
    configuration (compaction/agent_points.py).
    """

    enabled: bool
    """False: the agent does not compact on its own (then `tokens` and `percent` are null)."""
    tokens: int | None
    percent: float | None
    """Of `contextWindow`."""
    basis: str
    """How the point was worked out: the rule, the settings taken and from where, the
    defaults assumed, the files not found or not readable.
    """


class AppendResult(TypedDict):
    entryIds: list[str]
    leafId: str | None
    usage: TokenUsage


class BranchSummarySettings(TypedDict):
    reserveTokens: NotRequired[int]


class CloseResult(TypedDict):
    closed: bool


class CompactPreview(TypedDict):
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


class CompactResult(TypedDict):
    entryId: str
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: int
    summarizer: SummarizerInfo
    shortSummary: str | None


class CompactionFigures(TypedDict):
    count: int
    tokensSaved: int
    summaryTokens: int


class CompactionFinished(TypedDict):
    sessionId: str
    compactionId: str
    reason: CompactionReason
    tokensBefore: int
    outcome: CompactionOutcome
    tokensAfter: NotRequired[int]
    entryId: NotRequired[str]
    shortSummary: NotRequired[str | None]
    error: NotRequired[str]
    willRetry: bool
    handoffSessionId: NotRequired[str]
    model: NotRequired[str]
    contextWindow: NotRequired[int]
    previousModel: NotRequired[str]
    previousContextWindow: NotRequired[int]
    """The last four for a promotion to a larger model."""


class CompactionSettings(TypedDict):
    enabled: NotRequired[bool]
    strategy: NotRequired[Literal["summary", "handoff", "off"]]
    reserveTokens: NotRequired[int]
    keepRecentTokens: NotRequired[int]
    thresholdPercent: NotRequired[float | None]
    thresholdTokens: NotRequired[int | None]
    hookTimeoutSeconds: NotRequired[float]
    readTools: NotRequired[list[str]]
    modifyTools: NotRequired[list[str]]
    promotion: NotRequired[list[PromotionRule]]


class CompactionStarted(TypedDict):
    sessionId: str
    compactionId: str
    reason: CompactionReason
    tokensBefore: int


class ConnectionRow(TypedDict):
    id: int
    client: str | None
    """The name its initialize gave (clientInfo.name)."""
    sessions: list[str]
    workspaces: list[str]
    allWorkspaces: bool
    connectedAt: str


class ContextResult(TypedDict):
    messages: list[dict[str, JsonValue]]
    """In the format asked for (neutral, anthropic, openai or openai-responses)."""
    system: NotRequired[str]
    tokens: int


class DaemonStatus(TypedDict):
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


class DeleteResult(TypedDict):
    deleted: bool
    sessionId: str
    path: str


class EmptyResult(TypedDict):
    pass


class FigureBreakdown(TypedDict):
    """Where the figure's tokens are, the way an agent's /context splits a window; the parts
    add up to `tokens`.
    """

    instructions: int
    summary: int
    messages: int
    unseen: int
    """What the agent sends that contextd never sees (system prompt, tool schemas)."""


class Figures(TypedDict):
    entries: int
    tokens: int


class FileDetails(TypedDict):
    readFiles: NotRequired[list[str]]
    modifiedFiles: NotRequired[list[str]]
    sources: NotRequired[list[SourcedItem] | None]


class FollowEnvironmentResult(TypedDict):
    transcriptPath: str
    variables: list[str]
    """The names of the variables kept (their values are not sent back)."""


class FollowResult(TypedDict):
    """The daemon-wide follow settings in force and how many transcripts are followed."""

    enabled: bool
    agents: list[Literal["claude-code", "codex", "pi"]]
    roots: dict[str, str]
    allWorkspaces: bool
    mirrors: int


class FollowSettings(TypedDict):
    """Following other agents' transcripts as read-only mirrors (see contextd.follow)."""

    enabled: NotRequired[bool]
    agents: NotRequired[list[Literal["claude-code", "codex", "pi"]]]
    roots: NotRequired[dict[str, str]]
    allWorkspaces: NotRequired[bool]
    intervalSeconds: NotRequired[float]


class ForkResult(TypedDict):
    sessionId: str
    leafId: str | None


class HandoffResult(TypedDict):
    sessionId: str
    entryId: str
    document: str


class HistoryEntries(TypedDict):
    sessionId: str
    entries: list[HistoryEntry]
    omitted: list[str]
    """Entries asked for that the token budget left out."""


class HistoryEntry(TypedDict):
    entryId: str
    type: str
    role: NotRequired[str]
    tool: NotRequired[str]
    timestamp: str
    branch: Literal["current", "abandoned"]
    """`current` or `abandoned`."""
    foldedBy: str | None
    """The compaction whose summary stands for it on the current branch."""
    parentId: str | None
    text: str
    tokens: int
    truncated: NotRequired[bool]


class IdleConfigureResult(TypedDict):
    enabled: bool
    timeoutSeconds: float
    thresholdTokens: int | None
    thresholdPercent: float
    sessionId: NotRequired[str]
    effectiveThresholdTokens: NotRequired[int]
    """These two for one session's idle compaction; absent for the daemon-wide settings."""


class IdleSettings(TypedDict):
    enabled: NotRequired[bool]
    timeoutSeconds: NotRequired[float]
    thresholdTokens: NotRequired[int | None]
    thresholdPercent: NotRequired[float]


class IdleTimer(TypedDict):
    sessionId: str
    state: Literal["armed", "fired", "cancelled"]
    dueAt: NotRequired[str]
    reason: NotRequired[str]


class LabelResult(TypedDict):
    entryId: str
    label: str | None


class ListResult(TypedDict):
    sessions: list[SessionSummary]


class LoadedSession(TypedDict):
    sessionId: str
    name: str | None
    tokens: int
    connections: list[int]
    """The ids of the connections that have it open."""


class MirrorSource(TypedDict):
    """The transcript a mirrored session follows (see contextd.follow)."""

    agent: Literal["claude-code", "codex", "pi"]
    path: str


class ModelOverride(TypedDict):
    contextWindow: NotRequired[int | None]
    maxOutputTokens: NotRequired[int | None]
    encoding: NotRequired[Literal["o200k_base", "cl100k_base"] | None]


class NavigateResult(TypedDict):
    leafId: str | None
    branchSummaryId: NotRequired[str]
    """The summary left of the branch, when one was asked for."""
    editorText: NotRequired[str]
    """A user message navigated to: its text, for the client's input box."""


class OpenResult(TypedDict):
    sessionId: str
    name: str | None
    leafId: str | None
    model: str
    contextWindow: int
    usage: TokenUsage
    path: str
    source: NotRequired[MirrorSource]


class ParentSession(TypedDict):
    id: str
    entryId: NotRequired[str | None]


PromotionRule = TypedDict("PromotionRule", {"from": str, "to": str})


class PruneFigures(TypedDict):
    count: int
    tokensSaved: int


class PruningSettings(TypedDict):
    enabled: NotRequired[bool]
    protectTokens: NotRequired[int]
    minimumSavings: NotRequired[int]
    protectedTools: NotRequired[list[str]]


class SearchHit(TypedDict):
    entryId: str
    type: str
    role: NotRequired[str]
    tool: NotRequired[str]
    timestamp: str
    branch: Literal["current", "abandoned"]
    """`current` or `abandoned`."""
    foldedBy: str | None
    """The compaction whose summary stands for it on the current branch."""
    snippet: str


class SearchResult(TypedDict):
    sessionId: str
    hits: list[SearchHit]


class SessionChanged(TypedDict):
    sessionId: str
    leafId: str | None
    cause: ChangeCause


class SessionSummary(TypedDict):
    """A session as contextd/session/list and contextd/workspace/watch list it."""

    sessionId: str
    name: str | None
    workspace: str
    entries: int
    tokens: int
    updatedAt: str
    parentSession: NotRequired[ParentSession]
    source: NotRequired[MirrorSource]
    damaged: NotRequired[str]
    """Why the session file cannot be opened."""


class SetInstructionsResult(TypedDict):
    entryId: str
    leafId: str | None
    usage: TokenUsage


class SetModelResult(TypedDict):
    model: str
    contextWindow: int
    usage: TokenUsage


class Settings(TypedDict):
    defaultModel: NotRequired[str]
    compaction: NotRequired[CompactionSettings]
    pruning: NotRequired[PruningSettings]
    idle: NotRequired[IdleSettings]
    branchSummary: NotRequired[BranchSummarySettings]
    summarizer: NotRequired[SummarizerSettings]
    models: NotRequired[dict[str, ModelOverride]]
    storage: NotRequired[StorageSettings]
    follow: NotRequired[FollowSettings]


class SettingsResult(TypedDict):
    workspace: str | None
    settings: Settings
    sources: dict[str, str]
    """Each key set above the built-in layer, and the layer that set it."""
    userFile: str
    userFileError: str | None


class SourceItem(TypedDict):
    item: int
    section: str
    text: str
    entryIds: list[str]


class SourcedItem(TypedDict):
    """One item of a summary and the entries it was taken from."""

    section: str
    text: str
    entryIds: list[str]


class SourcesResult(TypedDict):
    sessionId: str
    entryId: str
    items: list[SourceItem]


class SpanSummary(TypedDict):
    sessionId: str
    summary: str
    firstKeptEntryId: str | None
    summarizeEntryIds: list[str]
    tokensBefore: int
    details: FileDetails


class StateResult(TypedDict):
    sessionId: str
    name: str | None
    leafId: str | None
    model: str
    contextWindow: int
    usage: TokenUsage
    path: str
    source: NotRequired[MirrorSource]
    workspace: str
    entries: int
    compacting: bool


class StatsResult(TypedDict):
    sessionId: str
    treeNodes: int
    history: Figures
    context: Figures
    compactions: CompactionFigures
    prunes: PruneFigures
    ratio: float
    breakdown: FigureBreakdown


class StorageSettings(TypedDict):
    dataDir: NotRequired[str | None]
    maxLoadedSessions: NotRequired[int]
    maxLoadedEntries: NotRequired[int]


class SummarizerInfo(TypedDict):
    provider: str
    model: NotRequired[str | None]


class SummarizerSettings(TypedDict):
    provider: NotRequired[Literal["offline", "anthropic", "openai", "remote", "anthropic-native", "openai-native"]]
    model: NotRequired[str | None]
    baseUrl: NotRequired[str | None]
    apiKeyEnv: NotRequired[str | None]
    remoteEndpoint: NotRequired[str | None]
    maxRetries: NotRequired[int]
    timeoutSeconds: NotRequired[float]
    fallback: NotRequired[list[Literal["offline", "anthropic", "openai", "remote", "anthropic-native", "openai-native"]]]


class TokenUsage(TypedDict):
    """The contextd/tokenUsage notification's body, and every result's `usage`."""

    sessionId: str
    tokens: int
    contextWindow: int
    percent: float
    thresholdTokens: int
    source: UsageSource
    calibration: float
    """What counted tokens were multiplied by: 1.0 for OpenAI models (exact counts)."""
    model: str
    breakdown: FigureBreakdown
    agentCompaction: NotRequired[AgentCompaction]


class TreeNode(TypedDict):
    id: str
    parentId: str | None
    type: str
    role: NotRequired[str]
    """A message's role."""
    preview: str
    tokens: int
    timestamp: str
    children: list[str]
    label: NotRequired[str]
    shortSummary: NotRequired[str]
    """A compaction's or branch summary's one line."""
    firstKeptEntryId: NotRequired[str | None]
    tokensBefore: NotRequired[int]
    tokensAfter: NotRequired[int]
    """The three of a compaction."""


class TreeResult(TypedDict):
    leafId: str | None
    nodes: list[TreeNode]


class WorkspaceActivity(TypedDict):
    """`contextd/workspace/activity`: any change of any session of a watched workspace,
    whoever made it (another editor, a script, the daemon following an agent's transcript).
    """

    sessionId: str
    name: str | None
    workspace: str
    cause: ChangeCause
    leafId: str | None
    usage: TokenUsage
    source: NotRequired[MirrorSource]
    updatedAt: str


TOKEN_USAGE = "contextd/tokenUsage"
SESSION_CHANGED = "contextd/sessionChanged"
WORKSPACE_ACTIVITY = "contextd/workspace/activity"
COMPACTION_STARTED = "contextd/compactionStarted"
COMPACTION_FINISHED = "contextd/compactionFinished"
IDLE_TIMER = "contextd/idleTimer"


NOTIFICATIONS = (
    TOKEN_USAGE,
    SESSION_CHANGED,
    WORKSPACE_ACTIVITY,
    COMPACTION_STARTED,
    COMPACTION_FINISHED,
    IDLE_TIMER,
)
