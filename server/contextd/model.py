"""The data of contextd: messages, session entries, usage and settings.

These pydantic models are the one definition of what a session file line, a
request's message and a setting look like. Field names follow the wire format
(camelCase) so that a model dumps to exactly what is stored and sent.
"""

from __future__ import annotations

import builtins
import json
import os
from functools import lru_cache
from datetime import datetime, timezone
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, model_validator

MAX_TEXT_CHARS = 4_000_000
"""The largest single text a client may send; beyond it the request is refused."""
MAX_CONTENT_DEPTH = 64
"""How deeply a message or a settings object may nest objects and arrays. Deeper content is
refused before anything is written or applied: it could not be stored, dumped or read back."""


class Strict(BaseModel):
    """Rejects unknown fields, so a typo in a client's message is an error, not lost data."""

    model_config = ConfigDict(extra="forbid")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- content blocks ---------------------------------------------------------

Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]


class TextContent(Strict):
    type: Literal["text"] = "text"
    text: Text


class ImageContent(Strict):
    type: Literal["image"] = "image"
    data: Text
    mimeType: str


class ThinkingContent(Strict):
    type: Literal["thinking"] = "thinking"
    thinking: Text
    signature: str | None = None


class ToolCall(Strict):
    type: Literal["toolCall"] = "toolCall"
    id: Annotated[str, Field(min_length=1, max_length=256)]
    name: Annotated[str, Field(min_length=1, max_length=256)]
    arguments: dict[str, Any] = Field(default_factory=dict)


UserBlock = Annotated[Union[TextContent, ImageContent], Field(discriminator="type")]
AssistantBlock = Annotated[
    Union[TextContent, ThinkingContent, ToolCall], Field(discriminator="type")
]


# --- messages ---------------------------------------------------------------


class Usage(Strict):
    """Token usage a provider reported for one assistant answer."""

    input: Annotated[int, Field(ge=0)] = 0
    output: Annotated[int, Field(ge=0)] = 0
    cacheRead: Annotated[int, Field(ge=0)] = 0
    cacheWrite: Annotated[int, Field(ge=0)] = 0
    total: Annotated[int, Field(ge=0)] | None = None

    @property
    def context_tokens(self) -> int:
        """The size of the context this answer saw plus the answer itself."""
        return usage_context_tokens(self)


def usage_context_tokens(usage: Usage | UsageFigures) -> int:
    if usage.total is not None:
        return usage.total
    return usage.input + usage.output + usage.cacheRead + usage.cacheWrite


class UsageFigures:
    """A `Usage`'s numbers without a model around them: what a cold entry keeps of its answer's
    usage (a pydantic model of five ints weighs about half a kilobyte)."""

    __slots__ = ("input", "output", "cacheRead", "cacheWrite", "total")

    def __init__(self, input: int, output: int, cacheRead: int, cacheWrite: int, total: int | None) -> None:
        self.input, self.output, self.cacheRead, self.cacheWrite, self.total = input, output, cacheRead, cacheWrite, total

    @classmethod
    def of(cls, usage: Usage) -> UsageFigures:
        return cls(usage.input, usage.output, usage.cacheRead, usage.cacheWrite, usage.total)

    @property
    def context_tokens(self) -> int:
        return usage_context_tokens(self)


StopReason = Literal["stop", "toolUse", "length", "error", "aborted"]


def _holds_image(content: str | list[Any]) -> bool:
    return not isinstance(content, str) and any(block.type == "image" for block in content)


class UserMessage(Strict):
    role: Literal["user"] = "user"
    content: Text | list[UserBlock]

    # What the walks over every entry of a session read of a message (`MessageEntry.brief`):
    # a cold entry answers them without its content.
    @property
    def holds_image(self) -> bool:
        return _holds_image(self.content)

    lost_result: ClassVar[bool] = False


