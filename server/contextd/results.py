"""contextd's messages as pydantic models: the params of its requests (which the server
validates them with), their results and the bodies of its notifications. One definition of
each shape that protocol.md shows and tests hold the server to (tests/unit/test_protocol_doc.py
checks the examples, tests/client/test_result_shapes.py the real daemon's answers).
`RESULTS` gives the shapes each method's result takes (compact's dry run is a second one),
`NOTIFICATION_BODIES` each notification's body.

`json_schema()` is all of them as one JSON Schema: the VS Code extension's protocol types
are generated from it (`python -m contextd.results | node
editors/vscode/scripts/generate-protocol.mjs`, checked by tests/editors/test_protocol_types.py)."""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Annotated, Any, ClassVar, Literal, NotRequired

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
    with_config,
)
from pydantic._internal._docs_extraction import extract_docstrings_from_cls
from pydantic.json_schema import GenerateJsonSchema, models_json_schema
from typing_extensions import TypeAliasType, TypedDict

from contextd.compaction.agent_points import AGENT_VARIABLES
from contextd.formats import Format
from contextd.model import (
    MAX_CONTENT_DEPTH,
    MAX_TEXT_CHARS,
    FileDetails,
    FollowedAgent,
    Message,
    MirrorSource,
    ParentSession,
    Settings,
    SummarizerInfo,
    TranscriptRoot,
    nesting_depth,
    usable_path,
)

MAX_MESSAGES_PER_APPEND = 10_000
AgentVariableValue = Annotated[str, Field(max_length=4096), AfterValidator(usable_path)]


# --- params -------------------------------------------------------------------------------


# Every model here is built at its first use (`defer_build`), not at import: a daemon uses a
# few of them, and building all (about 80) was most of the 130 ms this module took to import.
# The fields' docstrings are read only where they are shown, in the JSON Schema (`_WireSchema`):
# pydantic's `use_attribute_docstrings` read each class's source at import, half of that time.


class Params(BaseModel):
    """A request's params: a field it does not have is an error naming it (-32602)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")


SessionId = Field(min_length=1, max_length=128)


class SessionParams(Params):
    sessionId: str = SessionId


class OpenParams(Params):
    workspace: str | None = Field(default=None, min_length=1, max_length=4096)
    sessionId: str | None = Field(default=None, min_length=1, max_length=128)
    name: str | None = Field(default=None, max_length=256)
    model: str | None = Field(default=None, min_length=1, max_length=256)


class ListParams(Params):
    workspace: str | None = Field(default=None, min_length=1, max_length=4096)


class WorkspaceWatchParams(Params):
    """A workspace, or every workspace; neither means the connection's first workspace folder."""

    workspace: str | None = Field(default=None, min_length=1, max_length=4096)
    allWorkspaces: bool = Field(default=False, strict=True)

    @field_validator("allWorkspaces")
    @classmethod
    def _not_both(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("workspace") is not None:
            raise ValueError("give either workspace or allWorkspaces: true, not both")
        return value


class AppendParams(SessionParams):
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES_PER_APPEND)

    @field_validator("messages", mode="before")
    @classmethod
    def _not_too_deep(cls, raw: Any) -> Any:
        if isinstance(raw, list):
            for index, message in enumerate(raw):
                if nesting_depth(message) > MAX_CONTENT_DEPTH:
                    raise ValueError(
                        f"message {index} nests deeper than {MAX_CONTENT_DEPTH} levels"
                    )
        return raw

    @model_validator(mode="after")
    def _storable(self) -> AppendParams:
        """Every message of the batch must serialize before the first one is written."""
        for index, message in enumerate(self.messages):
            try:
                json.dumps(message.model_dump(mode="json"))
            except (ValueError, TypeError, RecursionError):
                raise ValueError(f"message {index} cannot be stored as JSON") from None
        return self


MAX_HISTORY_HITS = 100
MAX_HISTORY_TOKENS = 100_000


