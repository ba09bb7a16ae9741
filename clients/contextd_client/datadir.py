"""Client commands that work on the data directory itself, without a daemon: finding a
session by id prefix, reading its entries (`contextd show`) and deleting it (`sessions rm`).

Reading is safe beside a running daemon: files only grow, and a torn last line is skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    HandoffEntry,
    MessageEntry,
    ToolResultMessage,
    UserMessage,
)
from contextd.store import (
    EntryTree,
    InvalidSessionId,
    SessionListing,
    SessionLocked,
    Store,
    check_session_id,
    default_data_dir,
    parse_session_bytes,
)

SUMMARY_KINDS = (CompactionEntry, BranchSummaryEntry, HandoffEntry)


class NotFound(LookupError):
    """No session or entry answers to what the user typed."""


class Ambiguous(LookupError):
    """A prefix names several sessions or entries."""


def store_of(data_dir: str | None) -> Store:
    return Store(Path(data_dir) if data_dir else default_data_dir())


def find_by_prefix(wanted: str, ids: list[str], what: str) -> str:
    """The one id equal to `wanted` or starting with it."""
    if wanted in ids:
        return wanted
    matches = [found for found in ids if found.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise Ambiguous(f"{wanted!r} matches several {what}s: {', '.join(matches[:10])}")
    raise NotFound(f"no {what} {wanted!r}")


def find_session(store: Store, wanted: str) -> SessionListing:
    try:
        check_session_id(wanted)
    except InvalidSessionId as error:
        raise NotFound(f"no session {wanted!r}: {error}") from None
    listings = {listing.session_id: listing for listing in store.listings()}
    return listings[find_by_prefix(wanted, list(listings), "session")]


@dataclass
class SessionContents:
    listing: SessionListing
    tree: EntryTree

    def entry(self, wanted: str | None) -> Entry:
        """The named entry, or by default the latest summary on the path to the leaf (a
        compaction, branch summary or hand-off document), else the leaf itself."""
        if wanted is not None:
            return self.tree.entries[find_by_prefix(wanted, list(self.tree.entries), "entry")]
        path = self.tree.path_to(self.tree.leaf_id)
        summaries = [entry for entry in path if isinstance(entry, SUMMARY_KINDS)]
        if summaries:
            return summaries[-1]
        if not path:
            raise NotFound(f"session {self.listing.session_id} has no entries yet")
        return path[-1]


def read_session(store: Store, wanted: str) -> SessionContents:
    listing = find_session(store, wanted)
    loaded = parse_session_bytes(listing.path.read_bytes())
    tree = EntryTree()
    for entry in loaded.entries:
        tree.add(entry)
    return SessionContents(listing, tree)


def context_usage(store: Store, listing: SessionListing, settings: dict[str, Any]) -> dict[str, Any]:
    """The session's figure as the daemon reports it (a `tokenUsage` body, breakdown
    included), read from its file without its lock."""
    from contextd.model import Settings
    from contextd.session import SessionManager, SilentEvents

    return SessionManager(store, Settings.model_validate(settings), SilentEvents()).peek(listing).usage_body()


def find_sessions(store: Store, wanted: list[str]) -> list[SessionListing]:
    """Each named session once; NotFound or Ambiguous for any name before any is used."""
    listings = {listing.session_id: listing for listing in (find_session(store, name) for name in wanted)}
    return list(listings.values())


def remove_listings(store: Store, listings: list[SessionListing]) -> None:
    """Delete sessions from the data directory, with no daemon involved.

    Raises SessionLocked (naming the holder's pid) for a session a daemon has open.
    """
    for listing in listings:
        store.remove(listing)


def locked_message(error: SessionLocked) -> str:
    holder = f"the contextd daemon with pid {error.pid}" if error.pid else "another contextd daemon"
    return (
        f"session {error.session_id} is open in {holder}: close it there (or stop that "
        "daemon) and try again"
    )


# --- showing an entry in full ---------------------------------------------------------------


def entry_text(entry: Entry) -> str:
    """An entry in full, as a person reads it: a summary's or document's text, a message's
    blocks one after another, anything else as its JSON."""
    if isinstance(entry, CompactionEntry | BranchSummaryEntry):
        return entry.summary
    if isinstance(entry, HandoffEntry):
        return entry.document
    if isinstance(entry, MessageEntry):
        return message_text(entry.message)
    return json.dumps(entry_json(entry), indent=2, ensure_ascii=False)


def entry_heading(entry: Entry, session_id: str) -> str:
    if isinstance(entry, CompactionEntry):
        return (
            f"compaction {entry.id} of session {session_id} ({entry.reason}): "
            f"{entry.tokensBefore:,} → {entry.tokensAfter:,} tokens, keeping from {entry.firstKeptEntryId}"
        )
    if isinstance(entry, BranchSummaryEntry):
        return f"branch summary {entry.id} of session {session_id} (of the branch from {entry.fromId})"
    if isinstance(entry, HandoffEntry):
        return f"hand-off document {entry.id} of session {session_id} (from session {entry.fromSession})"
    if isinstance(entry, MessageEntry):
        return f"{entry.message.role} message {entry.id} of session {session_id}, {entry.timestamp}"
    return f"{entry.type} entry {entry.id} of session {session_id}"


def message_text(message: UserMessage | AssistantMessage | ToolResultMessage) -> str:
    if isinstance(message, ToolResultMessage):
        error = " (error)" if message.isError else ""
        head = f"[result of {message.toolName} {message.toolCallId}{error}]"
        return f"{head}\n{content_text(message.content)}"
    return content_text(message.content)


def content_text(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(block_text(block) for block in content)


def block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "thinking":
        return f"[thinking]\n{block.thinking}"
    if kind == "toolCall":
        return f"[call {block.name} {block.id}]\n{json.dumps(block.arguments, indent=2, ensure_ascii=False)}"
    if kind == "image":
        return f"[image {getattr(block, 'mimeType', '')}]"
    return json.dumps(block.model_dump(mode="json"), ensure_ascii=False)


def entry_json(entry: Entry) -> dict[str, Any]:
    return entry.model_dump(mode="json", exclude_none=True)


__all__ = [
    "Ambiguous",
    "NotFound",
    "SessionLocked",
    "entry_heading",
    "entry_json",
    "entry_text",
    "find_sessions",
    "locked_message",
    "read_session",
    "remove_listings",
    "store_of",
]
