"""What the model sees: the path root->leaf folded through compactions and prunes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from contextd.model import (
    CompactionEntry,
    Entry,
    InstructionsEntry,
    Message,
    UserMessage,
)

COMPACTION_PREAMBLE = (
    "The conversation history before this point was compacted into the following summary:\n\n"
)
HISTORY_TOOLS_LINE = (
    "\n\nEarlier detail (exact commands and outputs, errors, the user's own words) is still "
    "reachable: search it with history_search, read entries whole with history_get, and see "
    "what a summary item came from with summary_sources."
)
"""Ends every compaction summary the model reads: what was folded away can be asked for
(`contextd mcp` serves these tools)."""
BRANCH_SUMMARY_PREAMBLE = (
    "The following is a summary of a branch that this conversation came back from:\n\n"
)
HANDOFF_PREAMBLE = (
    "This session continues work handed off from a previous session. The handoff document:\n\n"
)


@dataclass(frozen=True)
class ContextItem:
    """One message of the model's context and the entry it comes from."""

    entry_id: str
    message: Message


def latest_compaction_index(path: Sequence[Entry]) -> int | None:
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == "compaction":
            return index
    return None


def visible_entries(path: Sequence[Entry]) -> list[Entry]:
    """The conversation entries of the path the model still sees, in order.

    With a compaction on the path these are: the compaction itself, the entries from its
    firstKeptEntryId up to it, then everything after it. An earlier compaction among the
    kept entries is left out: the latest summary was written as an update of it.
    Instructions are not conversation: `standing_instructions` gives them, wherever they are.
    """
    conversation: list[Entry] = [entry for entry in path if entry.type != "instructions"]
    compaction_at = latest_compaction_index(conversation)
    if compaction_at is None:
        return conversation
    compaction = conversation[compaction_at]
    assert isinstance(compaction, CompactionEntry)
    kept_from = compaction_at
    for index in range(compaction_at):
        if conversation[index].id == compaction.firstKeptEntryId:
            kept_from = index
            break
    kept = [e for e in conversation[kept_from:compaction_at] if e.type != "compaction"]
    return [compaction, *kept, *conversation[compaction_at + 1 :]]


def opening_compaction(path: Sequence[Entry]) -> CompactionEntry | None:
    """The compaction whose summary opens the model's context at the end of `path`, if any."""
    visible = visible_entries(path)
    return visible[0] if visible and isinstance(visible[0], CompactionEntry) else None


def standing_instructions(path: Sequence[Entry]) -> list[InstructionsEntry]:
    """The instructions in force at the end of `path`, whatever compactions lie between.

    For each source the latest instructions entry stands (an empty text withdraws the
    source); sources keep the order in which they first appeared, so a replaced text does
    not move within the system prompt.
    """
    latest: dict[str, InstructionsEntry] = {}
    for entry in path:
        if entry.type == "instructions":
            latest[entry.source] = entry  # a dict keeps a replaced key where it first was
    return [entry for entry in latest.values() if entry.text]


def instructions_text(path: Sequence[Entry]) -> str | None:
    """The system prompt the instructions at the end of `path` make, or None without any."""
    texts = [entry.text for entry in standing_instructions(path)]
    return "\n\n".join(texts) if texts else None


def pruned_entry_ids(path: Sequence[Entry]) -> set[str]:
    pruned: set[str] = set()
    for entry in path:
        if entry.type == "prune":
            pruned.update(entry.entryIds)
    return pruned


def pruned_placeholder(tokens: int) -> str:
    return f"[Output pruned: {tokens} tokens]"


MESSAGE_BEARING_TYPES = frozenset({"message", "compaction", "branch_summary", "handoff"})
"""The entry types `entry_message` gives a message for."""


def entry_message(entry: Entry) -> Message | None:
    """The message an entry contributes to the context, if any (prunes not applied)."""
    if entry.type == "message":
        return entry.message
    if entry.type == "compaction":
        return UserMessage(content=COMPACTION_PREAMBLE + entry.summary + HISTORY_TOOLS_LINE)
    if entry.type == "branch_summary":
        return UserMessage(content=BRANCH_SUMMARY_PREAMBLE + entry.summary)
    if entry.type == "handoff":
        return UserMessage(content=HANDOFF_PREAMBLE + entry.document)
    return None


def build_context(path: Sequence[Entry], entry_tokens: Mapping[str, int]) -> list[ContextItem]:
    """The model's context for the leaf at the end of `path`.

    `entry_tokens` gives each entry's counted tokens, used to tell the model how much a
    pruned tool result held.
    """
    messages = context_messages(visible_entries(path), pruned_entry_ids(path), entry_tokens)
    return [ContextItem(entry_id, message) for entry_id, message in messages.items()]


def context_messages(
    visible: Iterable[Entry], pruned: Set[str], entry_tokens: Mapping[str, int]
) -> dict[str, Message]:
    """The context's messages by entry id, in order, from the entries `visible_entries` gave
    and the prunes `pruned_entry_ids` gave (for a caller that needs those too)."""
    messages: dict[str, Message] = {}
    for entry in visible:
        # A message entry's message taken here: most entries are, and a call each adds up.
        message = entry.message if entry.type == "message" else entry_message(entry)
        if message is None:
            continue
        if entry.id in pruned and message.role == "toolResult":
            message = message.model_copy(
                update={"content": pruned_placeholder(entry_tokens.get(entry.id, 0))}
            )
        messages[entry.id] = message
    return messages


def open_tool_calls(messages: Iterable[Message]) -> dict[str, str]:
    """Tool calls of the context's `messages` that have no result yet: id -> tool name."""
    pending: dict[str, str] = {}
    for message in messages:  # role and type tags: every load walks the whole context here
        if message.role == "assistant":
            for block in message.content:
                if block.type == "toolCall":
                    pending[block.id] = block.name
        elif message.role == "toolResult":
            pending.pop(message.toolCallId, None)
    return pending
