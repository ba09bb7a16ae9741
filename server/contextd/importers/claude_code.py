"""Claude Code transcripts (`~/.claude/projects/<encoded cwd>/<session id>.jsonl`).

Each line is a record; `user`, `assistant` and `system` records chain through `uuid` and
`parentUuid` (across a compaction, the `compact_boundary` record's `logicalParentUuid`).
Records are imported in file order, each below its parent, so the import is a tree: the
branches a rewind abandoned stay in it, and the session resumes at the last record. Where
the chain breaks (a parent on a lost or corrupt line, or an older compaction summary written
with no parent and no boundary) it continues from the entry before. One API answer is
written as several assistant records (one per content block) sharing `message.id`; they
become one assistant message carrying the usage of the last of them, written once a record
of the conversation follows (or the file ends), or, from 2.1.x on, once Claude Code saved
the turn (a `last-prompt` record naming the answer); the bookkeeping records Claude Code
writes among them (file snapshots, progress, queue operations, hooks) do not end it.

Claude Code's compaction summary is free text ("This session is being continued from a
previous conversation…"); it is imported whole as the compaction's summary. Newer versions
(2.1.x) write in the boundary's `compactMetadata` the size of the context after it
(`postTokens`) and the latest messages they kept after the summary (`preservedSegment`): such
a compaction is settled at its summary record, with those messages kept; an older one waits
for the next answer's usage to learn its size.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from contextd.importers.common import (
    PLACEHOLDER_ID,
    ImportedSession,
    Problem,
    StreamingImporter,
    import_lines,
    message_or_problem,
    check_strings,
    number_field,
    string_field,
    text_of,
    to_message,
)
from contextd.model import (
    CompactionEntry,
    Entry,
    CompactionReason,
    Message,
    SessionInfoEntry,
    SummarizerInfo,
    Usage,
)

SOURCE = "claude-code"
SYNTHETIC_MODEL = "<synthetic>"

NOT_CONVERSATION = {
    "summary": "the title of a conversation whose records are not in this file",
    "file-history-snapshot": "file checkpoints for undo",
    "queue-operation": "the prompt queue",
    "progress": "tool progress display",
    "custom-title": "a session title",
    "last-prompt": "the prompt to show on resume",
    "api-request": "the parameters of a request to the model",
    "api-request-shape": "the system prompt and tools of a request",
    "api-request-blob": "a copy of a request's content",
    "tools-used": "the tools a request used",
    "cost-state": "the session's cost",
    "atis-latch": "an internal flag",
}
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "refusal": "stop",
    "pause_turn": "stop",
}
COMPACTION_REASONS: dict[str, CompactionReason] = {"manual": "manual", "auto": "threshold"}


@dataclass
class _Answer:
    """Assistant records of one API answer, gathered until the answer ends."""

    message_id: str | None
    line: int
    source_id: str
    timestamp: str | None
    parent: str | None
    uuids: list[str] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)
    error: bool = False


def parse(lines: Iterable[str]) -> ImportedSession:
    return import_lines(ClaudeCodeImporter(), lines)


def _is_conversation(raw: dict[str, Any]) -> bool:
    return (
        raw.get("type") in ("user", "assistant")
        and isinstance(raw.get("uuid"), str)
        and isinstance(raw.get("message"), dict)
        and not raw.get("isSidechain")
    )


def _real_model(raw: dict[str, Any]) -> str | None:
    """The model of an assistant record, unless Claude Code wrote the record itself."""
    if raw.get("type") != "assistant" or not _is_conversation(raw):
        return None
    model = raw["message"].get("model")
    return model if isinstance(model, str) and model != SYNTHETIC_MODEL else None


RESULT_KINDS = ("message:toolResult", "instructions", "session_info")
"""Entries that do not move the conversation on (`kind_of`): an answer's parallel tool
results, the instructions among them, and a title; a record whose parent is the entry
before them continues after them."""
FIRST_KEYS = ("cwd", "sessionId", "timestamp")
"""What the session takes from its first conversation record."""


class ClaudeCodeImporter(StreamingImporter):
    """Records in file order, each hung where its `parentUuid` says.

    A record whose parent is the conversation's last entry continues it; so do the results
    of an answer's parallel tool calls, which Claude Code hangs off each call's own record.
    Any other known parent starts a branch there (a rewind in Claude Code); an unknown one
    (a lost or corrupt line) continues from the entry before. The first real model becomes
    the root entry: records before the first answer wait for it.
    """

    source = SOURCE
    asks_shapes = True  # parallel tool results: see _results_since

    def __init__(self, *, reports_every_line: bool = True) -> None:
        super().__init__(reports_every_line=reports_every_line)
        self._waiting: list[tuple[int, dict[str, Any]]] | None = []
        self._root_id: str | None = None
        self._first: dict[str, Any] | None = None
        self.name: str | None = None
        """The latest title Claude Code gave this session."""
        self._converter = _Converter(self)

    @property
    def workspace(self) -> str | None:
        return self._first.get("cwd") if self._first else None

    def record(self, number: int, raw: dict[str, Any]) -> None:
        conversation = _is_conversation(raw)
        _check_fields(raw, conversation)  # a record refused leaves no trace, also one that waits (below)
        if self._waiting is not None and conversation and not raw.get("isCompactSummary"):
            # Read now and again when replayed (only the first records wait): one refused starts nothing.
            if raw["type"] == "assistant":
                _answer_blocks(raw["message"])
            else:
                self._converter.user_parts(raw)
        if self._first is None and conversation:
            self._first = {key: raw[key] for key in FIRST_KEYS if key in raw}
        if self._waiting is None:
            self._converter.record(number, raw)
            return
        self._waiting.append((number, raw))
        model = _real_model(raw)
        if model is not None:
            started = next((r["timestamp"] for _, r in self._waiting if isinstance(r.get("timestamp"), str)), None)
            self._root_id = self.builder.add_model_root(self._waiting[0][0], model, started)
            self._replay()

    def _replay(self) -> None:
        waiting, self._waiting = self._waiting or [], None
        for number, raw in waiting:
            self.apply_line(number, raw, self._converter.record)

    def finish(self) -> ImportedSession:
        self._replay()
        self._converter.flush_answer()
        self._converter.flush_boundary(None)
        self._converter.keep_notes(self.builder.leaf_id)
        return self.imported(self._first or {}, "sessionId", self.name, self.builder.finish(self.last_line))

    def pending_usage(self) -> Usage | None:
        answer = self._converter.answer
        if answer is None or answer.error or not isinstance(answer.last.get("usage"), dict):
            return None
        try:
            usage = Usage(**_usage(answer.last["usage"]))
        except ValueError:  # said when the answer is written (flush_answer)
            return None
        return usage if usage.context_tokens > 0 else None

    def attach_point(self, line: int, raw: dict[str, Any]) -> str | None:
        """Where a record goes: after the conversation's last entry, or at a branch."""
        builder = self.builder
        parent = raw.get("parentUuid")
        if parent is None and raw.get("subtype") == "compact_boundary":
            parent = raw.get("logicalParentUuid")
        if parent is None:
            # An older version's summary continues the conversation; any other record
            # without a parent starts one over.
            return builder.leaf_id if raw.get("isCompactSummary") else self._root_id
        if not builder.known(parent):
            builder.problems.append(
                Problem(line, "repaired", f"parent {parent!r} is not in the file (a lost or corrupt line); continued from the entry before it")
            )
            return builder.leaf_id
        resolved = builder.resolve(parent)
        if resolved == builder.leaf_id or self._results_since(resolved):
            return builder.leaf_id
        return resolved

    def _results_since(self, ancestor: str | None) -> bool:
        """Only tool results (and instructions, titles) were added since `ancestor`: the
        parallel results of one answer, each hung off its own call's record."""
        shape = self.builder.shape
        current, found = self.builder.leaf_id, shape(self.builder.leaf_id)
        while found is not None and current != ancestor and found[1] in RESULT_KINDS:
            current = found[0]
            found = shape(current)
        return found is not None and current == ancestor and current != self.builder.leaf_id

    # --- saved state --------------------------------------------------------------------

    def own_state(self) -> dict[str, Any]:
        converter = self._converter
        return {
            "waiting": self._waiting,
            "root": self._root_id,
            "first": self._first,
            "name": self.name,
            "answer": asdict(converter.answer) if converter.answer is not None else None,
            "toolNames": converter.tool_names,
            "boundary": converter.boundary,
            "lastContextTokens": converter.last_context_tokens,
            "lastTimestamp": converter.last_timestamp,
            "notes": converter.notes,
            "hookSources": converter.hook_sources,
        }

    def restore_own_state(self, state: dict[str, Any]) -> None:
        waiting, boundary, converter = state["waiting"], state["boundary"], self._converter
        self._waiting = None if waiting is None else [(int(number), dict(raw)) for number, raw in waiting]
        self._root_id = state["root"]
        self._first = None if state["first"] is None else dict(state["first"])
        self.name = state["name"]
        converter.answer = None if state["answer"] is None else _Answer(**state["answer"])
        converter.tool_names = {str(call): str(name) for call, name in state["toolNames"].items()}
        converter.boundary = None if boundary is None else (int(boundary[0]), dict(boundary[1]), boundary[2])
        converter.last_context_tokens = int(state["lastContextTokens"])
        converter.last_timestamp = state["lastTimestamp"]
        converter.notes = [(int(line), str(text), timestamp) for line, text, timestamp in state.get("notes", [])]
        converter.hook_sources = [str(source) for source in state.get("hookSources", [])]