class HistorySearchParams(SessionParams):
    query: str = Field(min_length=1, max_length=2000)
    limit: int = Field(default=10, ge=1, le=MAX_HISTORY_HITS)


class HistoryGetParams(SessionParams):
    entryIds: list[str] | None = Field(default=None, min_length=1, max_length=1000)
    around: str | None = Field(default=None, min_length=1, max_length=256)
    maxTokens: int = Field(default=4000, ge=1, le=MAX_HISTORY_TOKENS)

    @model_validator(mode="after")
    def _one_way(self) -> HistoryGetParams:
        if (self.entryIds is None) == (self.around is None):
            raise ValueError("give either entryIds or around")
        return self


class HistorySourcesParams(SessionParams):
    entryId: str = Field(min_length=1, max_length=256)
    item: int | str | None = None


class HistorySummarizeParams(SessionParams):
    throughEntryId: str | None = Field(default=None, min_length=1, max_length=256)
    firstKeptEntryId: str | None = Field(default=None, min_length=1, max_length=256)
    afterEntryId: str | None = Field(default=None, min_length=1, max_length=256)


ContextFormat = TypeAliasType("ContextFormat", Format)
"""The shapes the context comes in: contextd's own, Anthropic Messages, OpenAI Chat
Completions and OpenAI Responses `input` items."""


class ContextParams(SessionParams):
    format: ContextFormat = "neutral"
    model: str | None = Field(default=None, min_length=1, max_length=256)
    """The model the request is for (default: the session's): provider state is replayed to
    the model that made it only."""


class SetInstructionsParams(SessionParams):
    text: str = Field(max_length=MAX_TEXT_CHARS)
    source: str = Field(default="client", min_length=1, max_length=128)


class SetModelParams(SessionParams):
    model: str = Field(min_length=1, max_length=256)


class LabelParams(SessionParams):
    entryId: str = Field(min_length=1, max_length=64)
    label: str | None = Field(max_length=200)


class NavigateParams(SessionParams):
    targetId: str = Field(min_length=1, max_length=64)
    summarize: bool = False
    instructions: str | None = Field(default=None, max_length=20_000)


class ForkParams(SessionParams):
    entryId: str = Field(min_length=1, max_length=64)


class HandoffParams(SessionParams):
    goal: str | None = Field(default=None, max_length=20_000)


class IdleConfigureParams(Params):
    sessionId: str | None = Field(default=None, min_length=1, max_length=128)
    enabled: bool
    timeoutSeconds: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    thresholdTokens: int | None = Field(default=None, gt=0)
    thresholdPercent: float | None = Field(default=None, gt=0, le=1)


class FollowParams(Params):
    """Changes to the daemon-wide `follow` settings; none only reads them."""

    enabled: bool | None = Field(default=None, strict=True)
    agents: list[FollowedAgent] | None = None
    roots: dict[FollowedAgent, TranscriptRoot] | None = None
    allWorkspaces: bool | None = Field(default=None, strict=True)