class AssistantMessage(Strict):
    role: Literal["assistant"] = "assistant"
    content: list[AssistantBlock] = Field(default_factory=list)
    usage: Usage | None = None
    stopReason: StopReason = "stop"
    errorKind: str | None = None
    errorMessage: str | None = None
    model: str | None = None

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [block for block in self.content if block.type == "toolCall"]

    @property
    def failed(self) -> bool:
        """An answer that errored or was aborted: its usage says nothing about the context."""
        return self.stopReason in ("error", "aborted")

    holds_image: ClassVar[bool] = False
    lost_result: ClassVar[bool] = False

    @property
    def reasoned(self) -> bool:
        """Holds a thinking block (the summary an agent keeps of its reasoning)."""
        return any(block.type == "thinking" for block in self.content)


MISSING_RESULT_TEXT = "[No result was recorded for this tool call in the imported session]"
"""The result an importer gives a tool call whose result the transcript lost (a damaged or
missing line): the provider was sent the real one, which contextd never saw."""


class ToolResultMessage(Strict):
    role: Literal["toolResult"] = "toolResult"
    toolCallId: Annotated[str, Field(min_length=1, max_length=256)]
    toolName: str
    content: Text | list[UserBlock]
    isError: bool = False

    @property
    def holds_image(self) -> bool:
        return _holds_image(self.content)

    @property
    def lost_result(self) -> bool:
        """A result the transcript lost, which an importer stood in for."""
        return self.content == MISSING_RESULT_TEXT


Message = Annotated[
    Union[UserMessage, AssistantMessage, ToolResultMessage], Field(discriminator="role")
]


def message_text(content: str | list[Any]) -> str:
    """The plain text of a message's content, blocks joined by newlines."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ThinkingContent):
            parts.append(block.thinking)
    return "\n".join(parts)


# --- session file lines -----------------------------------------------------


class ParentSession(Strict):
    id: str
    entryId: str | None = None


FollowedAgent = Literal["claude-code", "codex", "pi"]


def usable_path(path: str) -> str:
    """A folder name the system can be asked about: no NUL, nothing that cannot be
    encoded for the file system (a lone surrogate)."""
    if "\0" in path:
        raise ValueError("a path cannot contain a NUL character")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise ValueError("a path must be valid text (it holds a lone surrogate)") from None
    return path


TranscriptRoot = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(usable_path)]
FOLLOWED_AGENTS: tuple[FollowedAgent, ...] = ("claude-code", "codex", "pi")


class MirrorSource(Strict):
    """The transcript a mirrored session follows (see contextd.follow)."""

    agent: FollowedAgent
    path: str


class SessionHeader(Strict):
    type: Literal["session"] = "session"
    version: Literal[1] = 1
    id: str
    createdAt: str = Field(default_factory=utc_now)
    workspace: str
    name: str | None = None
    parentSession: ParentSession | None = None
    source: MirrorSource | None = None
    """Set on a mirror: a read-only session that follows another agent's transcript."""


class EntryBase(Strict):
    id: str
    parentId: str | None
    timestamp: str = Field(default_factory=utc_now)


