"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`).

Each line is `{timestamp, type, payload}`: `session_meta` first, then `turn_context`,
`response_item` (the conversation, in Responses API item shapes), `event_msg` (UI events,
among them `token_count` with the usage of the last model response) and `compacted`.
Consecutive assistant items (reasoning, output text, function calls) of one response become
one assistant message; the next `token_count` gives it its usage. Rollouts written before
the `payload` envelope (a bare meta line, then bare items) are read too.

Codex sends its instructions as messages: AGENTS.md and `<environment_context>` as user
messages, its own rules as developer messages. They become `instructions` entries, never
user messages. A `compacted` record carries the messages Codex kept (`replacement_history`,
the user's requests) and, from newer versions on, an encrypted summary only the provider can
read; the kept messages are imported after the compaction. Newer versions that summarize
locally put the summary (the record's `message`) among the kept messages, as a user
message: it is the compaction's summary, not imported twice.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from contextd.importers.common import (
    PLACEHOLDER_ID,
    ImportedSession,
    Problem,
    StreamingImporter,
    import_lines,
    json_value,
    check_strings,
    number_field,
    message_or_problem,
    string_field,
    text_of,
    to_message,
)
from contextd.model import (
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    PreserveData,
    SummarizerInfo,
    Usage,
    utc_now,
)

SOURCE = "codex"

CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
NOT_CONVERSATION_ITEMS = {
    "web_search_call": "a search the provider ran itself; its results are not in the rollout",
    "ghost_snapshot": "an undo snapshot",
    "compaction": "the provider's encrypted compaction state",
    "other": "an item Codex itself could not classify",
}
NOT_CONVERSATION_LINES = {
    "state": "state record",
    "world_state": "world_state: the environment Codex describes to the model, also sent as its messages",
    "token_usage_record": "token_usage_record: a response's usage, also written as a token_count event",
}
"""Line types with no place in a session, and why (newer versions write the last two)."""
TEXT_PARTS = ("input_text", "text", "output_text")
AGENTS_MD_PREFIXES = ("# AGENTS.md instructions for ", "<user_instructions>")
OPENING_TAG = re.compile(r"<([a-z_][a-z_ ]*)>")
EXIT_CODE = re.compile(r"\s*Exit code: (-?\d+)")
PROCESS_EXITED = re.compile(r"^Process exited with code (-?\d+)\s*$", re.MULTILINE)
"""Unified exec's header (`Chunk ID / Wall time / Process exited with code N / Output:`)."""
FAILED_PATCH = "apply_patch verification failed"
TURN_ENDS = ("task_complete", "turn_aborted")
META_KEYS = ("id", "cwd", "timestamp")
"""What the session takes from the rollout's meta line (its instructions apart)."""
ENCRYPTED_SUMMARY = (
    "Codex compacted the conversation here. Its summary was written by the provider and is "
    "stored encrypted, so it cannot be shown; the requests Codex kept follow."
)


def instructions_source(role: str | None, text: str) -> str | None:
    """What kind of instructions a message text is, or None for conversation.

    Codex injects AGENTS.md and the environment as user messages with fixed openings; every
    developer or system text is instructions, named by its opening tag where it has one."""
    start = text.lstrip()
    if start.startswith(AGENTS_MD_PREFIXES):
        return "AGENTS.md"
    if start.startswith("<environment_context>"):
        return "environment_context"
    if role in ("developer", "system"):
        tag = OPENING_TAG.match(start)
        return tag.group(1) if tag else role
    return None


def parse(lines: Iterable[str]) -> ImportedSession:
    return import_lines(CodexImporter(), lines)


class CodexImporter(StreamingImporter):
    """Rollout lines in order. An answer is held back until its `token_count` gives it its
    usage (or the next answer starts), and a model change until the first usage tells the
    window Codex gave that model."""

    source = SOURCE

    def __init__(self, *, reports_every_line: bool = True) -> None:
        super().__init__(reports_every_line=reports_every_line)
        self._converter = _Converter(self)

    @property
    def workspace(self) -> str | None:
        cwd = self._converter.meta.get("cwd")
        return cwd if isinstance(cwd, str) else None

    def pending_usage(self) -> Usage | None:
        # A count written before its response's items (older rollouts) waits for them.
        return self._converter.next_usage

    def own_state(self) -> dict[str, Any]:
        converter = self._converter
        return {
            "meta": converter.meta,
            "model": converter.model,
            "modelEntry": converter.model_entry.id if converter.model_entry is not None else None,
            "answer": converter.answer,
            "answerStart": converter.answer_start,
            "answered": converter.answered,
            "lastUsage": _dumped(converter.last_usage),
            "nextUsage": _dumped(converter.next_usage),
            "toolNames": converter.tool_names,
            "lastContextTokens": converter.last_context_tokens,
            "instructionsInForce": converter.instructions_in_force,
            "metaInstructions": converter.meta_instructions,
            "exitCodes": converter.exit_codes,
        }

    def restore_own_state(self, state: dict[str, Any]) -> None:
        converter, meta_instructions = self._converter, state["metaInstructions"]
        converter.meta = dict(state["meta"])
        converter.model = state["model"]
        model_entry = self.builder.entry(state["modelEntry"])
        converter.model_entry = model_entry if isinstance(model_entry, ModelChangeEntry) else None
        converter.answer = [dict(block) for block in state["answer"]]
        converter.answer_start = (int(state["answerStart"][0]), state["answerStart"][1])
        converter.answered = bool(state["answered"])
        converter.last_usage = _loaded(state["lastUsage"])
        converter.next_usage = _loaded(state["nextUsage"])
        converter.tool_names = {str(call): str(name) for call, name in state["toolNames"].items()}
        converter.last_context_tokens = int(state["lastContextTokens"])
        converter.instructions_in_force = {str(source): str(text) for source, text in state["instructionsInForce"].items()}
        converter.exit_codes = {str(call): int(code) for call, code in state["exitCodes"].items()}
        converter.meta_instructions = None if meta_instructions is None else (
            int(meta_instructions[0]), str(meta_instructions[1]), meta_instructions[2]
        )

    def record(self, number: int, raw: dict[str, Any]) -> None:
        kind, payload = _envelope(raw)
        self._converter.line(number, kind, payload, raw.get("timestamp"))

    def finish(self) -> ImportedSession:
        converter = self._converter
        converter.flush_answer()
        return self.imported(converter.meta, "id", None, self.builder.finish(max(self.last_line, 1)))


def _readable(block: dict[str, Any]) -> bool:
    """Whether an answer's block holds anything but the mark of reasoning without text."""
    return block["type"] != "thinking" or bool(block["thinking"])


def _dumped(usage: Usage | None) -> dict[str, Any] | None:
    return usage.model_dump(mode="json") if usage is not None else None


def _loaded(usage: dict[str, Any] | None) -> Usage | None:
    return Usage.model_validate(usage) if usage is not None else None


def _envelope(raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(line type, payload) for both the enveloped and the early bare format."""
    if isinstance(raw.get("payload"), dict) and isinstance(raw.get("type"), str):
        return raw["type"], raw["payload"]
    if "record_type" in raw:
        return "state", raw
    if "type" in raw:
        return "response_item", raw
    if "id" in raw and "timestamp" in raw:
        return "session_meta", raw
    return "unknown", raw


class _Converter:
    def __init__(self, importer: CodexImporter) -> None:
        self.importer = importer
        self.builder = importer.builder
        self.problems = importer.problems
        self.meta: dict[str, Any] = {}
        self.model: str | None = None
        self.model_entry: ModelChangeEntry | None = None
        self.answer: list[dict[str, Any]] = []
        self.answer_start: tuple[int, str | None] = (0, None)
        self.answered: bool = False
        self.last_usage: Usage | None = None
        self.next_usage: Usage | None = None
        self.tool_names: dict[str, str] = {}
        self.last_context_tokens = 0
        self.instructions_in_force: dict[str, str] = {}
        self.meta_instructions: tuple[int, str, str | None] | None = None
        self.exit_codes: dict[str, int] = {}
        """Exit codes events reported for calls whose output has not come yet."""

    def line(self, line: int, kind: str, payload: dict[str, Any], timestamp: Any) -> None:
        timestamp = timestamp if isinstance(timestamp, str) else None
        if kind == "session_meta":
            meta = payload.get("meta", payload) if isinstance(payload.get("meta"), dict) else payload
            check_strings(meta, META_KEYS)
            self.meta = {key: meta[key] for key in META_KEYS if key in meta}
            if isinstance(meta.get("instructions"), str) and meta["instructions"].strip():
                self.meta_instructions = (line, meta["instructions"], timestamp)
        elif kind == "turn_context":
            self.turn_context(line, payload, timestamp)
        elif kind == "response_item":
            self.item(line, payload, timestamp)
        elif kind == "event_msg":
            self.event(line, payload)
        elif kind == "compacted":
            self.compacted(line, payload, timestamp)
        elif kind in NOT_CONVERSATION_LINES:
            self.problems.append(Problem(line, "skipped", f"{NOT_CONVERSATION_LINES[kind]}, not part of the conversation"))
        else:
            self.problems.append(Problem(line, "unknown", f"unknown line type {kind!r}"))

    def turn_context(self, line: int, payload: dict[str, Any], timestamp: str | None) -> None:
        """A turn's settings: a new model becomes a `model_change` entry; the rest (working
        directory, approval and sandbox policies, reasoning effort) has no place in a
        session, so every line is reported."""
        model = payload.get("model")
        if not (isinstance(model, str) and model and model != self.model):
            if self.importer.reports_every_line:  # one line in seven: a follower spares it
                settings = _settings(payload)
                self.problems.append(Problem(line, "skipped", f"turn_context: a turn's settings with the model unchanged ({settings})"))
            return
        settings = _settings(payload)
        self.problems.append(
            Problem(line, "dropped", f"turn_context: its model is kept as a model_change; its other settings are not ({settings})")
        )
        self.flush_answer()
        self.model = model
        entry = ModelChangeEntry(id=PLACEHOLDER_ID, parentId=None, model=model, timestamp=timestamp or utc_now())
        added = self.builder.add_node(line, f"L{line}", self.builder.leaf_id, entry, enters_context=False)
        assert isinstance(added, ModelChangeEntry)
        self.model_entry = added
        self.builder.hold("window", added.id)

    # --- response items -----------------------------------------------------------------

    def item(self, line: int, item: dict[str, Any], timestamp: str | None) -> None:
        kind = item.get("type")
        if kind == "message":
            self.message(line, item, timestamp)
        elif kind == "reasoning":
            # Reasoning with no readable text (only encrypted content) is still reasoning the
            # provider counts until the turn ends: an empty thinking block keeps that known.
            text = text_of(item.get("summary") or []) or text_of(item.get("content") or [])
            self.add_to_answer(line, {"type": "thinking", "thinking": text}, timestamp)
        elif kind in CALL_TYPES:
            self.call(line, kind, item, timestamp)
        elif kind in OUTPUT_TYPES:
            self.output(line, item, timestamp)
        elif kind in NOT_CONVERSATION_ITEMS:
            self.problems.append(Problem(line, "skipped", f"{kind}: {NOT_CONVERSATION_ITEMS[kind]}"))
        else:
            self.problems.append(Problem(line, "unknown", f"unknown response item type {kind!r}"))

    def message(self, line: int, item: dict[str, Any], timestamp: str | None) -> None:
        self.add_message_parts(line, _message_parts(line, item), timestamp)

    def add_message_parts(self, line: int, parts: list[tuple[str, Any]], timestamp: str | None) -> None:
        """What a message item adds (`_message_parts`), in order."""
        for kind, part in parts:
            if kind == "text":
                self.add_to_answer(line, {"type": "text", "text": part}, timestamp)
            elif kind == "instructions":
                text, source = part
                self.instructions(line, text, source, timestamp)
            elif kind == "user":
                self.flush_answer()
                self.settle_meta_instructions()
                self.builder.add_message(line, f"L{line}", self.builder.leaf_id, part, timestamp)
            else:
                self.problems.append(part)

    def instructions(self, line: int, text: str, source: str, timestamp: str | None) -> None:
        """Instructions of `source`, unless the same text is already in force.

        A later environment context tells what changed, not the whole environment: it is
        added beside the first one rather than replacing it, as the model read them."""
        if source == "AGENTS.md":
            self.meta_instructions = None  # the rollout's own copy of what the meta recorded
        if text in self.instructions_in_force.values():
            self.problems.append(Problem(line, "skipped", f"{source} instructions repeated unchanged"))
            return
        if source == "environment_context" and source in self.instructions_in_force:
            source = f"{source}-{sum(name.startswith(source) for name in self.instructions_in_force) + 1}"
        self.flush_answer()
        self.instructions_in_force[source] = text
        self.builder.add_instructions(line, f"L{line}-{source}", text, source, timestamp, self.builder.leaf_id)

    def settle_meta_instructions(self) -> None:
        """Instructions the meta recorded but no message carried: in force from the start."""
        if self.meta_instructions is not None:
            (line, text, timestamp), self.meta_instructions = self.meta_instructions, None
            self.instructions_in_force["AGENTS.md"] = text
            self.builder.add_instructions(line, "meta-instructions", text, "AGENTS.md", timestamp, self.builder.leaf_id)

    def call(self, line: int, kind: str, item: dict[str, Any], timestamp: str | None) -> None:
        call_id = _name(item, "call_id") if item.get("call_id") else _name(item, "id")
        arguments: dict[str, Any]
        if kind == "local_shell_call":
            name, arguments = "local_shell", item.get("action") or {}
            if not isinstance(arguments, dict):
                raise ValueError("action is not an object")
        elif kind == "custom_tool_call":
            name, arguments = _name(item, "name"), {"input": item.get("input", "")}
        else:
            name, arguments = _name(item, "name"), _arguments(line, item.get("arguments"), self.problems)
        self.tool_names[call_id] = name
        self.add_to_answer(line, {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}, timestamp)

    def output(self, line: int, item: dict[str, Any], timestamp: str | None) -> None:
        call_id = str(item.get("call_id"))
        text, is_error = _output(item.get("output"))
        data = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": self.tool_names.get(call_id, ""),
            "content": text,
            "isError": is_error or self.exit_codes.get(call_id, 0) != 0,
        }
        message = to_message(data)  # built before anything changes: a refused line leaves no trace
        self.flush_answer()
        self.exit_codes.pop(call_id, None)
        self.builder.add_message(line, f"L{line}", self.builder.leaf_id, message, timestamp)

    # --- assistant answers --------------------------------------------------------------

    def add_to_answer(self, line: int, block: dict[str, Any], timestamp: str | None) -> None:
        if self.answered:
            self.flush_answer()
        self.settle_meta_instructions()
        if not any(map(_readable, self.answer)):
            # An answer is known by its first readable item's line: its id stays what it was
            # before reasoning without text was kept.
            self.answer_start = (line, timestamp)
        self.answer.append(block)

    def flush_answer(self) -> None:
        blocks, self.answer = self.answer, []
        self.answered = False
        if not any(map(_readable, blocks)):
            return  # nothing but reasoning without text (an interrupted response)
        line, timestamp = self.answer_start
        has_calls = any(block["type"] == "toolCall" for block in blocks)
        data: dict[str, Any] = {"role": "assistant", "content": blocks, "stopReason": "toolUse" if has_calls else "stop"}
        if self.model:
            data["model"] = self.model
        message = message_or_problem(data, line, self.problems, "assistant message")
        if message is None:
            return
        entry = self.builder.add_message(line, f"L{line}", self.builder.leaf_id, message, timestamp)
        if entry is None:
            return
        usage, self.next_usage = self.next_usage, None
        if usage is not None:
            self.give_usage(entry, usage)
            self.answered = False  # its items came after its count: more of them may follow
        else:
            self.builder.hold("usage", entry.id)  # its token_count is still to come

    # --- events -------------------------------------------------------------------------

    def event(self, line: int, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if kind != "token_count":
            self.note_exit_code(payload)
            if kind in TURN_ENDS:
                self.flush_answer()  # the turn is over: its last answer is complete
            if self.importer.reports_every_line:  # nearly half the lines: a follower spares it
                self.problems.append(Problem(line, "skipped", f"event_msg {kind}: a UI event; the conversation is in response_item lines"))
            return
        info = payload.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            self.problems.append(Problem(line, "skipped", "token_count with rate limits only, no usage"))
            return
        figures, last = _usage_figures(info["last_token_usage"]), self.last_usage
        if last is not None and figures == (last.input, last.output, last.cacheRead, last.total):
            # Codex repeats the last count when a new request starts: no new response. (Told
            # by its figures: half the counts are repeats, and a Usage would be built for nothing.)
            self.problems.append(Problem(line, "skipped", "token_count repeating the one before"))
            return
        usage = Usage(input=figures[0], output=figures[1], cacheRead=figures[2], total=figures[3])
        if usage.input + usage.cacheRead == 0:
            # Codex writes these around a compaction: no model call stands behind them.
            self.problems.append(Problem(line, "skipped", "token_count with no prompt tokens, a placeholder"))
            return
        self.last_usage = usage
        window = info.get("model_context_window")
        if self.model_entry is not None:
            if isinstance(window, int) and window > 0:
                self.model_entry.contextWindow = window  # the window Codex used for this model
            self.model_entry = None  # the first usage after a model change says it, or nothing will
            self.builder.release("window")
        self.last_context_tokens = usage.context_tokens
        # Codex writes a response's count after its items (then the answer gathered, or the
        # last one if a tool's output already closed it, has no usage yet) or, in some
        # versions, before them (then the last answer has its usage: this one is the next's).
        self.flush_answer()
        answer = self.builder.last_assistant
        if answer is not None and answer.message.usage is None:  # type: ignore[union-attr]
            self.give_usage(answer, usage)
        else:
            self.next_usage = usage

    def note_exit_code(self, payload: dict[str, Any]) -> None:
        """A command's exit code from an event, for its output (which may not say it)."""
        # Older versions write `exec_command_end` {call_id, exit_code}; newer ones an
        # `item_completed` event of a `CommandExecution` item {id, exit_code}.
        kind = payload.get("type")
        reported = payload.get("item") if kind == "item_completed" else payload if kind == "exec_command_end" else None
        if not isinstance(reported, dict) or not isinstance(reported.get("exit_code"), int):
            return
        call_id = reported.get("call_id") or reported.get("id")
        if isinstance(call_id, str):
            self.exit_codes[call_id] = reported["exit_code"]

    def give_usage(self, answer: MessageEntry, usage: Usage) -> None:
        answer.message.usage = usage  # type: ignore[union-attr]
        self.builder.note_usage(answer)
        self.builder.release("usage")
        self.answered = True

    def compacted(self, line: int, payload: dict[str, Any], timestamp: str | None) -> None:
        """A compaction, then the messages Codex kept, as the part the compaction keeps (each
        read before anything is added: a refused line leaves no trace)."""
        history = payload.get("replacement_history")
        history = [item for item in history if isinstance(item, dict)] if isinstance(history, list) else []
        compaction_items = [item for item in history if item.get("type") == "compaction"]
        encrypted = bool(compaction_items)
        summary = str(payload.get("message") or "") or (ENCRYPTED_SUMMARY if encrypted else "")
        # OpenAI's own state of the compacted conversation: replayed in the openai-responses format.
        native = compaction_items[-1] if encrypted and compaction_items[-1].get("encrypted_content") else None
        entry = CompactionEntry(
            id=PLACEHOLDER_ID,
            parentId=None,
            summary=summary,
            firstKeptEntryId=None,
            tokensBefore=self.last_context_tokens,
            tokensAfter=0,
            reason="threshold",
            summarizer=SummarizerInfo(provider=SOURCE),
            timestamp=timestamp or utc_now(),
            preserveData=PreserveData.of_openai_output([native], self.model) if native else None,
        )
        kept: list[tuple[str, Any]] = []
        for item in history:
            if item.get("type") != "message":
                continue
            if summary and _text(item).strip() == summary.strip():
                kept.append(("problem", Problem(line, "skipped", "replacement_history's copy of the summary: it is the compaction's")))
            else:
                kept += _message_parts(line, item)
        self.flush_answer()
        self.builder.add_node(line, f"L{line}", self.builder.leaf_id, entry, enters_context=True)
        if encrypted:
            self.problems.append(
                Problem(line, "repaired", "Codex's own summary is encrypted; a note stands in for it (the item is kept for the openai-responses format)")
            )
        left_out = Counter(str(item.get("type")) for item in history if item.get("type") not in ("message", "compaction"))
        for kind, count in sorted(left_out.items()):
            reason = NOT_CONVERSATION_ITEMS.get(kind, "not a message")
            self.problems.append(Problem(line, "skipped", f"{count} replacement_history item(s) of type {kind!r}: {reason}"))
        self.add_message_parts(line, kept, timestamp)
        self.flush_answer()


def _name(item: dict[str, Any], key: str) -> str:
    """A call's id or tool name; ValueError where it is not a name."""
    value = item.get(key)
    if not (isinstance(value, str) and value):
        raise ValueError(f"{key} is not a name")
    return value


def _settings(turn_context: dict[str, Any]) -> str:
    """A turn's settings but its model, as its report names them."""
    return ", ".join(sorted(key for key in turn_context if key != "model")) or "none"


def _usage_figures(usage: dict[str, Any]) -> tuple[int, int, int, int | None]:
    """A count's input, output, cached input and total, as a `Usage` holds them: OpenAI
    counts cached input inside input_tokens; contextd keeps them apart."""
    cached = number_field(usage, "cached_input_tokens", USAGE_FIELD)
    return (
        max(number_field(usage, "input_tokens", USAGE_FIELD) - cached, 0),
        number_field(usage, "output_tokens", USAGE_FIELD),
        cached,
        number_field(usage, "total_tokens", USAGE_FIELD) if usage.get("total_tokens") else None,
    )


USAGE_FIELD = "token_count.info.last_token_usage"


def _text(item: dict[str, Any]) -> str:
    """The text parts of a message item, joined."""
    parts = item.get("content")
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") in TEXT_PARTS) if isinstance(parts, list) else ""


def _message_parts(line: int, item: dict[str, Any]) -> list[tuple[str, Any]]:
    """What a message item adds, in order, read and checked before any of it is added: an
    answer's texts ("text", its text), instructions ("instructions", (text, source)), the
    user's message ("user", a Message), what is not imported ("problem", the Problem).
    ValueError where a part has a type Codex never writes."""
    role, content = item.get("role"), item.get("content") or []
    if not isinstance(content, list):
        raise ValueError("content is not a list")
    parts = [part for part in content if isinstance(part, dict)]
    if role == "assistant":
        return [("text", string_field(part, "text", "content") or "") for part in parts if part.get("type") in TEXT_PARTS]
    if role not in ("user", "developer", "system"):
        return [("problem", Problem(line, "unknown", f"message with role {role!r}"))]
    read: list[tuple[str, Any]] = []
    conversation: list[dict[str, Any]] = []
    for part in parts:
        text = part.get("text") if part.get("type") in TEXT_PARTS else None
        if isinstance(text, str) and (source := instructions_source(role, text)) is not None:
            read.append(("instructions", (text, source)))
        elif role in ("developer", "system"):
            read.append(("problem", Problem(line, "skipped", f"{role} content of type {part.get('type')!r}")))
        else:
            conversation.append(part)
    if conversation:
        blocks = [block for block in map(_user_block, conversation) if block is not None]
        read.append(("user", to_message({"role": "user", "content": blocks})))
    return read


def _user_block(part: dict[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind in ("input_text", "text", "output_text"):
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image":
        url = str(part.get("image_url", ""))
        header, _, data = url.partition(",")
        mime = header.removeprefix("data:").removesuffix(";base64") if data else "image/url"
        return {"type": "image", "data": data or url, "mimeType": mime}
    return None


def _arguments(line: int, raw: Any, problems: list[Problem]) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json_value(raw) if isinstance(raw, str) else raw
    except ValueError:
        problems.append(Problem(line, "repaired", "function call arguments are not JSON; kept as text under 'input'"))
        return {"input": raw}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def _output(output: Any) -> tuple[str | list[dict[str, Any]], bool]:
    """A tool output's content and whether it failed.

    Codex writes a string (often JSON `{"output", "metadata": {"exit_code"}}` for shell),
    a list of content items, or in some versions `{content, success}`.
    """
    if isinstance(output, dict):
        return text_of(output.get("content", "")), output.get("success") is False
    if isinstance(output, list):
        blocks = [_user_block(part) for part in output if isinstance(part, dict)]
        return [block for block in blocks if block is not None], False
    text = str(output if output is not None else "")
    if not text.lstrip().startswith("{"):
        # Only an object says more (its exit code): other JSON values cannot read as a
        # failure, and most outputs are plain text, which a parse would refuse at a cost.
        return text, _failed_text(text)
    try:
        decoded = json_value(text)  # pydantic's reader first, as for the lines
    except ValueError:
        return text, _failed_text(text)
    if isinstance(decoded, dict) and isinstance(decoded.get("metadata"), dict):
        exit_code = decoded["metadata"].get("exit_code")
        return text, exit_code not in (None, 0) or _failed_text(str(decoded.get("output", "")))
    return text, False


def _failed_text(text: str) -> bool:
    """Plain-text outputs: shell commands start `Exit code: N` (unified exec says `Process
    exited with code N` in its header), a rejected patch says so."""
    header, framed, _ = text.partition("\nOutput:")
    exit_code = EXIT_CODE.match(text) or (PROCESS_EXITED.search(header) if framed else None)
    if exit_code:
        return int(exit_code.group(1)) != 0
    return text.lstrip().startswith(FAILED_PATCH)
