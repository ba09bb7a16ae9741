"""What every importer shares: the problem report, the result, the entry builder that keeps
tool calls and results paired on every path of the imported tree, and the line feed.

Every importer reads a transcript one line at a time (`StreamingImporter.feed`): a whole
file is the same feed run to the end and `finish`ed, and a followed file is fed as it
grows. An entry the importer has settled never changes afterwards, so a mirror takes it
at once (`take_settled`) and the importer lets it go; what a later line may still change (an
answer waiting for its usage, a compaction waiting for the size of the context after it) is
held back. A following importer's state is small (no entry it handed over, only ids), so it
is saved beside the mirror (`snapshot`) and a restart continues from the byte it reached
(`restore_importer`).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json

from contextd.model import (
    MISSING_RESULT_TEXT,
    AssistantMessage,
    Entry,
    InstructionsEntry,
    LabelEntry,
    Message,
    MessageEntry,
    ModelChangeEntry,
    ToolResultMessage,
    Usage,
    utc_now,
)

MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)
ENTRY_ADAPTER: TypeAdapter[Entry] = TypeAdapter(Entry)
_MESSAGE_VALIDATOR = MESSAGE_ADAPTER.validator.validate_python

SNAPSHOT_VERSION = 1
"""Of an importer's saved state: a snapshot of another version is not restored (the file is
read again from the start instead)."""

ProblemKind = Literal["corrupt", "unknown", "skipped", "repaired", "dropped"]

PLACEHOLDER_ID = "pending"
"""The id of an entry built before the builder gives it its real one."""



@dataclass(frozen=True)
class Problem:
    """Something in the source that was not imported as it stood.

    `corrupt`: the line is not valid JSON or not the shape its type promises; `unknown`: a
    line type this importer does not know; `skipped`: a known line with no place in a
    contextd session; `repaired`: imported with a fix (e.g. a missing tool result added);
    `dropped`: imported without some of its fields, which contextd has no place for.
    """

    line: int
    kind: ProblemKind
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}: {self.message}"


SEVERITY: tuple[ProblemKind, ...] = ("corrupt", "unknown", "repaired", "dropped", "skipped")
"""The order a report lists problems in: what lost or changed data before what was left out
by design."""
FIRST_LINES = 5
"""How many line numbers a problem group names."""
_SPECIFIC = re.compile(r"'[^']*\d[^']*'")
"""A quoted id or number (a tool call id, a parent uuid): what makes one line's message its own."""


@dataclass(frozen=True)
class ProblemGroup:
    """Problems of one kind with one message (ids left out), and the lines they were found on."""

    kind: ProblemKind
    message: str
    lines: tuple[int, ...]

    def __str__(self) -> str:
        shown = ", ".join(str(line) for line in self.lines[:FIRST_LINES])
        more = ", …" if len(self.lines) > FIRST_LINES else ""
        where = "line" if len(self.lines) == 1 else f"{len(self.lines)} lines"
        return f"{self.kind}: {self.message} ({where} {shown}{more})"


def grouped(problems: Iterable[Problem]) -> list[ProblemGroup]:
    """One group per kind of problem, the worst kinds first, then the most frequent."""
    lines: dict[tuple[ProblemKind, str], list[int]] = {}
    for problem in sorted(problems, key=lambda problem: problem.line):
        lines.setdefault((problem.kind, _SPECIFIC.sub("…", problem.message)), []).append(problem.line)
    groups = [ProblemGroup(kind, message, tuple(found)) for (kind, message), found in lines.items()]
    return sorted(groups, key=lambda group: (SEVERITY.index(group.kind), -len(group.lines), group.lines[0]))


@dataclass
class ImportedSession:
    """A session read from another tool, ready to be written as a contextd session."""

    source: str
    source_id: str | None
    workspace: str | None
    created_at: str | None
    name: str | None
    entries: list[Entry]
    leaf_id: str | None
    problems: list[Problem] = field(default_factory=list)

    @property
    def message_count(self) -> int:
        return sum(1 for entry in self.entries if isinstance(entry, MessageEntry))

    def refusal(self) -> str | None:
        """Why this is not a session worth writing (in one line), or None if it is."""
        if self.message_count:
            return None
        if not self.problems:
            return f"holds no {self.source} conversation (no JSON lines at all)"
        first = min(self.problems, key=lambda problem: problem.line)
        count = len({problem.line for problem in self.problems})
        lines = "1 line" if count == 1 else f"{count} lines"
        return f"holds no {self.source} conversation ({lines} not imported; {first})"