class MessageEntry(EntryBase):
    type: Literal["message"] = "message"
    message: Message

    @classmethod
    def of_checked(cls, entry_id: str, parent_id: str | None, timestamp: str, message: Message) -> MessageEntry:
        """The entry `MessageEntry(id=..., parentId=..., timestamp=..., message=...)` makes,
        from an importer's values (its message validated already), without validating them
        again when its ids and timestamp are strings: every message of a first read is made
        here, and pydantic's `__init__` was a tenth of that read. Anything else (a
        transcript's number where a string belongs) is validated, and refused, as before."""
        if type(entry_id) is not str or type(timestamp) is not str or not (parent_id is None or type(parent_id) is str):
            return cls(id=entry_id, parentId=parent_id, timestamp=timestamp, message=message)
        entry = cls.__new__(cls)
        fields = {"id": entry_id, "parentId": parent_id, "timestamp": timestamp, "type": "message", "message": message}
        _set_attribute(entry, "__dict__", fields)
        _set_attribute(entry, "__pydantic_fields_set__", _MESSAGE_ENTRY_FIELDS_GIVEN)
        _set_attribute(entry, "__pydantic_extra__", None)
        _set_attribute(entry, "__pydantic_private__", None)
        return entry

    def share_field_names(self) -> None:
        """The entry, its message, its blocks and usage made to share their sets of given
        field names with every model of their kind given the same (`SharedFieldNames`): what
        a session keeps in memory. Every entry of a load passes here, so it is one loop."""
        message = self.message
        content = message.content
        models: list[BaseModel] = [self, message, *content] if type(content) is list else [self, message]
        if message.role == "assistant" and message.usage is not None:
            models.append(message.usage)
        latest = _LATEST_SHARED
        for model in models:
            names = model.__pydantic_fields_set__
            shared = latest.get(type(model))
            if shared is None or shared != names:  # most models of a kind are given the same
                shared = latest[type(model)] = _shared_field_names(names)
            _set_attribute(model, "__pydantic_fields_set__", shared)

    @property
    def brief(self) -> Message:
        """What the walks over every entry read (role, usage, model, whether it failed, holds
        an image, reasoned, is a lost result): the message itself, or a cold entry's record."""
        return self.message


class SharedFieldNames(set[str]):
    """The names of the fields a model was given (pydantic's `__pydantic_fields_set__`), one
    set shared by every model given the same names: pydantic makes a set per model, 200-730
    bytes each, which was nearly half of a parsed entry's memory beyond its text.

    It refuses to change. pydantic changes a model's set in place only when a field is
    assigned to (entries and messages are never assigned to: that raises here, loudly),
    and copies it first in `model_copy` and `copy` (`__copy__`: a plain set again)."""

    __slots__ = ()

    def _refuse(self, *args: object) -> None:
        raise TypeError("a model kept in a session is not changed in place: model_copy it")

    add = update = discard = remove = pop = clear = _refuse  # type: ignore[assignment]
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse  # type: ignore[assignment]

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: object) -> set[str]:
        return set(self)


_SHARED_FIELD_NAMES: dict[frozenset[str], SharedFieldNames] = {}
_LATEST_SHARED: dict[type[BaseModel], SharedFieldNames] = {}
"""The set each kind of model was last given: the next is most likely the same."""
_set_attribute = object.__setattr__


def _shared_field_names(names: set[str]) -> SharedFieldNames:
    key = frozenset(names)
    shared = _SHARED_FIELD_NAMES.get(key)
    if shared is None:
        shared = _SHARED_FIELD_NAMES[key] = SharedFieldNames(key)
    return shared


_MESSAGE_ENTRY_FIELDS_GIVEN = _shared_field_names({"id", "parentId", "timestamp", "message"})


COLD_PARSED_KEPT = 256
"""Cold entries parsed lately and kept parsed (a request reading a stretch of them, as a
tree or a branch summary does, parses each once)."""


NonNegative = Annotated[int, Field(ge=0)]
ColdRecord = tuple[
    str, str | None, Literal["user", "assistant", "toolResult"], str | None,
    tuple[NonNegative, NonNegative, NonNegative, NonNegative, NonNegative | None] | None,
    StopReason, str | None, str | None, bool, bool, bool,
]
"""`ColdMessageEntry.record()`: id, parent id, role, model, usage figures, stop reason, error
kind and message, holds an image, is a lost result, reasoned."""


Read = TypeVar("Read")


def read_line(line: bytes, kind: TypeAdapter[Read]) -> Read:
    """A line of a session file read as `kind`: parsed and validated in one pass by pydantic's
    JSON reader, else by `json.loads` and then validated. pydantic's reader refuses the
    escape of a lone surrogate, which `store.encode_line` writes for one in free-form data
    (a tool call's arguments): read by the first alone, such an entry was lost on reload.
    ValueError (a ValidationError) when the line is no `kind`."""
    try:
        return kind.validate_json(line)
    except ValueError:
        return kind.validate_python(json.loads(line))