class FollowEnvironmentParams(Params):
    """What a followed agent's hook reports of the agent's own environment, for the mirror of
    `transcriptPath`: only the variables its compaction point is worked out from."""

    agent: FollowedAgent
    transcriptPath: TranscriptRoot
    environment: dict[str, AgentVariableValue]
    """Those of the agent's variables (`AGENT_VARIABLES`) it has set; one it leaves out is unset."""

    @field_validator("environment")
    @classmethod
    def _only_the_points_variables(cls, environment: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        if "agent" not in info.data:
            return environment  # the agent's own error says what is wrong
        allowed = AGENT_VARIABLES[info.data["agent"]]
        unknown = sorted(name for name in environment if name not in allowed)
        if unknown:
            raise ValueError(
                f"{', '.join(unknown[:5])[:200]}: not a variable the agent's compaction point is worked out from "
                f"(only {', '.join(allowed)})"
            )
        return environment


class CompactParams(SessionParams):
    instructions: str | None = Field(default=None, max_length=20_000)
    dryRun: bool = False


class SettingsParams(Params):
    workspace: str | None = Field(default=None, min_length=1, max_length=4096)
    """Whose sessions' settings; the connection's workspace when omitted."""


# --- results and notification bodies -----------------------------------------------------


class Result(BaseModel):
    """A result names exactly these fields: one more or one fewer is a difference.

    On the wire (`to_wire`) a field that defaults to None is sent only when it was given;
    one declared `absent_if_none()` is never sent as null either."""

    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True)
    _absent_if_none: ClassVar[frozenset[str]] = frozenset()
    _sent_as_is: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._absent_if_none = frozenset(
            name for name, field in cls.model_fields.items() if field.json_schema_extra is _not_null
        )
        cls._sent_as_is = frozenset(name for name, field in cls.model_fields.items() if SENT_AS_IS in field.metadata)

    def model_post_init(self, context: Any) -> None:
        """None given for an `absent_if_none()` field counts as not given: it is left out."""
        for name in self._absent_if_none:
            if getattr(self, name) is None:
                self.__pydantic_fields_set__.discard(name)


def to_wire(message: BaseModel) -> Any:
    """A model as the JSON-RPC layer sends it: wire names, and only the fields given."""
    as_is = message._sent_as_is if isinstance(message, Result) else frozenset()
    dumped = message.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude=set(as_is) or None)
    if not as_is:
        return dumped
    given = message.model_fields_set
    return {
        name: getattr(message, name) if name in as_is else dumped[name]
        for name in type(message).model_fields
        if name in dumped or (name in as_is and name in given)
    }


class _SentAsIs:
    """Marks a field that holds JSON values the daemon made itself (`Annotated[T, SENT_AS_IS]`):
    `to_wire` sends them as they are, without a copy, and the model that holds them is made
    with `model_construct` by a classmethod saying why they can be trusted. The schema is T's."""


SENT_AS_IS = _SentAsIs()


def absent_if_none() -> Any:
    """A field the daemon sends with a value or leaves out, never as null: its schema says so."""
    return Field(default=None, json_schema_extra=_not_null)


def _not_null(schema: dict[str, Any]) -> None:
    """`T | None` as just `T`: the field's absence stands for None."""
    (kept,) = [branch for branch in schema.pop("anyOf") if branch != {"type": "null"}]
    schema.pop("default", None)
    schema.update(kept)


ROW = ConfigDict(defer_build=True, extra="forbid", strict=True)
"""A row of a long list (tree nodes, listed sessions, history entries) is a TypedDict under
a result: its producer builds it as a plain dict (mypy checks it), which costs nothing, where
a model per row cost more than encoding it. A key left out is a field not sent."""


UsageSource = TypeAliasType("UsageSource", Literal["usage", "counted", "estimated"])
"""Where a figure comes from: the provider's report, a calibrated count, or an estimate."""

CompactionReason = TypeAliasType(
    "CompactionReason",
    Literal["manual", "threshold", "overflow", "incomplete", "idle", "handoff", "branch", "agent"],
)
"""Why a summarizing job runs; a hand-off and a branch summary report their jobs with these
events too, and a mirror its agent's own compactions (`agent`)."""

CompactionOutcome = TypeAliasType(
    "CompactionOutcome", Literal["compacted", "failed", "aborted", "cancelled", "promoted", "skipped"]
)
"""`promoted`: no summary; the session moved to a larger model (compaction.promotion)."""

ChangeCause = TypeAliasType(
    "ChangeCause",
    Literal[
        "open", "append", "compaction", "prune", "navigate", "model", "label", "instructions",
        "fork", "handoff", "overflow", "incomplete", "deleted",
    ],
)
"""`deleted`: the session's file is gone (contextd/session/delete); nothing more comes of it."""


class FigureBreakdown(Result):
    """Where the figure's tokens are, the way an agent's /context splits a window; the parts
    add up to `tokens`."""

    instructions: int
    summary: int
    messages: int
    unseen: int
    """What the agent sends that contextd never sees (system prompt, tool schemas)."""