def json_line(number: int, line: str | bytes, problems: list[Problem]) -> dict[str, Any] | None:
    """The JSON object a line holds (its bytes are UTF-8), or None (a blank line; anything
    else is reported)."""
    stripped = line.strip()
    if not stripped:
        return None
    value = _json_value(number, stripped, problems)
    if value is _UNREADABLE:
        return None
    if not isinstance(value, dict):
        problems.append(Problem(number, "corrupt", "not a JSON object"))
        return None
    return value


_UNREADABLE = object()


def json_value(text: str | bytes) -> Any:
    """The JSON value `text` holds (its bytes are UTF-8); ValueError (json's) if none."""
    try:
        return from_json(text)  # pydantic's reader (Rust): about twice json.loads's speed on transcript lines
    except ValueError:  # what it refuses json.loads may still read (a lone surrogate, deep nesting)
        pass
    return json.loads(text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text)


def _json_value(number: int, line: str | bytes, problems: list[Problem]) -> Any:
    try:
        return json_value(line)
    except json.JSONDecodeError as error:
        problems.append(Problem(number, "corrupt", f"not valid JSON ({error.msg})"))
    except RecursionError:
        problems.append(Problem(number, "corrupt", "nested too deeply to read"))
    return _UNREADABLE


def number_field(record: Mapping[str, Any], key: str, where: str) -> int:
    """A count a record holds (0 where it holds none); ValueError naming the field where it
    holds something else."""
    value = record.get(key)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        raise ValueError(f"{where}.{key} is not a number: {value!r}") from None


_TEXT_OR_NONE = (str, type(None))


def string_field(record: Mapping[str, Any], key: str, where: str = "") -> str | None:
    """A string a record holds (None where it holds none); ValueError naming the field where
    it holds something else."""
    value = record.get(key)
    if isinstance(value, _TEXT_OR_NONE):
        return value
    raise ValueError(f"{where}.{key} is not a string" if where else f"{key} is not a string")


def check_strings(record: Mapping[str, Any], keys: Iterable[str], where: str = "") -> None:
    """ValueError naming the first of `keys` whose field the record holds, not as a string."""
    for key in keys:
        if not isinstance(record.get(key), _TEXT_OR_NONE):  # every line checks some: no call for a good one
            string_field(record, key, where)


def reason_of(error: Exception) -> str:
    """What a record's field holds that could not be read, as a problem says it."""
    if isinstance(error, ValidationError):
        return validation_summary(error)
    return f"{error} missing" if isinstance(error, KeyError) else str(error)