_MESSAGE_ENTRY: TypeAdapter[MessageEntry] = TypeAdapter(MessageEntry)


@lru_cache(maxsize=COLD_PARSED_KEPT)
def _parsed(line: bytes) -> MessageEntry:
    return read_line(line, _MESSAGE_ENTRY)


class ColdMessageEntry:
    """A message entry outside the live context (before the latest compaction's kept part,
    on another branch), kept as its line of the session file behind a light record: a parsed
    entry weighs 3-4x its line.

    The record holds what the walks over every entry read (`brief`: usage, model, role...),
    so a load or a rebuild never parses it. Anything else (`message`, `timestamp`, a dump)
    is read from the line, parsed when asked and not kept (`_parsed` keeps the latest few);
    it passes for a `MessageEntry` in `isinstance` too (`__class__`, as `unittest.mock`
    does), so code that tells entries apart needs no case for it. Cold entries are made from
    lines that parsed as message entries, so parsing one again cannot fail."""

    __slots__ = (
        "id", "parentId", "line", "role", "model", "usage", "stopReason", "errorKind", "errorMessage",
        "holds_image", "lost_result", "reasoned",
    )
    type: ClassVar[Literal["message"]] = "message"
    stopReason: StopReason
    model: str | None
    errorKind: str | None
    errorMessage: str | None
    usage: UsageFigures | None

    def __init__(self, entry: MessageEntry, line: bytes) -> None:
        self.id, self.parentId, self.line = entry.id, entry.parentId, line
        message = entry.message
        self.role = message.role
        self.holds_image, self.lost_result = message.holds_image, message.lost_result
        self.model = self.usage = self.errorKind = self.errorMessage = None
        self.stopReason, self.reasoned = "stop", False
        if message.role == "assistant":
            self.model, self.stopReason, self.reasoned = message.model, message.stopReason, message.reasoned
            self.usage = UsageFigures.of(message.usage) if message.usage is not None else None
            self.errorKind = message.errorKind
            if message.failed or message.errorKind is not None:
                self.errorMessage = message.errorMessage  # what an overflow states

    def record(self) -> ColdRecord:
        """The record alone, as the counts file keeps it for the next load (session/counts.py)."""
        usage = self.usage
        figures = None if usage is None else (usage.input, usage.output, usage.cacheRead, usage.cacheWrite, usage.total)
        return (
            self.id, self.parentId, self.role, self.model, figures, self.stopReason, self.errorKind,
            self.errorMessage, self.holds_image, self.lost_result, self.reasoned,
        )

    @classmethod
    def of_record(cls, record: ColdRecord, line: bytes) -> ColdMessageEntry:
        cold = cls.__new__(cls)
        cold.line = line
        (
            cold.id, cold.parentId, cold.role, cold.model, figures, cold.stopReason, cold.errorKind,
            cold.errorMessage, cold.holds_image, cold.lost_result, cold.reasoned,
        ) = record
        cold.usage = None if figures is None else UsageFigures(*figures)
        return cold

    @property
    def failed(self) -> bool:
        return self.stopReason in ("error", "aborted")

    @property
    def brief(self) -> ColdMessageEntry:
        return self

    @property  # type: ignore[misc]
    def __class__(self) -> builtins.type:  # type: ignore[override]
        return MessageEntry

    def parsed(self) -> MessageEntry:
        return _parsed(self.line)

    def __getattr__(self, name: str) -> Any:
        return getattr(_parsed(self.line), name)

    def __eq__(self, other: object) -> bool:
        return self.parsed() == (other.parsed() if type(other) is ColdMessageEntry else other)  # type: ignore[union-attr]

    __hash__ = None  # type: ignore[assignment]


class SummarizerInfo(Strict):
    provider: str
    model: str | None = None


class SourcedItem(Strict):
    """One item of a summary and the entries it was taken from."""

    section: str
    text: str
    entryIds: list[str]


