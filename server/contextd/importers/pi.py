"""pi session files (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`), versions 1 to 3.

v1 is a linear list without ids whose compactions name the first kept entry by its index in
the file (`firstKeptEntryIndex`, the header counting as 0); v2 added `id`/`parentId` trees;
v3 renamed the `hookMessage` role to `custom`. pi's message shapes are contextd's own, so
messages map field for field; entry types map as documented in `ENTRY_MAPPING`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from contextd.importers.common import (
    PLACEHOLDER_ID,
    EntryBuilder,
    ImportedSession,
    Problem,
    json_lines,
    message_or_problem,
    validation_summary,
)
from contextd.model import (
    BranchSummaryEntry,
    CompactionEntry,
    FileDetails,
    LabelEntry,
    Message,
    ModelChangeEntry,
    SessionInfoEntry,
    SummarizerInfo,
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


def _dropped_fields(raw: dict[str, Any]) -> list[str]:
    """Fields of a pi entry that contextd has no place for (they are reported, not kept)."""
    kind = raw.get("type")
    if kind not in FIELDS_BY_ENTRY_TYPE:
        return []
    dropped = sorted(set(raw) - ENTRY_FIELDS - FIELDS_BY_ENTRY_TYPE[kind])
    message = raw.get("message")
    if kind == "message" and isinstance(message, dict) and message.get("role") in FIELDS_BY_ROLE:
        dropped += [f"message.{name}" for name in sorted(set(message) - FIELDS_BY_ROLE[message["role"]])]
        if isinstance(message.get("usage"), dict):
            dropped += [f"message.usage.{name}" for name in sorted(set(message["usage"]) - USAGE_FIELDS)]
    return dropped


def parse(lines: Iterable[str]) -> ImportedSession:
    problems: list[Problem] = []
    parsed = list(json_lines(lines, problems))
    if not parsed or parsed[0][1].get("type") != "session":
        problems.append(Problem(parsed[0][0] if parsed else 1, "corrupt", "the first line is not a pi session header"))
        return ImportedSession(SOURCE, None, None, None, None, [], None, problems)
    header_line, header = parsed[0]
    version = header.get("version", 1)
    if set(header) - HEADER_FIELDS:
        problems.append(
            Problem(header_line, "dropped", f"header imported without {', '.join(sorted(set(header) - HEADER_FIELDS))}")
        )
    body = parsed[1:]
    if version == 1:
        body = _with_v1_ids(parsed)
    builder = EntryBuilder(problems)
    name: str | None = None
    root_id = builder.add_model_root(header_line, header.get("modelId") or _model_before_any_change(body))
    previous: str | None = root_id
    for line, raw in body:
        entry_id = raw.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            problems.append(Problem(line, "corrupt", "entry without an id"))
            continue
        parent = raw.get("parentId")
        if parent is None:
            parent = root_id
        elif not builder.known(parent):
            problems.append(Problem(line, "repaired", f"parent {parent!r} not found; attached to the entry before it"))
            parent = previous
        name = _convert(builder, line, entry_id, parent, raw, problems) or name
        if dropped := _dropped_fields(raw):
            problems.append(Problem(line, "dropped", f"{raw.get('type')} imported without {', '.join(dropped)}"))
        previous = entry_id
    # pi resumes at the last line of the file, whatever its type.
    entries, leaf_id = builder.finish(body[-1][0] if body else header_line, leaf=previous)
    return ImportedSession(
        source=SOURCE,
        source_id=header.get("id"),
        workspace=header.get("cwd"),
        created_at=header.get("timestamp"),
        name=name,
        entries=entries,
        leaf_id=leaf_id,
        problems=problems,
    )


def _with_v1_ids(parsed: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """v1 -> v2 as pi migrates it: a chain of ids, and compaction indexes turned into ids."""
    ids = [f"L{line}" for line, _ in parsed]
    body: list[tuple[int, dict[str, Any]]] = []
    for index, (line, raw) in enumerate(parsed[1:], start=1):
        raw = {**raw, "id": ids[index], "parentId": ids[index - 1] if index > 1 else None}
        kept_index = raw.pop("firstKeptEntryIndex", None)
        if raw.get("type") == "compaction" and isinstance(kept_index, int) and 0 < kept_index < len(ids):
            raw["firstKeptEntryId"] = ids[kept_index]
        body.append((line, raw))
    return body


def _model_before_any_change(body: list[tuple[int, dict[str, Any]]]) -> str | None:
    """The model of the first answer, unless a model_change names the model before it."""
    for _, raw in body:
        if raw.get("type") == "model_change":
            return None
        message = raw.get("message")
        if raw.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant":
            return message.get("model")
    return None


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
    except ValidationError as error:
        problems.append(Problem(line, "corrupt", f"{kind} entry: {validation_summary(error)}"))
        builder.skip(entry_id, parent)
    return None


def _compaction(raw: dict[str, Any], builder: EntryBuilder) -> CompactionEntry:
    first_kept = raw.get("firstKeptEntryId")
    return CompactionEntry(
        id=PLACEHOLDER_ID,
        parentId=None,
        summary=raw["summary"],
        firstKeptEntryId=builder.resolve(first_kept) if first_kept else None,
        tokensBefore=int(raw.get("tokensBefore") or 0),
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
    return message_or_problem(data, line, problems, f"{role} message")


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