def validation_summary(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def to_message(data: dict[str, Any]) -> Message:
    """A contextd message from neutral-shaped data; raises ValidationError."""
    return _MESSAGE_VALIDATOR(data)  # every message of an import: without TypeAdapter's Python layer


def text_of(value: Any) -> str:
    """Plain text of a string or a list of text-bearing blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text_of(item) for item in value if text_of(item))
    if isinstance(value, dict):
        for key in ("text", "content", "output"):
            if isinstance(value.get(key), (str, list)):
                return text_of(value[key])
    return ""


def kind_of(entry: Entry) -> str:
    """An entry's type, with a message's role (`message:toolResult`)."""
    return f"message:{entry.message.role}" if entry.type == "message" else entry.type


class EntryBuilder:
    """Builds the entry tree of an import, in source order.

    Source ids are kept as entry ids. Source entries with no contextd equivalent are
    `skip`ped: their children attach to their parent instead. Tool calls stay paired on
    every path: a result that answers no open call is dropped (and reported), and a call
    still open when the conversation moves on gets a result that says none was recorded.
    """

    def __init__(self, problems: list[Problem], *, keeps_shapes: bool = False, keeps_call_lines: bool = True) -> None:
        self.problems = problems
        self.keeps_shapes = keeps_shapes
        """Whether the shapes of entries let go are kept, for an importer that asks them."""
        self.keeps_call_lines = keeps_call_lines
        """Whether the line of every tool call is kept, for the report of a call closed for
        want of a result (a follower reads no report: its saved state spares a line per call)."""
        self.entries: list[Entry] = []
        self.leaf_id: str | None = None
        self._ids: set[str] = set()
        self._alias: dict[str, str | None] = {}
        self._open_calls: dict[str | None, dict[str, str]] = {None: {}}
        self._has_children: set[str | None] = set()
        """The entries with tool calls open below them that have a child (`_open_calls`): they
        end no branch, so `finish` adds no results there."""
        self._last_assistant: MessageEntry | None = None
        self._call_lines: dict[str, int] = {}
        self._position: dict[str, int] = {}
        self._held: dict[str, str] = {}
        self._awaiting_size: dict[str, set[str]] = {}
        """Compactions waiting for the size of the context after them: each with the ids
        written below it since (the conversation's path from it)."""
        self._taken = 0
        """Entries handed over (`take_settled`) and let go: `entries` holds those after them."""
        self._shapes: dict[str, tuple[str | None, str]] = {}
        """Of each entry let go, what later records still ask: its parent and its kind (only
        where `keeps_shapes`: an entry and an id more each, at every line of a transcript)."""
        self._open_ends: dict[str, str] = {}
        """Entries let go with tool calls open and no child yet: their timestamps (`finish`
        gives those calls their placeholder results)."""

    # --- settled entries --------------------------------------------------------------

    def hold(self, reason: str, entry_id: str) -> None:
        """A later line may still change `entry_id`: it and what follows are not settled.
        One hold per reason; holding again moves it."""
        self._held[reason] = entry_id

    def release(self, reason: str) -> None:
        self._held.pop(reason, None)

    def settled_count(self) -> int:
        """How many entries, from the first, no later line can change."""
        held = [self._position[entry_id] for entry_id in (*self._held.values(), *self._awaiting_size)]
        return min(held, default=self._taken + len(self.entries))

    @property
    def taken(self) -> int:
        """How many entries, from the first, were handed over and let go."""
        return self._taken

    def take_settled(self) -> list[Entry]:
        """The settled entries not handed over yet; the builder lets them go, keeping only
        what later records may ask of them (`shape`)."""
        count = self.settled_count() - self._taken
        if count == len(self.entries):  # nothing held (a first read's usual case): no copies
            taken, self.entries = self.entries, []
            self._position.clear()
        else:
            taken, self.entries = self.entries[:count], self.entries[count:]
            for entry in taken:
                self._position.pop(entry.id, None)
        self._taken += count
        open_calls, has_children = self._open_calls, self._has_children
        for entry in taken:
            entry_id = entry.id
            if self.keeps_shapes:
                self._shapes[entry_id] = (entry.parentId, kind_of(entry))
            if entry_id in open_calls and entry_id not in has_children:  # only entries with calls open are kept there
                self._open_ends[entry_id] = entry.timestamp
        if self._last_assistant is not None and self._last_assistant.id not in self._position:
            self._last_assistant = None  # settled, so its usage is known: nothing waits for it
        return taken

    def note_usage(self, entry: MessageEntry) -> None:
        """An answer's usage is known: it is the size of the context after the compactions
        it descends from that were still waiting for theirs."""
        message = entry.message
        if not isinstance(message, AssistantMessage) or message.usage is None or message.failed:
            return
        prompt = message.usage.input + message.usage.cacheRead + message.usage.cacheWrite
        if prompt == 0:
            return
        for compaction_id, below in list(self._awaiting_size.items()):
            if entry.id in below:
                index = self._position[compaction_id] - self._taken
                self.entries[index] = self.entries[index].model_copy(update={"tokensAfter": prompt})
                del self._awaiting_size[compaction_id]

    # --- ids --------------------------------------------------------------------------

    def resolve(self, source_id: str | None) -> str | None:
        """The entry that stands for `source_id`: itself, or the nearest kept ancestor."""
        if source_id not in self._alias:  # most ids are kept as they are: no walk
            return source_id
        seen: set[str] = set()
        while source_id is not None and source_id in self._alias and source_id not in seen:
            seen.add(source_id)
            source_id = self._alias[source_id]
        return source_id

    def entry(self, entry_id: str | None) -> Entry | None:
        """The entry of that id, unless it was let go (`take_settled`)."""
        position = self._position.get(entry_id) if entry_id is not None else None
        return self.entries[position - self._taken] if position is not None else None

    def shape(self, entry_id: str | None) -> tuple[str | None, str] | None:
        """An entry's parent and kind (`kind_of`), whether it was let go or not (then only
        where the builder `keeps_shapes`)."""
        entry = self.entry(entry_id)
        if entry is not None:
            return entry.parentId, kind_of(entry)
        return self._shapes.get(entry_id) if entry_id is not None else None

    def known(self, source_id: str | None) -> bool:
        return source_id is None or self.resolve(source_id) in self._ids

    def unique_id(self, wanted: str) -> str:
        candidate, suffix = wanted, 1
        while candidate in self._ids or candidate in self._alias:
            suffix += 1
            candidate = f"{wanted}-{suffix}"
        return candidate

    def skip(self, source_id: str | None, parent: str | None) -> None:
        """`source_id` is not imported; whatever hangs off it hangs off `parent` (a source id
        that was imported under its own id stays itself)."""
        target = self.resolve(parent)
        if source_id is not None and source_id != target:
            self._alias[source_id] = target

    # --- adding -----------------------------------------------------------------------

    def add_message(
        self, line: int, source_id: str, parent: str | None, message: Message, timestamp: str | None
    ) -> MessageEntry | None:
        parent = self.resolve(parent)
        role = message.role
        open_calls = self._open_calls.get(parent)
        if role == "toolResult":
            answered = cast(ToolResultMessage, message).toolCallId  # the role read once: narrowed by hand
            if not open_calls or answered not in open_calls:
                self.problems.append(Problem(line, "skipped", f"tool result for {answered!r} answers no open tool call"))
                self.skip(source_id, parent)
                return None
            # The last open call answered (most results): nothing stays open below it.
            open_calls = {call_id: name for call_id, name in open_calls.items() if call_id != answered} if len(open_calls) > 1 else None
        elif open_calls:
            parent, open_calls = self.close_open_calls(parent, line, timestamp), None
        entry_id = self.unique_id(source_id)
        entry = MessageEntry.of_checked(entry_id, parent, timestamp or utc_now(), message)
        calls = cast(AssistantMessage, message).tool_calls if role == "assistant" else None
        if calls:  # an answer's calls are open below it until their results come
            open_calls = {call.id: call.name for call in calls}
            if self.keeps_call_lines:
                self._call_lines.update(dict.fromkeys(open_calls, line))
        self._attach(entry, entry_id, parent, source_id, open_calls)
        if role == "assistant":
            self._last_assistant = entry
            if self._awaiting_size:
                self.note_usage(entry)
        return entry

    def add_node(
        self, line: int, source_id: str, parent: str | None, entry: Entry, *, enters_context: bool
    ) -> Entry:
        """A non-message node (compaction, summary, model change...) built with a placeholder
        parent; `enters_context` nodes first settle the open tool calls before them."""
        parent = self.resolve(parent)
        if enters_context:
            parent = self.close_open_calls(parent, line, entry.timestamp)
        entry_id = self.unique_id(source_id)
        entry = entry.model_copy(update={"id": entry_id, "parentId": parent})
        self._attach(entry, entry_id, parent, source_id, self._open_calls.get(parent))
        # Its `type` tag, not isinstance: a pydantic class's isinstance goes through its
        # metaclass when the answer is no.
        if entry.type == "compaction" and entry.tokensAfter == 0:  # the agent did not say
            self._awaiting_size[entry_id] = {entry_id}
        return entry

    def add_instructions(
        self, line: int, source_id: str, text: str, source: str, timestamp: str | None, parent: str | None
    ) -> Entry:
        """Agent instructions below `parent` (they are not conversation: calls stay open)."""
        entry = InstructionsEntry(
            id=PLACEHOLDER_ID, parentId=None, text=text, source=source, timestamp=timestamp or utc_now()
        )
        return self.add_node(line, source_id, parent, entry, enters_context=False)

    def add_label(self, source_id: str, parent: str | None, entry: LabelEntry) -> None:
        """Labels annotate the tree without growing it: children of the label attach to its parent."""
        self.skip(source_id, parent)
        entry = entry.model_copy(
            update={
                "id": self.unique_id(source_id),
                "parentId": self.resolve(parent),
                "targetId": self.resolve(entry.targetId),
            }
        )
        self._ids.add(entry.id)
        self.entries.append(entry)

    def _attach(
        self, entry: Entry, entry_id: str, parent_id: str | None, source_id: str, open_calls: dict[str, str] | None
    ) -> None:
        """`entry` (of `entry_id`, below `parent_id`) joins the tree, with the tool calls still
        open below it: its caller knows them all (every line of a transcript comes here, and
        a field of a pydantic model is slow to read back)."""
        if entry_id != source_id:
            self._alias[source_id] = entry_id
        if open_calls:  # most entries have none: `_open_calls.get` stands for them
            self._open_calls[entry_id] = open_calls  # never changed in place: shared with the parent's
        if parent_id is not None and parent_id in self._open_calls:  # only where calls are open does a child matter (`finish`)
            self._has_children.add(parent_id)
            if self._open_ends:
                self._open_ends.pop(parent_id, None)
        self._ids.add(entry_id)
        self._position[entry_id] = self._taken + len(self.entries)
        self.entries.append(entry)
        self.leaf_id = entry_id
        if self._awaiting_size:
            self._grow_awaiting(entry_id, parent_id)

    def _grow_awaiting(self, entry_id: str, parent_id: str | None) -> None:
        for compaction_id, below in list(self._awaiting_size.items()):
            if parent_id in below:
                below.add(entry_id)
            else:  # the conversation went on elsewhere: no answer will tell this size
                del self._awaiting_size[compaction_id]

    def close_open_calls(self, parent: str | None, line: int, timestamp: str | None) -> str | None:
        """Give every tool call still open at `parent` a result saying none was recorded;
        each repair is reported at the line of its call."""
        open_calls = self._open_calls.get(parent)
        if not open_calls:  # most entries: nothing to close
            return parent
        still_open = open_calls
        for call_id, tool_name in open_calls.items():
            self.problems.append(
                Problem(
                    self._call_lines.get(call_id, line),
                    "repaired",
                    f"tool call {call_id!r} ({tool_name}) had no result; added one",
                )
            )
            result = ToolResultMessage(
                toolCallId=call_id, toolName=tool_name, content=MISSING_RESULT_TEXT, isError=True
            )
            entry_id = self.unique_id(f"{call_id}-missing-result")
            entry = MessageEntry(id=entry_id, parentId=parent, timestamp=timestamp or utc_now(), message=result)
            still_open = {open_id: name for open_id, name in still_open.items() if open_id != call_id}
            self._attach(entry, entry_id, parent, entry_id, still_open)
            parent = entry_id
        return parent

    @property
    def last_assistant(self) -> MessageEntry | None:
        return self._last_assistant

    def finish(self, line: int, leaf: str | None = None) -> tuple[list[Entry], str | None]:
        """Settle the tool calls left open at the ends of branches; returns the entries and
        the leaf. Compactions no answer followed keep tokensAfter 0."""
        self._held.clear()
        self._awaiting_size.clear()
        leaf_id = self.resolve(leaf) if leaf is not None else self.leaf_id
        ends = [*self._open_ends.items(), *((entry.id, entry.timestamp) for entry in self.entries)]
        for entry_id, timestamp in ends:
            if entry_id not in self._has_children and self._open_calls.get(entry_id):
                end = self.close_open_calls(entry_id, line, timestamp)
                if entry_id == leaf_id:
                    leaf_id = end
        return self.entries, leaf_id

    # --- saved state ------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Everything a builder needs to go on, as JSON data (`restore` reads it)."""
        return {
            "taken": self._taken,
            "entries": [ENTRY_ADAPTER.dump_python(entry, mode="json") for entry in self.entries],
            "leaf": self.leaf_id,
            "ids": list(self._ids),
            "alias": self._alias,
            "openCalls": [[entry_id, calls] for entry_id, calls in self._open_calls.items() if calls],
            "hasChildren": list(self._has_children),
            "lastAssistant": self._last_assistant.id if self._last_assistant is not None else None,
            "callLines": self._call_lines,
            "held": self._held,
            "awaitingSize": {entry_id: list(below) for entry_id, below in self._awaiting_size.items()},
            "shapes": self._shapes,
            "openEnds": self._open_ends,
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Go on as the builder that saved `data` (a fresh builder, which the importer's
        parts already hold); raises KeyError, TypeError, ValueError or ValidationError on
        data `snapshot` did not write."""
        builder = self
        builder._taken = int(data["taken"])
        builder.entries = [ENTRY_ADAPTER.validate_python(entry) for entry in data["entries"]]
        builder._position = {
            entry.id: builder._taken + index
            for index, entry in enumerate(builder.entries)
            if not isinstance(entry, LabelEntry)
        }
        builder.leaf_id = data["leaf"]
        builder._ids = set(data["ids"])
        builder._alias = dict(data["alias"])
        builder._open_calls = {None: {}, **{entry_id: dict(calls) for entry_id, calls in data["openCalls"]}}
        builder._has_children = set(data["hasChildren"])
        builder._last_assistant = next(
            (entry for entry in builder.entries if entry.id == data["lastAssistant"] and isinstance(entry, MessageEntry)),
            None,
        )
        call_lines = {str(call): int(line) for call, line in data["callLines"].items()}
        builder._call_lines = call_lines if builder.keeps_call_lines else {}  # a follower's sheds an older state's
        builder._held = dict(data["held"])
        builder._awaiting_size = {entry_id: set(below) for entry_id, below in data["awaitingSize"].items()}
        builder._shapes = {entry_id: (parent, str(kind)) for entry_id, (parent, kind) in data["shapes"].items()}
        builder._open_ends = dict(data["openEnds"])
        if any(entry_id not in builder._position for entry_id in (*builder._held.values(), *builder._awaiting_size)):
            raise ValueError("a held entry is not among the entries")

    def add_model_root(self, line: int, model: str | None, timestamp: Any) -> str | None:
        """The session's first model as its root entry (contextd learns a model from
        model_change entries), dated like the transcript's start."""
        if not model:
            return None
        entry = ModelChangeEntry(
            id=PLACEHOLDER_ID, parentId=None, model=model, timestamp=timestamp if isinstance(timestamp, str) else utc_now()
        )
        return self.add_node(line, "model", None, entry, enters_context=False).id


def message_or_problem(
    data: dict[str, Any], line: int, problems: list[Problem], what: str
) -> Message | None:
    try:
        return to_message(data)
    except ValidationError as error:
        problems.append(Problem(line, "corrupt", f"{what}: {validation_summary(error)}"))
        return None


class StreamingImporter(ABC):
    """An importer fed one line at a time: the whole file, or a followed file as it grows.

    `feed` takes each line (its number counts from 1, every line counted, blank or not);
    `finish` ends the file: what was still waiting (an answer, a compaction without its
    summary) is written and open tool calls get their placeholder results.
    """

    source: str
    asks_shapes: ClassVar[bool] = False
    """Whether a later line asks the builder the shape of an entry it let go (`shape`)."""

    def __init__(self, *, reports_every_line: bool = True) -> None:
        self.problems: list[Problem] = []
        self.builder = EntryBuilder(self.problems, keeps_shapes=self.asks_shapes, keeps_call_lines=reports_every_line)
        self.last_line = 0
        self.reports_every_line = reports_every_line
        """Whether the report names every line not imported as it stood, as `contextd
        import` shows it; a follower logs only the lines it cannot read, and spares the
        reports that cost on every few lines (pi's dropped fields, Codex's UI events and
        turn settings). Fixed when the importer is made (or restored)."""

    def feed(self, number: int, line: str | bytes) -> None:
        self.last_line = number
        try:
            raw = from_json(line)  # the common case in one call: a line holding an object
        except ValueError:
            raw = None
        if type(raw) is not dict:  # blank, unreadable, not an object: json_line says which
            raw = json_line(number, line, self.problems)
            if raw is None:
                return
        self.apply_line(number, raw, self.record)

    def apply_line(self, number: int, raw: dict[str, Any], record: Callable[[int, dict[str, Any]], None]) -> None:
        """`record` one line, or skip it whole: a line nested deeply enough to parse, not to
        walk, or holding a field of a type or value no agent writes ("input_tokens": "many")
        is said, and the import (a follower's too) goes on with the next. A `record` reads
        and checks everything its line holds before it changes anything, so a line it
        refuses leaves no trace. (Lines an importer held back until a later one, as those
        before the first model, are recorded through here too, each under its own number.)"""
        try:
            record(number, raw)
        except RecursionError:
            self.problems.append(Problem(number, "corrupt", "nested too deeply to import"))
        except (KeyError, TypeError, ValueError) as error:
            self.problems.append(Problem(number, "corrupt", f"a field could not be read ({reason_of(error)})"))

    @abstractmethod
    def record(self, number: int, raw: dict[str, Any]) -> None:
        """One JSON object of the transcript."""

    @abstractmethod
    def finish(self) -> ImportedSession:
        """The session the lines fed so far make, as a whole-file import."""

    def imported(
        self, described_by: Mapping[str, Any], id_key: str, name: str | None, finished: tuple[list[Entry], str | None]
    ) -> ImportedSession:
        """The whole-file import: the entries and leaf `finished` gives, with the source id,
        working directory and start time of the record that describes the transcript (its
        `id_key`, `cwd` and `timestamp`)."""
        entries, leaf_id = finished
        return ImportedSession(
            source=self.source,
            source_id=described_by.get(id_key),
            workspace=described_by.get("cwd"),
            created_at=described_by.get("timestamp"),
            name=name,
            entries=entries,
            leaf_id=leaf_id,
            problems=self.problems,
        )

    @property
    @abstractmethod
    def workspace(self) -> str | None:
        """The agent's working directory, once a line has named it."""

    @property
    def leaf_id(self) -> str | None:
        """Where the transcript's conversation stands now."""
        return self.builder.leaf_id

    def pending_usage(self) -> Usage | None:
        """The context size the agent reported for an answer not settled yet (the rest of it
        may still come), when it reported one."""
        return None

    def take_settled(self) -> list[Entry]:
        """The entries no later line can change that were not taken yet, in order (a mirror
        writes these); the importer lets them go, and so the report of lines not imported,
        which a mirror has no use for."""
        self.problems.clear()
        return self.builder.take_settled()

    # --- saved state ------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The importer's state as JSON data, to go on from after a restart (the report of
        lines not imported is not in it)."""
        return {
            "version": SNAPSHOT_VERSION,
            "source": self.source,
            "lastLine": self.last_line,
            "builder": self.builder.snapshot(),
            "state": self.own_state(),
        }

    @abstractmethod
    def own_state(self) -> dict[str, Any]:
        """What this importer keeps beside its builder, as JSON data."""

    @abstractmethod
    def restore_own_state(self, state: dict[str, Any]) -> None:
        """Take back what `own_state` gave (its builder is already restored)."""


def restore_importer(
    importer_class: type[StreamingImporter], data: Any, *, reports_every_line: bool = True
) -> StreamingImporter:
    """An importer as its `snapshot` left it (the report is not in a snapshot: whether it
    names every line is given anew); ValueError when `data` is not a snapshot this version
    of `importer_class` wrote."""
    try:
        if data.get("version") != SNAPSHOT_VERSION or data.get("source") != importer_class.source:
            raise ValueError("a snapshot of another version or importer")
        importer = importer_class(reports_every_line=reports_every_line)
        importer.builder.restore(data["builder"])
        importer.last_line = int(data["lastLine"])
        importer.restore_own_state(data["state"])
    except (AttributeError, IndexError, KeyError, TypeError, ValidationError) as error:
        raise ValueError(f"not an importer snapshot ({error})") from error
    return importer


def import_lines(importer: StreamingImporter, lines: Iterable[str]) -> ImportedSession:
    """A whole-file import: every line fed, then the end of the file."""
    for number, line in enumerate(lines, start=1):
        importer.feed(number, line)
    return importer.finish()