class FileDetails(Strict):
    readFiles: list[str] = Field(default_factory=list)
    modifiedFiles: list[str] = Field(default_factory=list)
    sources: list[SourcedItem] | None = None
    """Where each item of the summary came from: entry ids a client can jump to (an item
    carried from an earlier summary names that compaction entry)."""


CompactionReason = Literal["manual", "threshold", "overflow", "incomplete", "idle"]


OPENAI_ITEM_INPUT_KEYS = ("type", "id", "encrypted_content")
OPENAI_MESSAGE_INPUT_KEYS = ("type", "role", "content", "status")
"""What the Responses API takes back of the items `/responses/compact` answers: a message's
`id` is output-only (an input message has none)."""


class PreserveData(Strict):
    """What a provider's own compaction returned that only that provider can read, kept with
    the compaction entry and replayed verbatim in that provider's context format
    (`openai-responses`) to the model that made it.

    It is conversation content (encrypted by the provider), so it is never logged, never put
    in a result or a notification, and never sent to another provider."""

    openaiItems: list[dict[str, Any]]
    """The whole output of `POST /responses/compact`, as input items: the user messages it
    kept, then its `{"type": "compaction", "id", "encrypted_content"}` item (a Codex
    compaction keeps the item alone: its messages are entries of their own)."""
    model: str | None = None
    """The model that made the item: OpenAI decrypts it for that model (and account) only.
    Absent on entries written before it was kept: the compaction's `summarizer.model` then."""
    coversSplitTurn: bool | None = None
    """The items also hold the beginning of the turn the compaction split (it compacted one
    long turn), so the summary's split-turn part is not replayed after them."""

    @model_validator(mode="before")
    @classmethod
    def _from_single_item(cls, data: Any) -> Any:
        """Entries written before the whole output was kept hold the item alone, `openaiItem`."""
        if isinstance(data, dict) and "openaiItem" in data:
            data = dict(data)
            data.setdefault("openaiItems", [data.pop("openaiItem")])
        return data

    @classmethod
    def of_openai_output(cls, output: list[dict[str, Any]], model: str | None) -> PreserveData:
        """From the items OpenAI answered (or Codex recorded), with only the fields the API
        takes back as input."""
        return cls(openaiItems=[_input_item(item) for item in output], model=model)


def _input_item(item: dict[str, Any]) -> dict[str, Any]:
    keys = OPENAI_ITEM_INPUT_KEYS if item.get("type") == "compaction" else OPENAI_MESSAGE_INPUT_KEYS
    return {key: item[key] for key in keys if key in item}


class CompactionEntry(EntryBase):
    type: Literal["compaction"] = "compaction"
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: int
    reason: CompactionReason
    summarizer: SummarizerInfo
    details: FileDetails = Field(default_factory=FileDetails)
    instructions: str | None = None
    shortSummary: str | None = None
    """One line for tree previews and tooltips (absent on entries written before it existed)."""
    preserveData: PreserveData | None = Field(default=None, repr=False)
    """A provider-native compaction's opaque state (`summarizer.provider: openai-native`)."""

    def provider_state(self) -> PreserveData | None:
        """`preserveData` naming the model that made it: entries written before it kept the
        model name it only as the compaction's `summarizer.model`."""
        if self.preserveData is None or self.preserveData.model is not None:
            return self.preserveData
        return self.preserveData.model_copy(update={"model": self.summarizer.model})


class PruneEntry(EntryBase):
    type: Literal["prune"] = "prune"
    entryIds: list[str]
    tokensSaved: int


class BranchSummaryEntry(EntryBase):
    type: Literal["branch_summary"] = "branch_summary"
    fromId: str
    summary: str
    details: FileDetails = Field(default_factory=FileDetails)
    shortSummary: str | None = None


class HandoffEntry(EntryBase):
    type: Literal["handoff"] = "handoff"
    document: str
    fromSession: str
    details: FileDetails = Field(default_factory=FileDetails)
    """The document's files and sources; the sources name entries of `fromSession`."""
    unseenTokens: Annotated[int, Field(ge=0)] | None = None
    """The part of the prompt contextd never sees (system prompt, tool schemas) as
    `fromSession` had learned it: the new session's figure holds it until its first report."""


