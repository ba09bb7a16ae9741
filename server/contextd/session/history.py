"""A session's whole history on demand: search, entries within a token budget, the sources
of a summary's items and contextd's summary of a span another agent compacts.

Every entry counts, what compactions folded away and abandoned branches included; each
is placed relative to the current branch and its compactions."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from contextd.compaction.prepare import NothingToCompact, offline_summary, prepare_span
from contextd.history import Hit, IndexedText, IndexWriter, entry_text
from contextd.model import CompactionEntry, Entry, is_node
from contextd.results import (
    HistoryEntries,
    HistoryEntry,
    HistoryRow,
    SearchHit,
    SearchResult,
    SourceItem,
    SourcesResult,
    SpanSummary,
)
from contextd.session.errors import EntryNotFound, NothingToCompactError
from contextd.session.live import LiveSession
from contextd.tokens import count_text

TRUNCATED_MARK = "\n[… cut at the token budget]"


@dataclass(frozen=True)
class Placement:
    """Where entries sit: on the current branch or not, and which compaction folded them."""

    on_branch: set[str]
    folded_by: dict[str, str]

    @classmethod
    def of(cls, session: LiveSession) -> Placement:
        path = session.path
        folded: dict[str, str] = {}
        for index, entry in enumerate(path):
            if isinstance(entry, CompactionEntry):
                kept = next(
                    (i for i in range(index) if path[i].id == entry.firstKeptEntryId), index
                )
                for earlier in path[:kept]:
                    folded.setdefault(earlier.id, entry.id)
        return cls({entry.id for entry in path}, folded)

    def row(self, entry: Entry, role: str | None, tool: str | None) -> HistoryRow:
        """What a search hit and a fetched entry both say of `entry`."""
        on_branch = entry.id in self.on_branch
        row: HistoryRow = {
            "entryId": entry.id,
            "type": entry.type,
            "timestamp": entry.timestamp,
            "branch": "current" if on_branch else "abandoned",
            "foldedBy": self.folded_by.get(entry.id) if on_branch else None,
        }
        if role:
            row["role"] = role
        if tool:
            row["tool"] = tool
        return row


async def search(session: LiveSession, writer: IndexWriter, query: str, limit: int) -> SearchResult:
    """Ranked full-text hits over every entry, once the index holds what was written."""
    hits = await asyncio.to_thread(_search_when_written, writer, session, query, limit)
    placement = Placement.of(session)
    entries = session.tree.entries
    return SearchResult(
        sessionId=session.session_id,
        hits=[
            SearchHit(**placement.row(entries[hit.entry_id], hit.role, hit.tool), snippet=hit.snippet)
            for hit in hits
            if hit.entry_id in entries
        ],
    )


def _search_when_written(writer: IndexWriter, session: LiveSession, query: str, limit: int) -> list[Hit]:
    try:
        return _written_then_searched(writer, session, query, limit)
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as error:  # damaged under the open connection
        writer.index.reset(error)
        return _written_then_searched(writer, session, query, limit)


def _written_then_searched(writer: IndexWriter, session: LiveSession, query: str, limit: int) -> list[Hit]:
    """The session is noted as changed first: a no-op when the writer has kept up with it
    since the index was made, else (loaded after the index was lost) it is written whole."""
    writer.wait(writer.changed(session.session_id, session.header.createdAt, session.tree.entries))
    return writer.index.search(session.session_id, query, limit)


def get_entries(
    session: LiveSession, entry_ids: Sequence[str] | None, around: str | None, max_tokens: int
) -> HistoryEntries:
    """The entries asked for (or those around one, on its branch, nearest first), whole
    while they fit in `max_tokens`; the first that does not is cut, the rest left out."""
    wanted = list(entry_ids) if entry_ids is not None else _around(session, around or "")
    for entry_id in wanted:
        if entry_id not in session.tree.entries:
            raise EntryNotFound(entry_id)
    placement = Placement.of(session)
    encoding = session.model_info.encoding
    chosen: dict[str, HistoryEntry] = {}
    budget = max_tokens
    for entry_id in wanted:
        if budget <= 0:
            break
        entry = session.tree.entries[entry_id]
        found = entry_text(entry)
        text, tokens, cut = _within(_readable(entry, found), budget, encoding)
        budget -= tokens
        described = placement.row(entry, found.role, found.tool) if found else placement.row(entry, None, None)
        chosen[entry_id] = HistoryEntry(**described, parentId=entry.parentId, text=text, tokens=tokens)
        if cut:
            chosen[entry_id]["truncated"] = True
    order = list(session.tree.entries)
    shown = sorted(chosen, key=order.index)
    return HistoryEntries(
        sessionId=session.session_id,
        entries=[chosen[entry_id] for entry_id in shown],
        omitted=[entry_id for entry_id in wanted if entry_id not in chosen],
    )


def _around(session: LiveSession, entry_id: str) -> list[str]:
    """`entry_id`, then the nodes before and after it on its branch, nearest first."""
    tree = session.tree
    if entry_id not in tree.entries or not is_node(tree.entries[entry_id]):
        raise EntryNotFound(entry_id)
    before = [entry.id for entry in tree.path_to(entry_id)][:-1]
    current = {entry.id for entry in session.path}
    after: list[str] = []
    node = entry_id
    while children := tree.children.get(node):
        on_branch = [child for child in children if child in current]
        node = (on_branch or children)[-1]
        after.append(node)
    ordered = [entry_id]
    for distance in range(1, max(len(before), len(after)) + 1):
        if distance <= len(before):
            ordered.append(before[-distance])
        if distance <= len(after):
            ordered.append(after[distance - 1])
    return ordered


def _readable(entry: Entry, found: IndexedText | None) -> str:
    if found is not None:
        return found.text
    return entry.model_dump_json(exclude={"id", "parentId", "timestamp", "type"})


def _within(text: str, budget: int, encoding: str) -> tuple[str, int, bool]:
    """`text` whole when it fits in `budget` tokens, else its beginning that does."""
    tokens = count_text(text, encoding)
    if tokens <= budget:
        return text, tokens, False
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits, by bisection on characters
        middle = (low + high + 1) // 2
        if count_text(text[:middle] + TRUNCATED_MARK, encoding) <= budget:
            low = middle
        else:
            high = middle - 1
    cut = text[:low] + TRUNCATED_MARK
    return cut, count_text(cut, encoding), True


def summary_sources(session: LiveSession, compaction_id: str, item: int | str | None) -> SourcesResult:
    """The items of a summary (compaction, branch summary or handoff) with the entries each
    came from; `item` picks one by its number or the items whose text holds it."""
    entry = session.tree.entries.get(compaction_id)
    details = getattr(entry, "details", None)
    if entry is None or details is None:
        raise EntryNotFound(compaction_id)
    items = [
        SourceItem(item=number, section=source.section, text=source.text, entryIds=source.entryIds)
        for number, source in enumerate(details.sources or [])
    ]
    if isinstance(item, int):
        items = [found for found in items if found["item"] == item]
    elif isinstance(item, str):
        needle = item.casefold()
        items = [found for found in items if needle in f"{found['section']} {found['text']}".casefold()]
    return SourcesResult(sessionId=session.session_id, entryId=compaction_id, items=items)


async def summarize_span(
    session: LiveSession, through_entry_id: str | None, first_kept_entry_id: str | None,
    after_entry_id: str | None = None,
) -> SpanSummary:
    """contextd's offline summary of the context at `through_entry_id` (default: the leaf)
    up to `first_kept_entry_id` (None: all of it), from after `after_entry_id` (a branch's
    common ancestor; None: from the root): what contextd would have kept of the span
    another agent's compaction or branch summary folds away."""
    leaf = through_entry_id or session.leaf_id
    for named in (leaf, first_kept_entry_id, after_entry_id):
        if named is not None and named not in session.tree.entries:
            raise EntryNotFound(named)
    path = session.tree.path_to(leaf)
    if after_entry_id is not None:
        ids = [entry.id for entry in path]
        path = path[ids.index(after_entry_id) + 1 :] if after_entry_id in ids else path
    prepared = prepare_span(path, session.entry_tokens, session.settings, first_kept_entry_id)
    if isinstance(prepared, NothingToCompact):
        raise NothingToCompactError(session.session_id, prepared.message)
    summary = await asyncio.to_thread(offline_summary, prepared)
    return SpanSummary(
        sessionId=session.session_id,
        summary=summary,
        firstKeptEntryId=prepared.first_kept_entry_id or None,
        summarizeEntryIds=list(prepared.summarize_entry_ids),
        tokensBefore=prepared.tokens_before,
        details=prepared.files,
    )