UNDELIVERED_NOTE = (
    "queue-operation: a background agent's notification Claude Code never delivered (killed); "
    "kept as a user message before the next request, so a summary sees it"
)


def _undelivered_notification(raw: dict[str, Any]) -> bool:
    """A queued notification that a background agent was killed: Claude Code drops it from
    the queue, so this record is the only trace of the event."""
    content = raw.get("content")
    return (
        raw.get("type") == "queue-operation"
        and raw.get("operation") == "enqueue"
        and isinstance(content, str)
        and "<task-notification>" in content
        and "<status>killed</status>" in content
    )


def _ends_answer(raw: dict[str, Any]) -> bool:
    """A record that moves the conversation on (a user's record, a compaction, a title),
    as opposed to the bookkeeping Claude Code writes among an answer's records."""
    kind = raw.get("type")
    return (kind == "user" and _is_conversation(raw)) or raw.get("subtype") == "compact_boundary" or kind == "summary"


def _hook_context(raw: dict[str, Any]) -> str:
    """The text a `hook_additional_context` attachment puts before the model: as Claude Code
    rendered it (`rendered`, 2.1.x), else the hook's own text; "" for another attachment."""
    attachment = raw.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "hook_additional_context":
        return ""
    rendered = raw.get("rendered")
    if isinstance(rendered, list) and rendered:
        return "\n".join(part["content"] for part in rendered if isinstance(part, dict) and isinstance(part.get("content"), str))
    content = attachment.get("content")
    parts = content if isinstance(content, list) else [content]
    return "\n".join(part for part in parts if isinstance(part, str))


