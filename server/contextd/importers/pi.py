"""pi session files (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`), versions 1 to 3.

v1 is a linear list without ids whose compactions name the first kept entry by its index in
the file (`firstKeptEntryIndex`, the header counting as 0); v2 added `id`/`parentId` trees;
v3 renamed the `hookMessage` role to `custom`. pi's message shapes are contextd's own, so
messages map field for field; entry types map as documented in `ENTRY_MAPPING`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from pydantic_core import SchemaValidator
from pydantic_core import core_schema as cs

from contextd.importers.common import (
    PLACEHOLDER_ID,
    EntryBuilder,
    ImportedSession,
    Problem,
    StreamingImporter,
    import_lines,
    message_or_problem,
    number_field,
    reason_of,
    check_strings,
)
from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    FileDetails,
    ImageContent,
    LabelEntry,
    Message,
    ModelChangeEntry,
    SessionInfoEntry,
    SummarizerInfo,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    utc_now,
)

SOURCE = "pi"

ENTRY_MAPPING = {
    "message": "message (bashExecution and custom roles become user messages)",
    "compaction": "compaction (reason `threshold`: pi does not record why)",
    "branch_summary": "branch_summary",
    "model_change": "model_change",
    "session_info": "session_info",
    "label": "label",
    "custom_message": "user message",
    "thinking_level_change": "skipped (no contextd equivalent)",
    "custom": "skipped (extension state, never sent to the model)",
}


NOT_A_HEADER = "the first line is not a pi session header"
HEADER_FIELDS = {"type", "version", "id", "timestamp", "cwd", "modelId", "provider"}
ENTRY_FIELDS = {"type", "id", "parentId", "timestamp"}
FIELDS_BY_ENTRY_TYPE = {
    "message": {"message"},
    "custom_message": {"content", "customType", "display", "details"},
    "compaction": {"summary", "firstKeptEntryId", "firstKeptEntryIndex", "tokensBefore", "details"},
    "branch_summary": {"fromId", "summary", "details"},
    "model_change": {"modelId"},
    "session_info": {"name"},
    "label": {"targetId", "label"},
}
FIELDS_BY_ROLE = {
    "user": {"role", "content"},
    "assistant": {"role", "content", "usage", "stopReason", "errorMessage", "model"},
    "toolResult": {"role", "toolCallId", "toolName", "content", "isError"},
    "bashExecution": {"role", "command", "output", "exitCode", "cancelled", "truncated", "fullOutputPath", "excludeFromContext"},
    "custom": {"role", "content"},
    "hookMessage": {"role", "content"},
}
USAGE_FIELDS = {"input", "output", "cacheRead", "cacheWrite", "totalTokens"}
WHAT_MESSAGE = {role: f"{role} message" for role in FIELDS_BY_ROLE}
"""How a problem names a message of each role (made once: every message line names one)."""


KEPT_BY_ENTRY_TYPE = {kind: ENTRY_FIELDS | fields for kind, fields in FIELDS_BY_ENTRY_TYPE.items()}


def _dropped_fields(raw: dict[str, Any]) -> list[str]:
    """Fields of a pi entry that contextd has no place for (they are reported, not kept)."""
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in KEPT_BY_ENTRY_TYPE:
        return []
    # Most entries drop nothing: a subset test of the keys says so without building sets.
    dropped = _beyond(raw, KEPT_BY_ENTRY_TYPE[kind], "")
    message = raw.get("message")
    if kind == "message" and isinstance(message, dict) and isinstance(message.get("role"), str) and message["role"] in FIELDS_BY_ROLE:
        dropped += _beyond(message, FIELDS_BY_ROLE[message["role"]], "message.")
        if isinstance(message.get("usage"), dict):
            dropped += _beyond(message["usage"], USAGE_FIELDS, "message.usage.")
    return dropped


def _beyond(fields: dict[str, Any], kept: set[str], prefix: str) -> list[str]:
    if fields.keys() <= kept:
        return []
    return [f"{prefix}{name}" for name in sorted(fields.keys() - kept)]


def parse(lines: Iterable[str]) -> ImportedSession:
    return import_lines(PiImporter(), lines)


class PiImporter(StreamingImporter):
    """Entries in file order. The root is the session's first model: the header's, else
    the first answer's unless a model_change comes first, so entries before either wait.
    v1 files get ids as pi migrates them: a chain, compaction indexes turned into ids."""

    source = SOURCE

    def __init__(self, *, reports_every_line: bool = True) -> None:
        super().__init__(reports_every_line=reports_every_line)
        self.header: dict[str, Any] | None = None
        self.header_line = 1
        self.name: str | None = None
        self._waiting: list[tuple[int, dict[str, Any]]] | None = []
        self._root_id: str | None = None
        self._previous: str | None = None
        self._v1_ids: list[str] = []
        self._refused = False
        self._v1 = False
        """A v1 file: its entries get ids as pi gives them when it migrates the file."""

    @property
    def workspace(self) -> str | None:
        cwd = self.header.get("cwd") if self.header else None
        return cwd if isinstance(cwd, str) else None

    @property
    def leaf_id(self) -> str | None:
        # pi resumes at the last line of the file, whatever its type.
        return self.builder.resolve(self._previous)

    def own_state(self) -> dict[str, Any]:
        return {
            "header": self.header,
            "headerLine": self.header_line,
            "name": self.name,
            "waiting": self._waiting,
            "root": self._root_id,
            "previous": self._previous,
            "v1Ids": self._v1_ids,
            "refused": self._refused,
        }

    def restore_own_state(self, state: dict[str, Any]) -> None:
        waiting = state["waiting"]
        self.header = None if state["header"] is None else dict(state["header"])
        self._v1 = self.header is not None and self.header.get("version", 1) == 1
        self.header_line = int(state["headerLine"])
        self.name = state["name"]
        self._waiting = None if waiting is None else [(int(number), dict(raw)) for number, raw in waiting]
        self._root_id = state["root"]
        self._previous = state["previous"]
        self._v1_ids = [str(entry_id) for entry_id in state["v1Ids"]]
        self._refused = bool(state["refused"])

    def feed(self, number: int, line: str | bytes) -> None:
        if self._waiting is None and not self._v1 and not self.reports_every_line:
            try:
                checked = _PI_MESSAGE_LINE.validate_json(line)
            except ValueError:  # any other line, or one this path does not read: as before
                pass
            else:
                self.last_line = number
                self._add_message(number, checked)
                return
        super().feed(number, line)

    def _add_message(self, line: int, checked: dict[str, Any]) -> None:
        """`_add` for a message line `_PI_MESSAGE_LINE` validated (a follower's common line,
        whose dropped fields are not reported)."""
        entry_id = checked["id"]
        parent = self._parent_in_tree(line, checked["parentId"])
        self.builder.add_message(line, entry_id, parent, checked["message"], checked["timestamp"])
        self._previous = entry_id

    def _parent_in_tree(self, line: int, parent: str | None) -> str | None:
        """The entry an entry naming `parent` hangs off: the root, the parent, else (a parent
        never seen) the entry before it."""
        if parent is None:
            return self._root_id
        if not self.builder.known(parent):
            self.problems.append(Problem(line, "repaired", f"parent {parent!r} not found; attached to the entry before it"))
            return self._previous
        return parent

    def record(self, number: int, raw: dict[str, Any]) -> None:
        if self._waiting is None and not self._v1:  # past the root, ids of its own: most lines
            self._add(number, raw)
            return
        if self._refused:
            return
        if self.header is None:
            if raw.get("type") != "session":
                self.problems.append(Problem(number, "corrupt", NOT_A_HEADER))
                self._refused = True  # not a pi session: nothing after this is read as one
                return
            self._begin(number, raw)
            return
        if self._v1:
            raw = self._with_v1_id(number, raw)
        if self._waiting is None:
            self._add(number, raw)
            return
        check_strings(raw, ("parentId",))  # an entry refused leaves no trace, also one that waits
        message = raw.get("message") if raw.get("type") == "message" else None
        answer = message if isinstance(message, dict) and message.get("role") == "assistant" else None
        if answer is not None:
            check_strings(answer, ("model",), "message")  # it becomes the root's: checked before it waits
        self._waiting.append((number, raw))
        if raw.get("type") == "model_change":
            self._start(None)
        elif answer is not None:
            self._start(answer.get("model"))

    def _begin(self, number: int, header: dict[str, Any]) -> None:
        check_strings(header, ("modelId",))  # before the header is taken: a refused one leaves no trace
        self.header, self.header_line = header, number
        self._v1 = header.get("version", 1) == 1
        self._v1_ids = [f"L{number}"]
        if set(header) - HEADER_FIELDS:
            self.problems.append(
                Problem(number, "dropped", f"header imported without {', '.join(sorted(set(header) - HEADER_FIELDS))}")
            )
        if header.get("modelId"):
            self._start(header["modelId"])

    def _start(self, model: str | None) -> None:
        """The root model is known: add it and the entries that waited for it."""
        assert self.header is not None
        self._root_id = self.builder.add_model_root(self.header_line, model, self.header.get("timestamp"))
        self._previous = self._root_id
        waiting, self._waiting = self._waiting or [], None
        for number, raw in waiting:
            self.apply_line(number, raw, self._add)

    def _with_v1_id(self, number: int, raw: dict[str, Any]) -> dict[str, Any]:
        """v1 -> v2 as pi migrates it: a chain of ids, and compaction indexes turned into ids."""
        ids = self._v1_ids
        raw = {**raw, "id": f"L{number}", "parentId": ids[-1] if len(ids) > 1 else None}
        kept_index = raw.pop("firstKeptEntryIndex", None)
        if raw.get("type") == "compaction" and isinstance(kept_index, int) and 0 < kept_index < len(ids):
            raw["firstKeptEntryId"] = ids[kept_index]
        ids.append(raw["id"])
        return raw

    def _add(self, line: int, raw: dict[str, Any]) -> None:
        parent = raw.get("parentId")
        if parent is not None and not isinstance(parent, str):
            check_strings(raw, ("parentId",))  # raises before anything changes: a refused entry leaves no trace
        entry_id = raw.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            self.problems.append(Problem(line, "corrupt", "entry without an id"))
            return
        parent = self._parent_in_tree(line, parent)
        self.name = _convert(self.builder, line, entry_id, parent, raw, self.problems) or self.name
        if self.reports_every_line and (dropped := _dropped_fields(raw)):
            self.problems.append(Problem(line, "dropped", f"{raw.get('type')} imported without {', '.join(dropped)}"))
        self._previous = entry_id

    def finish(self) -> ImportedSession:
        header = self.header
        if header is None:
            if not self.problems:
                self.problems.append(Problem(1, "corrupt", NOT_A_HEADER))
            return self.imported({}, "id", None, ([], None))
        if self._waiting is not None:
            self._start(None)
        finished = self.builder.finish(max(self.last_line, self.header_line), leaf=self._previous)
        return self.imported(header, "id", self.name, finished)


def _convert(
    builder: EntryBuilder, line: int, entry_id: str, parent: str | None, raw: dict[str, Any], problems: list[Problem]
) -> str | None:
    """Add one pi entry; returns the session name if the entry sets one."""
    kind = raw.get("type")
    timestamp = raw.get("timestamp") if isinstance(raw.get("timestamp"), str) else None
    try:
        if kind == "message":
            message = _message(raw.get("message"), line, problems)
            if message is None:
                builder.skip(entry_id, parent)
            else:
                builder.add_message(line, entry_id, parent, message, timestamp)
        elif kind == "custom_message":
            message = message_or_problem(
                {"role": "user", "content": _user_content(raw.get("content"))}, line, problems, "custom_message"
            )
            if message is None:
                builder.skip(entry_id, parent)
            else:
                builder.add_message(line, entry_id, parent, message, timestamp)
        elif kind == "compaction":
            builder.add_node(line, entry_id, parent, _compaction(raw, builder), enters_context=True)
        elif kind == "branch_summary":
            summary_entry = BranchSummaryEntry(
                id=PLACEHOLDER_ID,
                parentId=None,
                fromId=builder.resolve(raw.get("fromId")) or str(raw.get("fromId")),
                summary=raw["summary"],
                details=_details(raw.get("details")),
                timestamp=timestamp or utc_now(),
            )
            builder.add_node(line, entry_id, parent, summary_entry, enters_context=True)
        elif kind == "model_change":
            model_entry = ModelChangeEntry(id=PLACEHOLDER_ID, parentId=None, model=raw["modelId"], timestamp=timestamp or utc_now())
            builder.add_node(line, entry_id, parent, model_entry, enters_context=False)
        elif kind == "session_info":
            if not raw.get("name"):
                builder.skip(entry_id, parent)
                return None
            info = SessionInfoEntry(id=PLACEHOLDER_ID, parentId=None, name=raw["name"], timestamp=timestamp or utc_now())
            builder.add_node(line, entry_id, parent, info, enters_context=False)
            return str(raw["name"])
        elif kind == "label":
            label = LabelEntry(
                id=PLACEHOLDER_ID, parentId=None, targetId=raw["targetId"], label=raw.get("label"), timestamp=timestamp or utc_now()
            )
            builder.add_label(entry_id, parent, label)
        elif kind in ("thinking_level_change", "custom"):
            problems.append(Problem(line, "skipped", f"{kind}: {ENTRY_MAPPING[kind]}"))
            builder.skip(entry_id, parent)
        else:
            problems.append(Problem(line, "unknown", f"unknown entry type {kind!r}"))
            builder.skip(entry_id, parent)
    except (KeyError, TypeError) as error:
        problems.append(Problem(line, "corrupt", f"{kind} entry lacks {error}"))
        builder.skip(entry_id, parent)
    except ValueError as error:  # a ValidationError, or a count number_field names
        problems.append(Problem(line, "corrupt", f"{kind} entry: {reason_of(error)}"))
        builder.skip(entry_id, parent)
    return None


def _compaction(raw: dict[str, Any], builder: EntryBuilder) -> CompactionEntry:
    first_kept = raw.get("firstKeptEntryId")
    return CompactionEntry(
        id=PLACEHOLDER_ID,
        parentId=None,
        summary=raw["summary"],
        firstKeptEntryId=builder.resolve(first_kept) if first_kept else None,
        tokensBefore=number_field(raw, "tokensBefore", "compaction"),
        tokensAfter=0,
        reason="threshold",
        summarizer=SummarizerInfo(provider=SOURCE, model=None),
        details=_details(raw.get("details")),
        timestamp=raw["timestamp"] if isinstance(raw.get("timestamp"), str) else utc_now(),
    )


def _details(value: Any) -> FileDetails:
    if not isinstance(value, dict):
        return FileDetails()
    return FileDetails(
        readFiles=[str(path) for path in value.get("readFiles", []) if isinstance(path, str)],
        modifiedFiles=[str(path) for path in value.get("modifiedFiles", []) if isinstance(path, str)],
    )


# --- messages ---------------------------------------------------------------------------


def _message(raw: Any, line: int, problems: list[Problem]) -> Message | None:
    if not isinstance(raw, dict):
        problems.append(Problem(line, "corrupt", "message entry without a message object"))
        return None
    role = raw.get("role")
    if role == "user":
        data: dict[str, Any] = {"role": "user", "content": _user_content(raw.get("content"))}
    elif role == "assistant":
        data = _assistant(raw, line, problems)
    elif role == "toolResult":
        data = {
            "role": "toolResult",
            "toolCallId": raw.get("toolCallId"),
            "toolName": raw.get("toolName", ""),
            "content": _user_content(raw.get("content")),
            "isError": bool(raw.get("isError", False)),
        }
    elif role == "bashExecution":
        if raw.get("excludeFromContext"):
            problems.append(Problem(line, "skipped", "bashExecution excluded from the context (!! command)"))
            return None
        data = {"role": "user", "content": _bash_execution_text(raw)}
    elif role in ("custom", "hookMessage"):
        data = {"role": "user", "content": _user_content(raw.get("content"))}
    else:
        problems.append(Problem(line, "unknown", f"unknown message role {role!r}"))
        return None
    return message_or_problem(data, line, problems, WHAT_MESSAGE[role])


def _user_content(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            blocks.append({"type": "text", "text": block.get("text", "")})
        elif isinstance(block, dict) and block.get("type") == "image":
            blocks.append({"type": "image", "data": block.get("data", ""), "mimeType": block.get("mimeType", "")})
    return blocks


def _assistant(raw: dict[str, Any], line: int, problems: list[Problem]) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for block in raw.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            blocks.append({"type": "text", "text": block.get("text", "")})
        elif kind == "thinking":
            thinking = {"type": "thinking", "thinking": block.get("thinking", "")}
            if isinstance(block.get("thinkingSignature"), str):
                thinking["signature"] = block["thinkingSignature"]
            blocks.append(thinking)
        elif kind == "toolCall":
            blocks.append(
                {"type": "toolCall", "id": block.get("id"), "name": block.get("name"), "arguments": block.get("arguments") or {}}
            )
        else:
            problems.append(Problem(line, "skipped", f"assistant content block of type {kind!r}"))
    data: dict[str, Any] = {
        "role": "assistant",
        "content": blocks,
        "stopReason": raw.get("stopReason", "stop"),
    }
    usage = raw.get("usage")
    if isinstance(usage, dict):
        data["usage"] = {
            "input": usage.get("input", 0),
            "output": usage.get("output", 0),
            "cacheRead": usage.get("cacheRead", 0),
            "cacheWrite": usage.get("cacheWrite", 0),
            "total": usage.get("totalTokens") or None,
        }
    for key in ("errorMessage", "model"):
        if isinstance(raw.get(key), str):
            data[key] = raw[key]
    return data


def _bash_execution_text(raw: dict[str, Any]) -> str:
    """The text pi puts in the context for a `!command` the user ran."""
    text = f"Ran `{raw.get('command', '')}`\n"
    output = raw.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    if raw.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif raw.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {raw['exitCode']}"
    if raw.get("truncated") and raw.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {raw['fullOutputPath']}]"
    return text


# --- pi's common line read straight from its bytes ----------------------------------------
#
# Most of a pi transcript is message lines of the user, assistant and toolResult roles in
# the shape pi writes them. One schema validates such a line's bytes into contextd's own
# message models (no dict of the line, no dict rebuilt for validation: a first read's
# largest cost). It accepts a line only where the general path (`_message`) would make the
# same message with the same fields given, and strictly (a JSON number, never a string of
# one); any other line raises and is read by the general path, as before.


def _loosened(schema: Any) -> Any:
    """A copy of a model's core schema taking the fields pi writes beside contextd's, and
    strict (a model's own config, not the validator's, rules its fields)."""
    if isinstance(schema, list):
        return [_loosened(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copied = {key: _loosened(value) for key, value in schema.items()}
    if copied.get("type") == "model":
        copied["config"] = {**copied.get("config", {}), "extra_fields_behavior": "ignore", "strict": True}
    elif copied.get("type") == "model-fields":
        copied["extra_behavior"] = "ignore"
    return copied


def _fields(model_schema: dict[str, Any]) -> dict[str, Any]:
    return model_schema["schema"]["fields"]  # type: ignore[no-any-return]


def _required(field: dict[str, Any]) -> None:
    """A field the general path always gives: a line without it is not read here."""
    if field["schema"]["type"] == "default":
        field["schema"] = field["schema"]["schema"]


def _given_if_string(field: dict[str, Any]) -> None:
    """A field the general path gives only where the line holds a string for it."""
    default = field["schema"]
    if default["schema"]["type"] == "nullable":
        field["schema"] = {**default, "schema": default["schema"]["schema"]}


def _never_read(field: dict[str, Any]) -> None:
    """A field pi has no source for: left at its default whatever the line holds."""
    field["validation_alias"] = "\\0never"


def _blocks(union: dict[str, Any], renamed: dict[str, str]) -> None:
    """A content union's blocks, each field the general path always copies made required
    (absent ones it fills with ""), `renamed` fields read under pi's name."""
    for block in union["choices"].values():
        for name, field in _fields(block).items():
            if name in renamed:
                field["validation_alias"] = renamed[name]
                _given_if_string(field)
            else:
                _required(field)


