"""Claude Code transcripts (`~/.claude/projects/<encoded cwd>/<session id>.jsonl`).

Each line is a record; `user`, `assistant` and `system` records chain through `uuid` and
`parentUuid`. The conversation imported is the branch that ends at the last user or
assistant record, followed back through `parentUuid` and, across a compaction, through the
`compact_boundary` record's `logicalParentUuid`. Where the chain breaks (a parent on a lost
or corrupt line, or an older compaction summary written with no parent and no boundary) it
continues from the conversation record before it in the file. One API answer is written as
several assistant records (one per content block) sharing `message.id`; they become one
assistant message carrying the usage of the last of them.

Claude Code's compaction summary is free text ("This session is being continued from a
previous conversation…"); it is imported whole as the compaction's summary.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from contextd.importers.common import (
    PLACEHOLDER_ID,
    EntryBuilder,
    ImportedSession,
    Problem,
    json_lines,
    message_or_problem,
    text_of,
)
from contextd.model import (
    CompactionEntry,
    CompactionReason,
    SummarizerInfo,
)

SOURCE = "claude-code"
SYNTHETIC_MODEL = "<synthetic>"

NOT_CONVERSATION = {
    "summary": "a title Claude Code gives a branch",
    "file-history-snapshot": "file checkpoints for undo",
    "queue-operation": "the prompt queue",
    "progress": "tool progress display",
    "custom-title": "a session title",
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
    blocks: list[dict[str, Any]] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)
    error: bool = False


def parse(lines: Iterable[str]) -> ImportedSession:
    problems: list[Problem] = []
    records = list(json_lines(lines, problems))
    path = _final_branch(records, problems)
    on_path = {id(raw) for _, raw in path}
    for line, raw in records:
        if id(raw) not in on_path:
            problems.append(_why_not_imported(line, raw))
    if not path:
        return ImportedSession(SOURCE, None, None, None, None, [], None, problems)
    builder = EntryBuilder(problems)
    first = path[0][1]
    model = next(
        (
            raw["message"].get("model")
            for _, raw in path
            if raw.get("type") == "assistant" and raw["message"].get("model") not in (None, SYNTHETIC_MODEL)
        ),
        None,
    )
    builder.add_model_root(path[0][0], model)
    _Converter(builder, problems).run(path)
    entries, leaf_id = builder.finish(path[-1][0])
    return ImportedSession(
        source=SOURCE,
        source_id=first.get("sessionId"),
        workspace=first.get("cwd"),
        created_at=first.get("timestamp"),
        name=None,
        entries=entries,
        leaf_id=leaf_id,
        problems=problems,
    )


def _is_conversation(raw: dict[str, Any]) -> bool:
    return (
        raw.get("type") in ("user", "assistant")
        and isinstance(raw.get("uuid"), str)
        and isinstance(raw.get("message"), dict)
        and not raw.get("isSidechain")
    )


def _is_chain_record(raw: dict[str, Any]) -> bool:
    """A record the conversation chain may pass through."""
    return _is_conversation(raw) or (raw.get("type") == "system" and isinstance(raw.get("uuid"), str))


def _is_old_summary(raw: dict[str, Any]) -> bool:
    """A compaction summary of Claude Code versions that wrote no compact_boundary before it."""
    return bool(raw.get("isCompactSummary")) and raw.get("parentUuid") is None


def _final_branch(records: list[tuple[int, dict[str, Any]]], problems: list[Problem]) -> list[tuple[int, dict[str, Any]]]:
    """The records from the root to the last conversation record, compactions included."""
    by_uuid = {raw["uuid"]: (line, raw) for line, raw in records if isinstance(raw.get("uuid"), str)}
    chain = [(line, raw) for line, raw in records if _is_chain_record(raw)]
    record_before = {id(raw): chain[index - 1] for index, (_, raw) in enumerate(chain) if index > 0}
    leaf = next(((line, raw) for line, raw in reversed(records) if _is_conversation(raw)), None)
    path: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()
    current = leaf
    while current is not None and current[1]["uuid"] not in seen:
        line, raw = current
        seen.add(raw["uuid"])
        path.append(current)
        parent = raw.get("parentUuid")
        if parent is None and raw.get("subtype") == "compact_boundary":
            parent = raw.get("logicalParentUuid")
        if parent is None and _is_old_summary(raw):
            current = record_before.get(id(raw))
            continue
        if parent is None:
            break
        current = by_uuid.get(parent)
        if current is None:
            current = record_before.get(id(raw))
            if current is None:
                problems.append(Problem(line, "repaired", f"parent {parent!r} is not in the file; the history before it is missing"))
            else:
                problems.append(
                    Problem(
                        line,
                        "repaired",
                        f"parent {parent!r} is not in the file (a lost or corrupt line); "
                        f"continued from the record on line {current[0]}",
                    )
                )
    path.reverse()
    return _with_parallel_results(path, records)


def _with_parallel_results(
    path: list[tuple[int, dict[str, Any]]], records: list[tuple[int, dict[str, Any]]]
) -> list[tuple[int, dict[str, Any]]]:
    """The path with the results of an answer's parallel tool calls.

    Claude Code writes each tool_use block of one answer as its own record, chained one
    after the other, and hangs each result on the record of its call: only the last
    result is on the chain, the others branch off it. They belong to the branch all the same.
    """
    position = {raw["uuid"]: index for index, (_, raw) in enumerate(path)}
    after: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for line, raw in records:
        parent_at = position.get(raw.get("parentUuid"))  # type: ignore[arg-type]
        if parent_at is None or raw["uuid"] in position or not _only_tool_results(raw):
            continue
        answer_id = path[parent_at][1].get("message", {}).get("id")
        end = parent_at
        while end + 1 < len(path) and answer_id is not None and path[end + 1][1].get("message", {}).get("id") == answer_id:
            end += 1
        after.setdefault(end, []).append((line, raw))
    if not after:
        return path
    merged: list[tuple[int, dict[str, Any]]] = []
    for index, record in enumerate(path):
        merged.append(record)
        merged.extend(after.get(index, []))
    return merged


def _only_tool_results(raw: dict[str, Any]) -> bool:
    if raw.get("type") != "user" or not isinstance(raw.get("message"), dict) or raw.get("isSidechain"):
        return False
    content = raw["message"].get("content")
    return isinstance(content, list) and bool(content) and all(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _why_not_imported(line: int, raw: dict[str, Any]) -> Problem:
    kind = raw.get("type")
    if kind in NOT_CONVERSATION:
        return Problem(line, "skipped", f"{kind}: {NOT_CONVERSATION[kind]}, not part of the conversation")
    if raw.get("isSidechain"):
        return Problem(line, "skipped", f"{kind}: a subagent's conversation (sidechain)")
    if kind in ("user", "assistant", "system"):
        if not isinstance(raw.get("message"), dict) and kind != "system":
            return Problem(line, "corrupt", f"{kind} record without a message object")
        return Problem(line, "skipped", f"{kind}: not on the branch the session ended on")
    return Problem(line, "unknown", f"unknown record type {kind!r}")


class _Converter:
    def __init__(self, builder: EntryBuilder, problems: list[Problem]) -> None:
        self.builder = builder
        self.problems = problems
        self.answer: _Answer | None = None
        self.tool_names: dict[str, str] = {}
        self.boundary: tuple[int, dict[str, Any]] | None = None
        self.last_context_tokens = 0

    def run(self, path: list[tuple[int, dict[str, Any]]]) -> None:
        for line, raw in path:
            kind = raw.get("type")
            if kind == "assistant":
                self.assistant(line, raw)
                continue
            self.flush_answer()
            if kind == "user":
                self.user(line, raw)
            elif kind == "system" and raw.get("subtype") == "compact_boundary":
                self.flush_boundary(None)
                self.boundary = (line, raw)
            else:
                self.problems.append(Problem(line, "skipped", f"system record ({raw.get('subtype')}), not sent to the model"))
        self.flush_answer()
        self.flush_boundary(None)

    # --- assistant ----------------------------------------------------------------------

    def assistant(self, line: int, raw: dict[str, Any]) -> None:
        message = raw["message"]
        message_id = message.get("id")
        if self.answer is None or message_id is None or message_id != self.answer.message_id:
            self.flush_answer()
            self.flush_boundary(None)
            self.answer = _Answer(message_id, line, raw["uuid"], raw.get("timestamp"))
        answer = self.answer
        answer.last = message
        answer.error = answer.error or bool(raw.get("isApiErrorMessage")) or message.get("model") == SYNTHETIC_MODEL
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            converted = self.assistant_block(line, block)
            if converted is not None:
                answer.blocks.append(converted)

    def assistant_block(self, line: int, block: Any) -> dict[str, Any] | None:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            return {"type": "text", "text": block.get("text", "")}
        if kind == "thinking":
            thinking = {"type": "thinking", "thinking": block.get("thinking", "")}
            if isinstance(block.get("signature"), str):
                thinking["signature"] = block["signature"]
            return thinking
        if kind == "tool_use":
            arguments = block.get("input")
            self.tool_names[str(block.get("id"))] = str(block.get("name"))
            return {
                "type": "toolCall",
                "id": block.get("id"),
                "name": block.get("name"),
                "arguments": arguments if isinstance(arguments, dict) else {"input": arguments},
            }
        self.problems.append(Problem(line, "skipped", f"assistant content block of type {kind!r}"))
        return None

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
            data["usage"] = _usage(message["usage"])
            self.last_context_tokens = sum(data["usage"].values())
        if message.get("model") not in (None, SYNTHETIC_MODEL):
            data["model"] = message["model"]
        converted = message_or_problem(data, answer.line, self.problems, "assistant message")
        if converted is not None:
            self.builder.add_message(answer.line, answer.source_id, self.builder.leaf_id, converted, answer.timestamp)

    # --- user ---------------------------------------------------------------------------

    def user(self, line: int, raw: dict[str, Any]) -> None:
        content = raw["message"].get("content")
        if raw.get("isCompactSummary"):
            if self.boundary is None:
                self.boundary = (line, raw)  # an older version's summary: it is its own boundary
            self.flush_boundary(text_of(content))
            return
        self.flush_boundary(None)
        timestamp = raw.get("timestamp")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        rest: list[dict[str, Any]] = []
        for index, block in enumerate(content or []):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_result":
                self.tool_result(line, f"{raw['uuid']}-{index}", block, timestamp)
            elif kind == "text" and _is_claude_md(block.get("text")):
                self.builder.add_instructions(line, f"{raw['uuid']}-{index}", block["text"], "CLAUDE.md", timestamp)
            elif kind == "text":
                rest.append({"type": "text", "text": block.get("text", "")})
            elif kind == "image":
                rest.append(_image(block))
            else:
                self.problems.append(Problem(line, "skipped", f"user content block of type {kind!r}"))
        if len(rest) == 1 and isinstance(raw["message"].get("content"), str):
            self.add_user(line, raw["uuid"], rest[0]["text"], timestamp)  # a plain string stays one
        elif rest:
            self.add_user(line, raw["uuid"], rest, timestamp)

    def add_user(self, line: int, source_id: str, content: Any, timestamp: str | None) -> None:
        message = message_or_problem({"role": "user", "content": content}, line, self.problems, "user message")
        if message is not None:
            self.builder.add_message(line, source_id, self.builder.leaf_id, message, timestamp)

    def tool_result(self, line: int, source_id: str, block: dict[str, Any], timestamp: str | None) -> None:
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
        message = message_or_problem(data, line, self.problems, "tool result")
        if message is not None:
            self.builder.add_message(line, source_id, self.builder.leaf_id, message, timestamp)

    # --- compaction ---------------------------------------------------------------------

    def flush_boundary(self, summary: str | None) -> None:
        """Write the pending compaction, with the summary record that followed its boundary."""
        if self.boundary is None:
            return
        (line, raw), self.boundary = self.boundary, None
        metadata = raw.get("compactMetadata") or {}
        if summary is None:
            summary = str(raw.get("content") or "Conversation compacted")
            self.problems.append(Problem(line, "repaired", "compaction without a summary record; its boundary text stands in"))
        entry = CompactionEntry(
            id=PLACEHOLDER_ID,
            parentId=None,
            summary=summary,
            firstKeptEntryId=None,
            tokensBefore=int(metadata.get("preTokens") or self.last_context_tokens),
            tokensAfter=0,
            reason=COMPACTION_REASONS.get(str(metadata.get("trigger")), "threshold"),
            summarizer=SummarizerInfo(provider=SOURCE),
            **({"timestamp": raw["timestamp"]} if isinstance(raw.get("timestamp"), str) else {}),
        )
        self.builder.add_node(line, raw["uuid"], self.builder.leaf_id, entry, enters_context=True)


def _is_claude_md(text: Any) -> bool:
    """The CLAUDE.md context Claude Code puts into the first user message as a reminder."""
    return isinstance(text, str) and text.lstrip().startswith("<system-reminder>") and "# claudeMd" in text


def _usage(usage: dict[str, Any]) -> dict[str, int]:
    return {
        "input": int(usage.get("input_tokens") or 0),
        "output": int(usage.get("output_tokens") or 0),
        "cacheRead": int(usage.get("cache_read_input_tokens") or 0),
        "cacheWrite": int(usage.get("cache_creation_input_tokens") or 0),
    }


def _image(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source") or {}
    return {"type": "image", "data": source.get("data", ""), "mimeType": source.get("media_type", "")}