class TokenUsage(Result):
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
    agentCompaction: AgentCompaction | None = absent_if_none()
    """A mirror's only: where its agent compacts it (contextd never does)."""


class AgentCompaction(Result):
    """Where a mirror's agent compacts its own session, from the agent's rules and its
    configuration (compaction/agent_points.py)."""

    enabled: bool
    """False: the agent does not compact on its own (then `tokens` and `percent` are null)."""
    tokens: int | None
    percent: float | None
    """Of `contextWindow`."""
    basis: str
    """How the point was worked out: the rule, the settings taken and from where, the
    defaults assumed, the files not found or not readable."""


class OpenResult(Result):
    sessionId: str
    name: str | None
    leafId: str | None
    model: str
    contextWindow: int
    usage: TokenUsage
    path: str
    source: MirrorSource | None = absent_if_none()
    """A mirror's agent and transcript; absent for every other session."""


class StateResult(OpenResult):
    workspace: str
    entries: int
    compacting: bool


@with_config(ROW)
class SessionSummary(TypedDict):
    """A session as contextd/session/list and contextd/workspace/watch list it."""

    sessionId: str
    name: str | None
    workspace: str
    entries: int
    tokens: int
    updatedAt: str
    parentSession: NotRequired[ParentSession]
    """The session and entry it was forked or handed off from."""
    source: NotRequired[MirrorSource]
    damaged: NotRequired[str]
    """Why the session file cannot be opened."""


class ListResult(Result):
    sessions: list[SessionSummary]


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
    breakdown: FigureBreakdown


@with_config(ROW)
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


class TreeResult(Result):
    leafId: str | None
    nodes: Annotated[list[TreeNode], SENT_AS_IS]

    @classmethod
    def of(cls, leaf_id: str | None, nodes: list[TreeNode]) -> TreeResult:
        """Not validated again: the nodes are TypedDicts of strings, numbers and lists of ids
        (mypy checks the session's `tree_nodes`), and a model per node cost more than
        sending them."""
        return cls.model_construct(leafId=leaf_id, nodes=nodes)


class IdleConfigureResult(Result):
    enabled: bool
    timeoutSeconds: float
    thresholdTokens: int | None
    thresholdPercent: float
    sessionId: str | None = absent_if_none()
    effectiveThresholdTokens: int | None = absent_if_none()
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
    """The daemon-wide follow settings in force and how many transcripts are followed."""

    enabled: bool
    agents: list[FollowedAgent]
    roots: dict[str, str]
    allWorkspaces: bool
    mirrors: int


class FollowEnvironmentResult(Result):
    transcriptPath: str
    variables: list[str]
    """The names of the variables kept (their values are not sent back)."""


class NavigateResult(Result):
    leafId: str | None
    branchSummaryId: str | None = absent_if_none()
    """The summary left of the branch, when one was asked for."""
    editorText: str | None = absent_if_none()
    """A user message navigated to: its text, for the client's input box."""


class ContextResult(Result):
    messages: Annotated[list[dict[str, JsonValue]], SENT_AS_IS]
    """In the format asked for (neutral, anthropic, openai or openai-responses)."""
    system: str | None = absent_if_none()
    tokens: int

    @classmethod
    def rendered(cls, messages: list[dict[str, Any]], system: str | None, tokens: int) -> ContextResult:
        """The result for what `formats.render_context` made, not validated again: it makes
        JSON values only (dumps of validated models and strings), and re-validating a big
        context cost more than encoding it. tests/unit/test_context_wire.py holds that the
        wire form equals the validated result's on every real transcript in every format."""
        if system is None:
            return cls.model_construct(messages=messages, tokens=tokens)
        return cls.model_construct(messages=messages, system=system, tokens=tokens)