def _required_user_content(content_field: dict[str, Any]) -> None:
    _required(content_field)
    text_or_blocks = content_field["schema"]["choices"]
    _blocks(text_or_blocks[1]["items_schema"], {})


def _pi_message_schema() -> cs.CoreSchema:
    user = _loosened(copy.deepcopy(UserMessage.__pydantic_core_schema__))
    assistant = _loosened(copy.deepcopy(AssistantMessage.__pydantic_core_schema__))
    result = _loosened(copy.deepcopy(ToolResultMessage.__pydantic_core_schema__))
    for model in (user, assistant, result):
        _required(_fields(model)["role"])
    _required_user_content(_fields(user)["content"])
    _required_user_content(_fields(result)["content"])
    for name in ("toolName", "isError"):
        _required(_fields(result)[name])
    answer = _fields(assistant)
    for name in ("content", "stopReason"):
        _required(answer[name])
    _blocks(answer["content"]["schema"]["items_schema"], {"signature": "thinkingSignature"})
    for name in ("errorMessage", "model", "usage"):
        _given_if_string(answer[name])
    _never_read(answer["errorKind"])
    usage = answer["usage"]["schema"]["schema"]
    for name, field in _fields(usage).items():
        if name == "total":  # pi's totalTokens, where it is more than 0 (else the general path's None)
            field["validation_alias"] = "totalTokens"
            field["schema"] = cs.int_schema(gt=0)
        else:
            _required(field)
    return cs.tagged_union_schema({"user": user, "assistant": assistant, "toolResult": result}, discriminator="role")


def _pi_message_line_schema() -> cs.CoreSchema:
    field = cs.typed_dict_field
    return cs.typed_dict_schema(
        {
            "type": field(cs.literal_schema(["message"])),
            "id": field(cs.str_schema(min_length=1)),
            "parentId": field(cs.nullable_schema(cs.str_schema())),
            "timestamp": field(cs.str_schema()),
            "message": field(_pi_message_schema()),
        },
        extra_behavior="ignore",
    )


def _pi_message_line_validator() -> SchemaValidator:
    """pydantic-core builds a model's schema from the model's own validator where the class
    is complete (`PrebuiltValidator`): contextd's, which refuses pi's extra fields. The
    classes are marked incomplete while this one is built, so it is built from the schema
    given (were that to change, every line would be refused here and read as before)."""
    classes = [TextContent, ImageContent, ThinkingContent, ToolCall, Usage, UserMessage, AssistantMessage, ToolResultMessage]
    for model in classes:
        setattr(model, "__pydantic_complete__", False)
    try:
        return SchemaValidator(_pi_message_line_schema(), cs.CoreConfig(strict=True))
    finally:
        for model in classes:
            setattr(model, "__pydantic_complete__", True)


_PI_MESSAGE_LINE = _pi_message_line_validator()