def _check_fields(raw: dict[str, Any], conversation: bool) -> None:
    """Refuse a record holding a field the import reads with a type Claude Code never writes
    (ValueError naming the field), before it changes anything: the record is then skipped
    whole, as if it was never written. (What a record adds is read, and checked, before
    anything changes too: `_answer_blocks`, `_Converter.user_parts`.)"""
    if not conversation:
        _check_other_fields(raw)
        return
    check_strings(raw, CONVERSATION_KEYS)
    if not isinstance(raw["message"].get("model"), str):  # most records name theirs: no call
        check_strings(raw["message"], ("model",), "message")


def _check_other_fields(raw: dict[str, Any]) -> None:
    check_strings(raw, PARENT_KEYS)
    if raw.get("subtype") == "compact_boundary":
        check_strings(raw, ("timestamp",))
        metadata = raw.get("compactMetadata")
        if metadata and not isinstance(metadata, dict):
            raise ValueError("compactMetadata is not an object")
        number_field(metadata or {}, "preTokens", "compactMetadata")
    elif raw.get("type") in ("queue-operation", "attachment"):
        check_strings(raw, ("timestamp",))


def _answer_blocks(message: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The blocks an assistant record adds to its answer, and the types of those it holds
    of another type; ValueError where a block's field has a type Claude Code never writes
    (the answer is made of several records: one of them must not spoil the others')."""
    blocks: list[dict[str, Any]] = []
    others: list[Any] = []
    for index, block in enumerate(_blocks(message.get("content"))):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            blocks.append({"type": "text", "text": _block_text(block, kind, index)})
        elif kind == "thinking":
            thinking = {"type": "thinking", "thinking": _block_text(block, kind, index)}
            if isinstance(block.get("signature"), str):
                thinking["signature"] = block["signature"]
            blocks.append(thinking)
        elif kind == "tool_use":
            call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
            if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
                raise ValueError(f"message.content.{index}: a tool call without an id and a name")
            blocks.append(
                {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments if isinstance(arguments, dict) else {"input": arguments}}
            )
        else:
            others.append(kind)
    return blocks, others


def _block_text(block: dict[str, Any], key: str, index: int) -> str:
    text = block.get(key)
    return text if isinstance(text, str) else string_field(block, key, f"message.content.{index}") or ""


def _blocks(content: Any) -> list[Any]:
    """A message's content as blocks: a plain string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if content is None:
        return []
    if not isinstance(content, list):
        raise ValueError("message.content is neither text nor a list of blocks")
    return content


PARENT_KEYS = ("parentUuid", "logicalParentUuid")
CONVERSATION_KEYS = (*PARENT_KEYS, *FIRST_KEYS)


def _why_not_imported(line: int, raw: dict[str, Any]) -> Problem:
    kind = raw.get("type")
    if kind == "system":
        return Problem(line, "skipped", f"system record ({raw.get('subtype')}), not sent to the model")
    if kind in NOT_CONVERSATION:
        return Problem(line, "skipped", f"{kind}: {NOT_CONVERSATION[kind]}, not part of the conversation")
    if kind == "attachment":
        attachment = raw.get("attachment")
        what = attachment.get("type") if isinstance(attachment, dict) else None
        return Problem(line, "skipped", f"attachment ({what}): context Claude Code adds to its requests, not imported")
    if raw.get("isSidechain"):
        return Problem(line, "skipped", f"{kind}: a subagent's conversation (sidechain)")
    if kind in ("user", "assistant"):
        if not isinstance(raw.get("message"), dict):
            return Problem(line, "corrupt", f"{kind} record without a message object")
        return Problem(line, "corrupt", f"{kind} record without a uuid")
    return Problem(line, "unknown", f"unknown record type {kind!r}")


class _Converter:
    def __init__(self, importer: ClaudeCodeImporter) -> None:
        self.importer = importer
        self.builder = importer.builder
        self.problems = importer.problems
        self.answer: _Answer | None = None
        self.tool_names: dict[str, str] = {}
        self.boundary: tuple[int, dict[str, Any], str | None] | None = None
        self.last_context_tokens = 0
        self.last_timestamp: str | None = None
        """Of the last record that had one (a title record has none)."""
        self.notes: list[tuple[int, str, str | None]] = []
        """Undelivered notifications to keep (line, text, timestamp), waiting for the
        conversation to move on: the answer and tool results in flight are not cut short."""
        self.hook_sources: list[str] = []
        """The instructions sources of the hooks' contexts since the last compaction."""

    def record(self, line: int, raw: dict[str, Any]) -> None:
        self.convert(line, raw)
        if isinstance(raw.get("timestamp"), str):  # once the record is in (a title after it takes it)
            self.last_timestamp = raw["timestamp"]

    def convert(self, line: int, raw: dict[str, Any]) -> None:
        kind = raw.get("type")
        if kind == "assistant" and _is_conversation(raw):
            self.assistant(line, raw)
            return
        if raw.get("isSidechain"):
            self.problems.append(_why_not_imported(line, raw))
            return
        if _undelivered_notification(raw):
            self.problems.append(Problem(line, "repaired", UNDELIVERED_NOTE))
            self.notes.append((line, raw["content"], raw.get("timestamp")))
            return
        if self.saved_after_answer(raw):
            self.flush_answer()  # complete: a mirror shows it now, not at the next request
        if self.answer is not None and not _ends_answer(raw):
            self.aside(line, raw)
            return
        self.flush_answer()
        uuid = raw.get("uuid")
        if kind == "user" and _is_conversation(raw):
            self.user(line, raw)
        elif kind == "system" and raw.get("subtype") == "compact_boundary" and isinstance(uuid, str):
            self.flush_boundary(None)
            self.boundary = (line, raw, self.importer.attach_point(line, raw))
        elif kind == "summary" and self.names_this_session(raw):
            self.title(line, raw["summary"].strip(), raw["leafUuid"])
        elif kind == "attachment" and isinstance(uuid, str) and _hook_context(raw):
            self.hook_context(line, raw, _hook_context(raw))
        else:
            self.problems.append(_why_not_imported(line, raw))
            if isinstance(uuid, str):
                self.builder.skip(uuid, self.stand_in(raw))

    def saved_after_answer(self, raw: dict[str, Any]) -> bool:
        """Claude Code 2.1.x writes an answer's records once it is complete (each carries
        its `stop_reason`), then a `last-prompt` record whose `leafUuid` is the last of
        them (or a record hanging off it): no record of that answer follows."""
        answer = self.answer
        return (
            answer is not None
            and raw.get("type") == "last-prompt"
            and raw.get("leafUuid") in answer.uuids
            and answer.last.get("stop_reason") is not None
        )

    def aside(self, line: int, raw: dict[str, Any]) -> None:
        """A record written between the records of one answer (a file snapshot, a progress
        line, a hook's system record): not imported, and the answer goes on after it, so
        its tool calls keep their results. What hangs off it hangs off the answer."""
        assert self.answer is not None
        self.problems.append(_why_not_imported(line, raw))
        if isinstance(raw.get("uuid"), str):
            self.answer.uuids.append(raw["uuid"])

    def hook_context(self, line: int, raw: dict[str, Any], text: str) -> None:
        """A hook's added context (`contextd hook claude-code`'s after a compaction, say):
        Claude Code sends it with every request until its next compaction, so it stands as
        instructions of its own (in the context and the figure, as the model sees it) that
        the next compaction withdraws."""
        source = f"{str(raw['attachment'].get('hookEvent') or 'a')[:40]} hook {raw['uuid'][:80]}"
        parent = self.importer.attach_point(line, raw)
        self.builder.add_instructions(line, raw["uuid"], text, source, raw.get("timestamp"), parent)
        self.hook_sources.append(source)

    def withdraw_hook_contexts(self, line: int, compaction: Entry) -> str:
        """After a compaction the model no longer sees the hooks' contexts from before it."""
        parent, sources, self.hook_sources = compaction.id, self.hook_sources, []
        for source in sources:
            parent = self.builder.add_instructions(
                line, f"{compaction.id}-{source}", "", source, compaction.timestamp, parent
            ).id
        return parent

    def names_this_session(self, raw: dict[str, Any]) -> bool:
        """A title Claude Code gave a conversation ending at `leafUuid`: this session's when
        that record is in this file (a resumed session's file also carries the titles of
        the sessions before it, whose records are elsewhere)."""
        title, leaf = raw.get("summary"), raw.get("leafUuid")
        return isinstance(title, str) and bool(title.strip()) and isinstance(leaf, str) and self.builder.known(leaf)

    def title(self, line: int, title: str, leaf: str) -> None:
        """The session's title, as a `session_info` entry at the conversation's end (it
        names the session; later records go on below it)."""
        entry = SessionInfoEntry(
            id=PLACEHOLDER_ID, parentId=None, name=title, timestamp=self.last_timestamp or "1970-01-01T00:00:00Z"
        )
        self.builder.add_node(line, f"{leaf}-title", self.builder.leaf_id, entry, enters_context=False)
        self.importer.name = title

    def stand_in(self, raw: dict[str, Any]) -> str | None:
        """What a record that is not imported stands for: its parent, where that is known."""
        parent = raw.get("parentUuid")
        return self.builder.resolve(parent) if parent is not None and self.builder.known(parent) else self.builder.leaf_id

    # --- assistant ----------------------------------------------------------------------

    def assistant(self, line: int, raw: dict[str, Any]) -> None:
        message = raw["message"]
        blocks, others = _answer_blocks(message)  # read (and checked) before the answer changes
        message_id = message.get("id")
        if self.answer is None or message_id is None or message_id != self.answer.message_id:
            self.flush_answer()
            self.flush_boundary(None)
            parent = self.importer.attach_point(line, raw)
            self.answer = _Answer(message_id, line, raw["uuid"], raw.get("timestamp"), parent)
        answer = self.answer
        answer.uuids.append(raw["uuid"])
        answer.last = message
        answer.error = answer.error or bool(raw.get("isApiErrorMessage")) or message.get("model") == SYNTHETIC_MODEL
        answer.blocks += blocks
        self.tool_names.update((block["id"], block["name"]) for block in blocks if block["type"] == "toolCall")
        for kind in others:
            self.problems.append(Problem(line, "skipped", f"assistant content block of type {kind!r}"))

    def flush_answer(self) -> None:
        answer, self.answer = self.answer, None
        if answer is None:
            return
        message = answer.last
        has_calls = any(block["type"] == "toolCall" for block in answer.blocks)
        data: dict[str, Any] = {
            "role": "assistant",
            "content": answer.blocks,
            "stopReason": STOP_REASONS.get(str(message.get("stop_reason")), "toolUse" if has_calls else "stop"),
        }
        if answer.error:
            data["stopReason"] = "error"
            data["errorMessage"] = text_of(answer.blocks) or "API error"
        elif isinstance(message.get("usage"), dict):
            try:
                data["usage"] = _usage(message["usage"])
            except ValueError as error:  # a count of another type: the answer stays, without it
                self.problems.append(Problem(answer.line, "dropped", f"assistant message's usage: {error}"))
            else:
                self.last_context_tokens = sum(data["usage"].values())
        if message.get("model") not in (None, SYNTHETIC_MODEL):
            data["model"] = message["model"]
        converted = message_or_problem(data, answer.line, self.problems, "assistant message")
        entry = None
        if converted is not None:
            entry = self.builder.add_message(answer.line, answer.source_id, answer.parent, converted, answer.timestamp)
        for uuid in answer.uuids:  # the answer's other records stand for it
            self.builder.skip(uuid, entry.id if entry is not None else answer.parent)

    # --- user ---------------------------------------------------------------------------

    def user(self, line: int, raw: dict[str, Any]) -> None:
        content = raw["message"].get("content")
        if raw.get("isCompactSummary"):
            if self.boundary is None:  # an older version's summary: it is its own boundary
                self.boundary = (line, raw, self.importer.attach_point(line, raw))
            compaction = self.flush_boundary(text_of(content))
            self.builder.skip(raw["uuid"], compaction)
            return
        parts = self.user_parts(raw)  # every message built (and checked) before the first is added
        self.flush_boundary(None)
        timestamp = raw.get("timestamp")
        parent = self.importer.attach_point(line, raw)
        for kind, source_id, part in parts:
            if kind == "toolResult":
                added = self.builder.add_message(line, source_id, parent, part, timestamp)
                parent = added.id if added is not None else parent
            elif kind == "instructions":
                parent = self.builder.add_instructions(line, source_id, part, "CLAUDE.md", timestamp, parent).id
            elif kind == "user":
                parent = self.keep_notes(parent)
                parent = self.builder.add_message(line, source_id, parent, part, timestamp).id  # type: ignore[union-attr]
            else:
                self.problems.append(Problem(line, "skipped", f"user content block of type {part!r}"))
        self.builder.skip(raw["uuid"], parent)  # what hangs off this record hangs off its last entry

    def user_parts(self, raw: dict[str, Any]) -> list[tuple[str, str, Any]]:
        """What a user record adds, in order, as (kind, source id, what): its tool results and
        CLAUDE.md instructions, then the user's own message; a block of another type as
        ("skipped", "", its type). ValidationError where a message cannot be built."""
        uuid, content = raw["uuid"], raw["message"].get("content")
        parts: list[tuple[str, str, Any]] = []
        rest: list[dict[str, Any]] = []
        for index, block in enumerate(_blocks(content)):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_result":
                parts.append(("toolResult", f"{uuid}-{index}", self.tool_result(block)))
            elif kind == "text" and _is_claude_md(block.get("text")):
                parts.append(("instructions", f"{uuid}-{index}", block["text"]))
            elif kind == "text":
                rest.append({"type": "text", "text": block.get("text") or ""})
            elif kind == "image":
                rest.append(_image(block))
            else:
                parts.append(("skipped", "", kind))
        if rest:  # a plain string stays one
            text = rest[0]["text"] if len(rest) == 1 and isinstance(content, str) else rest
            parts.append(("user", uuid, to_message({"role": "user", "content": text})))
        return parts

    def keep_notes(self, parent: str | None) -> str | None:
        """The undelivered notifications, as the user messages Claude Code would have sent,
        before the conversation moves on from `parent`."""
        notes, self.notes = self.notes, []
        for line, text, timestamp in notes:
            parent = self.add_user(line, f"queued-{line}", text, timestamp, parent)
        return parent

    def add_user(self, line: int, source_id: str, content: Any, timestamp: str | None, parent: str | None) -> str | None:
        message = message_or_problem({"role": "user", "content": content}, line, self.problems, "user message")
        if message is None:
            return parent
        return self.builder.add_message(line, source_id, parent, message, timestamp).id  # type: ignore[union-attr]

    def tool_result(self, block: dict[str, Any]) -> Message:
        call_id = str(block.get("tool_use_id"))
        content = block.get("content")
        if isinstance(content, list):
            content = [
                _image(item) if isinstance(item, dict) and item.get("type") == "image" else {"type": "text", "text": text_of(item)}
                for item in content
            ]
        data = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": self.tool_names.get(call_id, ""),
            "content": content if content is not None else "",
            "isError": bool(block.get("is_error", False)),
        }
        return to_message(data)

    # --- compaction ---------------------------------------------------------------------

    def flush_boundary(self, summary: str | None) -> str | None:
        """Write the pending compaction, with the summary record that followed its boundary;
        returns the compaction's id."""
        if self.boundary is None:
            return self.builder.leaf_id
        (line, raw, parent), self.boundary = self.boundary, None
        metadata = raw.get("compactMetadata") or {}
        if summary is None:
            summary = str(raw.get("content") or "Conversation compacted")
            self.problems.append(Problem(line, "repaired", "compaction without a summary record; its boundary text stands in"))
        entry = CompactionEntry(
            id=PLACEHOLDER_ID,
            parentId=None,
            summary=summary,
            firstKeptEntryId=self.first_kept(metadata),
            tokensBefore=int(metadata.get("preTokens") or self.last_context_tokens),
            tokensAfter=_count(metadata.get("postTokens")),
            reason=COMPACTION_REASONS.get(str(metadata.get("trigger")), "threshold"),
            summarizer=SummarizerInfo(provider=SOURCE),
            **({"timestamp": raw["timestamp"]} if isinstance(raw.get("timestamp"), str) else {}),
        )
        compaction = self.builder.add_node(line, raw["uuid"], parent, entry, enters_context=True)
        return self.withdraw_hook_contexts(line, compaction)

    def first_kept(self, metadata: dict[str, Any]) -> str | None:
        """The first of the messages Claude Code kept after its summary (newer versions keep
        the latest ones: `preservedSegment`, from its head to the boundary's parent)."""
        segment = metadata.get("preservedSegment")
        head = segment.get("headUuid") if isinstance(segment, dict) else None
        return self.builder.resolve(head) if isinstance(head, str) and self.builder.known(head) else None


def _count(value: Any) -> int:
    """A token count Claude Code wrote, or 0 where it wrote none."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _is_claude_md(text: Any) -> bool:
    """The CLAUDE.md context Claude Code puts into the first user message as a reminder."""
    return isinstance(text, str) and text.lstrip().startswith("<system-reminder>") and "# claudeMd" in text


def _usage(usage: dict[str, Any]) -> dict[str, int]:
    return {
        "input": number_field(usage, "input_tokens", "message.usage"),
        "output": number_field(usage, "output_tokens", "message.usage"),
        "cacheRead": number_field(usage, "cache_read_input_tokens", "message.usage"),
        "cacheWrite": number_field(usage, "cache_creation_input_tokens", "message.usage"),
    }


def _image(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source") or {}
    if not isinstance(source, dict):
        raise ValueError("an image's source is not an object")
    return {"type": "image", "data": source.get("data", ""), "mimeType": source.get("media_type", "")}