class CompactResult(Result):
    entryId: str
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: int
    summarizer: SummarizerInfo
    """The provider and model that wrote the summary (the compaction entry's `summarizer`)."""
    shortSummary: str | None

    @field_serializer("summarizer")
    def _known_parts(self, summarizer: SummarizerInfo) -> dict[str, Any]:
        """The model only when it is known."""
        return summarizer.model_dump(exclude_none=True)


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


@with_config(ROW)
class HistoryRow(TypedDict):
    """What a search hit and a fetched entry both say of an entry."""

    entryId: str
    type: str
    role: NotRequired[str]
    tool: NotRequired[str]
    timestamp: str
    branch: Literal["current", "abandoned"]
    """`current` or `abandoned`."""
    foldedBy: str | None
    """The compaction whose summary stands for it on the current branch."""


@with_config(ROW)
class SearchHit(HistoryRow):
    snippet: str


class SearchResult(Result):
    sessionId: str
    hits: list[SearchHit]


@with_config(ROW)
class HistoryEntry(HistoryRow):
    parentId: str | None
    text: str
    tokens: int
    truncated: NotRequired[bool]


class HistoryEntries(Result):
    sessionId: str
    entries: list[HistoryEntry]
    omitted: list[str]
    """Entries asked for that the token budget left out."""


@with_config(ROW)
class SourceItem(TypedDict):
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
    details: FileDetails
    """The files read and modified in the span."""


class AppendResult(Result):
    entryIds: list[str]
    leafId: str | None
    usage: TokenUsage


class SetInstructionsResult(Result):
    entryId: str
    leafId: str | None
    usage: TokenUsage


class SetModelResult(Result):
    model: str
    contextWindow: int
    usage: TokenUsage


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

    @field_serializer("settings")
    def _every_setting(self, settings: Settings) -> dict[str, Any]:
        """All of them, defaults included, under their wire names."""
        return settings.model_dump(mode="json", by_alias=True)


RESULTS: dict[str, tuple[type[Result], ...]] = {
    "contextd/compact": (CompactResult, CompactPreview),
    "contextd/history/search": (SearchResult,),
    "contextd/history/get": (HistoryEntries,),
    "contextd/history/sources": (SourcesResult,),
    "contextd/history/summarize": (SpanSummary,),
    "contextd/session/open": (OpenResult,),
    "contextd/session/state": (StateResult,),
    "contextd/session/list": (ListResult,),
    "contextd/workspace/watch": (ListResult,),
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
    "contextd/follow/environment": (FollowEnvironmentResult,),
    "contextd/navigate": (NavigateResult,),
    "contextd/session/context": (ContextResult,),
}


class SessionChanged(Result):
    sessionId: str
    leafId: str | None
    cause: ChangeCause


class WorkspaceActivity(Result):
    """`contextd/workspace/activity`: any change of any session of a watched workspace,
    whoever made it (another editor, a script, the daemon following an agent's transcript)."""

    sessionId: str
    name: str | None
    workspace: str
    cause: ChangeCause
    leafId: str | None
    usage: TokenUsage
    source: MirrorSource | None = absent_if_none()
    updatedAt: str


class CompactionStarted(Result):
    sessionId: str
    compactionId: str
    reason: CompactionReason
    tokensBefore: int


class CompactionFinished(CompactionStarted):
    outcome: CompactionOutcome
    tokensAfter: int | None = absent_if_none()
    entryId: str | None = absent_if_none()
    shortSummary: str | None = None
    error: str | None = absent_if_none()
    willRetry: bool
    handoffSessionId: str | None = absent_if_none()
    model: str | None = absent_if_none()
    contextWindow: int | None = absent_if_none()
    previousModel: str | None = absent_if_none()
    previousContextWindow: int | None = absent_if_none()
    """The last four for a promotion to a larger model."""


IdleState = Literal["armed", "fired", "cancelled"]


class IdleTimer(Result):
    sessionId: str
    state: IdleState
    dueAt: str | None = absent_if_none()
    reason: str | None = absent_if_none()