class LabelEntry(EntryBase):
    type: Literal["label"] = "label"
    targetId: str
    label: str | None


class LeafEntry(EntryBase):
    type: Literal["leaf"] = "leaf"
    targetId: str | None


class ModelChangeEntry(EntryBase):
    type: Literal["model_change"] = "model_change"
    model: str
    contextWindow: Annotated[int, Field(gt=0)] | None = None
    """The window the agent itself used for this model (an imported Codex rollout records
    it); it beats the registry's figure, a user's `models` override beats both."""


class SessionInfoEntry(EntryBase):
    type: Literal["session_info"] = "session_info"
    name: str


InstructionsSource = Annotated[str, Field(min_length=1, max_length=128)]


class InstructionsEntry(EntryBase):
    """Agent instructions (AGENTS.md, CLAUDE.md, environment context, a system prompt).

    Not conversation: never summarized or pruned, and they outlive every compaction. For
    each `source` the latest entry on the path stands; an empty `text` withdraws it.
    """

    type: Literal["instructions"] = "instructions"
    text: Text
    source: InstructionsSource = "client"


Entry = Annotated[
    Union[
        MessageEntry,
        CompactionEntry,
        PruneEntry,
        BranchSummaryEntry,
        HandoffEntry,
        LabelEntry,
        LeafEntry,
        ModelChangeEntry,
        SessionInfoEntry,
        InstructionsEntry,
    ],
    Field(discriminator="type"),
]

NON_NODE_TYPES = frozenset({"label", "leaf"})
"""Entry types that annotate the tree instead of growing it."""


def is_node(entry: EntryBase) -> bool:
    return entry.type not in NON_NODE_TYPES  # type: ignore[attr-defined]


# --- settings ---------------------------------------------------------------


class SettingsGroup(BaseModel):
    """Unknown keys are kept aside (and logged by the caller), never fatal."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)


Fraction = Annotated[float, Field(gt=0, le=1)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]

DEFAULT_READ_TOOLS = ["read", "read_file", "view", "cat", "open_file", "Read", "NotebookRead"]
DEFAULT_MODIFY_TOOLS = [
    "write", "edit", "write_file", "edit_file", "apply_patch", "str_replace",
    "create_file", "Write", "Edit", "MultiEdit", "NotebookEdit",
]


ModelName = Annotated[str, Field(min_length=1, max_length=256)]


class PromotionRule(BaseModel):
    """On an overflow or a truncated answer, a session on a model `from` names moves to `to`
    instead of compacting, when `to` has the larger window (see tokens/promotion.py)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: ModelName = Field(alias="from")
    """A model id, a prefix of ids at `-`, `@` or `:`, or a registry family (`claude-4`)."""
    to: ModelName


class CompactionSettings(SettingsGroup):
    enabled: bool = True
    strategy: Literal["summary", "handoff", "off"] = "summary"
    reserveTokens: PositiveInt = 16384
    keepRecentTokens: PositiveInt = 20000
    thresholdPercent: Fraction | None = None
    thresholdTokens: PositiveInt | None = None
    hookTimeoutSeconds: Annotated[float, Field(gt=0)] = 10
    """How long a client's beforeCompact or beforeNavigate hook may take before the job goes on without it."""
    readTools: list[str] = Field(default_factory=lambda: list(DEFAULT_READ_TOOLS))
    modifyTools: list[str] = Field(default_factory=lambda: list(DEFAULT_MODIFY_TOOLS))
    promotion: list[PromotionRule] = Field(default_factory=list)
    """Larger models to move to before compacting on an overflow or a truncated answer."""


class PruningSettings(SettingsGroup):
    enabled: bool = True
    protectTokens: NonNegativeInt = 40000
    minimumSavings: NonNegativeInt = 20000
    protectedTools: list[str] = Field(default_factory=list)


class IdleSettings(SettingsGroup):
    enabled: bool = False
    timeoutSeconds: Annotated[float, Field(gt=0)] = 300
    thresholdTokens: PositiveInt | None = None
    thresholdPercent: Fraction = 0.5


class BranchSummarySettings(SettingsGroup):
    reserveTokens: PositiveInt = 16384


Provider = Literal["offline", "anthropic", "openai", "remote", "anthropic-native", "openai-native"]


class SummarizerSettings(SettingsGroup):
    provider: Provider = "offline"
    model: str | None = None
    baseUrl: str | None = None
    apiKeyEnv: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None
    remoteEndpoint: str | None = None
    maxRetries: NonNegativeInt = 3
    timeoutSeconds: Annotated[float, Field(gt=0)] = 120
    fallback: list[Provider] = Field(default_factory=list)


class ModelOverride(SettingsGroup):
    contextWindow: PositiveInt | None = None
    maxOutputTokens: PositiveInt | None = None
    encoding: Literal["o200k_base", "cl100k_base"] | None = None


class StorageSettings(SettingsGroup):
    dataDir: str | None = None
    maxLoadedSessions: Annotated[int, Field(ge=1)] = 64
    """Sessions a daemon keeps in memory; those beyond stay open (locked) and reload on use."""
    maxLoadedEntries: Annotated[int, Field(ge=1)] = 100_000
    """Entries a daemon keeps in memory, all sessions together (memory grows with entries,
    not sessions: 64 sessions of 10,000 entries took 3 GB); beyond it the least recently
    used sessions are unloaded as beyond `maxLoadedSessions`. The session in use stays,
    however large."""


class FollowSettings(SettingsGroup):
    """Following other agents' transcripts as read-only mirrors (see contextd.follow)."""

    enabled: bool = False
    agents: list[FollowedAgent] = Field(default_factory=lambda: list(FOLLOWED_AGENTS))
    roots: dict[FollowedAgent, TranscriptRoot] = Field(default_factory=dict)
    """Where each agent keeps its transcripts, instead of ~/.claude/projects,
    ~/.codex/sessions and ~/.pi/agent/sessions."""
    allWorkspaces: bool = False
    """False: only transcripts whose working directory is (inside) a workspace a connection
    has open or watches."""
    intervalSeconds: Annotated[float, Field(ge=0.05, le=3600)] = 1.0
    """How often the transcript directories are looked at (a stat of each file)."""


class Settings(SettingsGroup):
    defaultModel: str = "claude-sonnet-4-6"
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    pruning: PruningSettings = Field(default_factory=PruningSettings)
    idle: IdleSettings = Field(default_factory=IdleSettings)
    branchSummary: BranchSummarySettings = Field(default_factory=BranchSummarySettings)
    summarizer: SummarizerSettings = Field(default_factory=SummarizerSettings)
    models: dict[str, ModelOverride] = Field(default_factory=dict)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    follow: FollowSettings = Field(default_factory=FollowSettings)

    @model_validator(mode="before")
    @classmethod
    def _none_is_default(cls, data: Any) -> Any:
        return {} if data is None else data


def nesting_depth(value: Any) -> int:
    """Levels of objects and arrays, counted without recursion (so any depth is measurable)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_CONTENT_DEPTH:
            break  # deep enough to refuse; no need to walk the rest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def too_deep_setting(raw: Any) -> str | None:
    """The first top-level key of a settings object that nests deeper than MAX_CONTENT_DEPTH."""
    if not isinstance(raw, dict):
        return None
    return next((str(key) for key, value in raw.items() if nesting_depth(value) >= MAX_CONTENT_DEPTH), None)


def unknown_setting_keys(settings: BaseModel, prefix: str = "") -> list[str]:
    """Dotted names of keys that no setting knows, for the log."""
    found = [f"{prefix}{key}" for key in (settings.model_extra or {})]
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, BaseModel):
            found += unknown_setting_keys(value, f"{prefix}{name}.")
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, BaseModel):
                    found += unknown_setting_keys(item, f"{prefix}{name}.{key}.")
    return found