NOTIFICATION_BODIES: dict[str, type[Result]] = {
    "contextd/tokenUsage": TokenUsage,
    "contextd/sessionChanged": SessionChanged,
    "contextd/workspace/activity": WorkspaceActivity,
    "contextd/compactionStarted": CompactionStarted,
    "contextd/compactionFinished": CompactionFinished,
    "contextd/idleTimer": IdleTimer,
}


# --- contextd's requests to a client (its hooks) -----------------------------------------


class BeforeCompactParams(Result):
    sessionId: str
    compactionId: str
    reason: CompactionReason
    tokensBefore: int
    firstKeptEntryId: str | None
    summarizeEntryIds: list[str]
    keptEntryIds: list[str]
    previousSummary: str | None
    """The summary the compaction folds in, if an earlier one opens the context."""


class BeforeCompactAnswer(BaseModel):
    """A client's answer to contextd/beforeCompact; null or {} lets the compaction proceed."""

    model_config = ConfigDict(defer_build=True, extra="forbid")
    cancel: bool = False
    summary: str | None = Field(default=None, min_length=1, max_length=400_000)
    """Used instead of the summarizer's."""
    instructions: str | None = Field(default=None, max_length=20_000)
    """Added to the request's."""


class BeforeNavigateParams(Result):
    sessionId: str
    targetId: str
    leafId: str | None
    """The current leaf."""
    newLeafId: str | None
    """Where the leaf will be."""
    commonAncestorId: str | None
    leftBehindEntryIds: list[str]
    """The nodes of the current path after commonAncestorId, oldest first."""
    summarize: bool
    instructions: str | None = absent_if_none()


class BeforeNavigateAnswer(BaseModel):
    """A client's answer to contextd/beforeNavigate; null or {} lets the navigation proceed."""

    model_config = ConfigDict(defer_build=True, extra="forbid")
    cancel: bool = False
    summary: str | None = Field(default=None, min_length=1, max_length=400_000)
    """The branch summary, used instead of asking the summarizer."""


CLIENT_REQUESTS: dict[str, tuple[type[Result], type[BaseModel]]] = {
    "contextd/beforeCompact": (BeforeCompactParams, BeforeCompactAnswer),
    "contextd/beforeNavigate": (BeforeNavigateParams, BeforeNavigateAnswer),
}
"""contextd's requests to the clients that declare them: each one's params and answer."""


# --- LSP's messages, as far as contextd uses them ----------------------------------------


class WorkspaceFolder(BaseModel):
    model_config = ConfigDict(defer_build=True)
    uri: str
    name: str | None = None


class ClientInfo(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow")
    name: str
    version: str | None = None


class InitializeParams(BaseModel):
    """The parts of LSP's InitializeParams contextd reads; the rest is allowed and ignored."""

    model_config = ConfigDict(defer_build=True, extra="allow")
    processId: int | None = None
    clientInfo: ClientInfo | None = None
    capabilities: dict[str, Any] = Field(default_factory=dict)
    initializationOptions: Any = None
    """The settings: the settings' parser checks them (their depth first), not this model."""
    workspaceFolders: list[WorkspaceFolder] | None = None
    rootUri: str | None = None


class ContextdCapability(Result):
    version: str


class ExperimentalCapabilities(Result):
    contextd: ContextdCapability


class ServerCapabilities(Result):
    experimental: ExperimentalCapabilities


class ServerInfo(Result):
    name: str
    version: str


class InitializeResult(Result):
    capabilities: ServerCapabilities
    serverInfo: ServerInfo


class MessageType(IntEnum):
    """`window/showMessage`'s `type`."""

    ERROR = 1
    WARNING = 2
    INFO = 3


class ShowMessageParams(Result):
    type: MessageType
    message: str


class ConfigurationItem(Result):
    scopeUri: str | None = absent_if_none()
    """A workspace folder's URI: its settings; absent: the user's."""
    section: str


class ConfigurationParams(Result):
    """`workspace/configuration`: one answer per item, in order."""

    items: list[ConfigurationItem]


class WorkDoneProgressCreateParams(Result):
    token: str


class WorkDoneProgressBegin(Result):
    kind: Literal["begin"]
    title: str
    message: str
    cancellable: bool


class WorkDoneProgressReport(Result):
    kind: Literal["report"]
    message: str


class WorkDoneProgressEnd(Result):
    kind: Literal["end"]
    message: str


WorkDoneProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd


class ProgressParams(Result):
    """`$/progress` of a work-done token."""

    token: str
    value: WorkDoneProgressValue


class _WireSchema(GenerateJsonSchema):
    """Fields keep their names only: a title on each would become a TypeScript alias; and
    their docstrings, as descriptions."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: Any) -> Any:
        return _described(super().model_schema(schema), schema["cls"].__mro__)

    def typed_dict_schema(self, schema: Any) -> Any:
        cls = schema["cls"]
        return _described(super().typed_dict_schema(schema), (cls, *getattr(cls, "__orig_bases__", ())))


def _described(json_schema: dict[str, Any], classes: tuple[type, ...]) -> dict[str, Any]:
    """Each field's docstring as its description: the nearest class's of this module that
    gives it one (a TypedDict's bases are in `__orig_bases__`, not its `__mro__`)."""
    for cls in classes:
        if cls.__module__ == __name__:
            for name, doc in extract_docstrings_from_cls(cls, use_inspect=True).items():
                if name in json_schema.get("properties", {}):
                    json_schema["properties"][name].setdefault("description", doc)
    return json_schema


def json_schema() -> dict[str, Any]:
    """Every params, result and notification body as one JSON Schema: its root maps each
    method to its result (`results`), each notification to its body (`notifications`) and
    each request contextd sends a client to its params and answer (`clientRequests`);
    `$defs` holds every shape."""
    models: set[type[BaseModel]] = {model for shapes in RESULTS.values() for model in shapes}
    models |= {*NOTIFICATION_BODIES.values(), *_subclasses(Params)}
    models |= {model for shapes in CLIENT_REQUESTS.values() for model in shapes}
    refs, definitions = models_json_schema(
        [(model, "validation") for model in sorted(models, key=lambda model: model.__name__)],
        schema_generator=_WireSchema,
    )

    def ref(model: type[BaseModel]) -> dict[str, Any]:
        return refs[(model, "validation")]

    def one_of(shapes: tuple[type[Result], ...]) -> dict[str, Any]:
        return ref(shapes[0]) if len(shapes) == 1 else {"anyOf": [ref(shape) for shape in shapes]}

    _unshare_descriptions(definitions)
    return {
        "title": "Protocol",
        **_closed_object({
            "results": {
                "title": "Results",
                **_closed_object({method: one_of(shapes) for method, shapes in RESULTS.items()}),
            },
            "notifications": {
                "title": "Notifications",
                **_closed_object({method: ref(body) for method, body in NOTIFICATION_BODIES.items()}),
            },
            "clientRequests": {
                "title": "ClientRequests",
                **_closed_object({
                    method: {
                        "title": f"{params.__name__.removesuffix('Params')}Request",
                        **_closed_object({"params": ref(params), "answer": ref(answer)}),
                    }
                    for method, (params, answer) in CLIENT_REQUESTS.items()
                }),
            },
        }),
        **definitions,
    }


def _subclasses(model: type[BaseModel]) -> list[type[BaseModel]]:
    """The models of this module built on `model` (another module's are not the protocol's)."""
    found = [sub for sub in model.__subclasses__() if sub.__module__ == __name__]
    return [*found, *(deeper for sub in found for deeper in _subclasses(sub))]


def _unshare_descriptions(schema: Any) -> None:
    """A field's description beside its `$ref` is the field's, not the shared type's (which
    a generator would make it): the field keeps its docstring in Python only."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            schema.pop("description", None)
        for value in schema.values():
            _unshare_descriptions(value)
    elif isinstance(schema, list):
        for value in schema:
            _unshare_descriptions(value)


def _closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=2))
