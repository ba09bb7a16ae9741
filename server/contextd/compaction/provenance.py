"""Where each item of a summary came from: the entry ids a client can jump to.

Items of the offline summary are copied from the messages (sentences, error lines,
commands, the user's words), so each is found verbatim in the entries it came from; an LLM
summary's items are found where they quote their source. An item that only an earlier
summary holds names that compaction entry, whose own sources go further back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextd.compaction.branch import BranchSummaryPreparation
from contextd.compaction.handoff import HandoffPreparation
from contextd.compaction.prepare import CompactionPreparation
from contextd.compaction.serialize import serialize_conversation
from contextd.model import FileDetails, Message, SourcedItem

MAX_SOURCES_PER_ITEM = 3
MIN_PROBE_CHARS = 12
_HEADING = re.compile(r"^#{2,3}\s+(.+?)\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.+)$")
_CUT = re.compile(r"\s*(?:\[…\]|…|\[\.\.\. [^\]]*\]|\s\|\s|\bfailed: )\s*")
_QUOTED = re.compile(r"`([^`]{6,})`|\"([^\"]{6,})\"")


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def trace_sources(
    summary: str,
    sources: Sequence[tuple[str, Message]],
    previous: tuple[str, str] | None = None,
) -> list[SourcedItem]:
    """The summary's items (bullets under its headings) with the ids of the entries that
    hold them; `previous` is (entry id, summary) of the compaction this one updates."""
    texts = [(entry_id, normalized(serialize_conversation([message]))) for entry_id, message in sources]
    earlier = normalized(previous[1]) if previous else ""
    traced: list[SourcedItem] = []
    section = ""
    block: list[str] | None = None
    for line in summary.splitlines():
        if line.strip().startswith("```"):
            if block is None:
                block = []
                continue
            text, block = "\n".join(block), None  # a verbatim block is one item
        elif block is not None:
            block.append(line)
            continue
        elif heading := _HEADING.match(line):
            section = heading.group(1)
            continue
        elif item := _ITEM.match(line):
            text = item.group(1).strip()
        else:
            continue
        if not section or not text.strip():
            continue
        probes = _probes(text)
        ids = _holders(probes, texts)
        if not ids and previous and any(p in earlier for p in probes):
            ids = [previous[0]]
        if ids:
            traced.append(SourcedItem(section=section, text=text, entryIds=ids))
    return traced


def _probes(text: str) -> list[str]:
    """The parts of an item to look for: what it quotes, else its longest uncut stretch."""
    quoted = [a or b for a, b in _QUOTED.findall(text)]
    pieces = [piece for chunk in [*quoted, text.strip('"')] for piece in _CUT.split(chunk)]
    probes = [normalized(piece) for piece in pieces if len(piece.strip()) >= MIN_PROBE_CHARS]
    return sorted(set(probes), key=len, reverse=True)[:3]


def _holders(probes: list[str], texts: list[tuple[str, str]]) -> list[str]:
    """The latest entries holding the longest probe that any entry holds."""
    for probe in probes:
        holders = [entry_id for entry_id, text in texts if probe in text]
        if holders:
            return holders[-MAX_SOURCES_PER_ITEM:]
    return []


def summary_details(
    files: FileDetails,
    summary: str,
    sources: Sequence[tuple[str, Message]],
    previous: tuple[str, str] | None = None,
) -> FileDetails:
    """A summary entry's `details`: its file lists and where each of its items came from.
    The same for compactions, branch summaries and handoffs."""
    return files.model_copy(update={"sources": trace_sources(summary, sources, previous)})


def compaction_details(preparation: CompactionPreparation, summary: str) -> FileDetails:
    """The compaction entry's `details`: items carried from the summary it updates name
    that compaction entry."""
    messages = [m for request in preparation.requests for m in request.messages]
    previous = (
        (preparation.previous_entry_id, preparation.previous_summary)
        if preparation.previous_entry_id and preparation.previous_summary
        else None
    )
    return summary_details(
        preparation.files, summary, list(zip(preparation.summarize_entry_ids, messages)), previous
    )


def branch_details(preparation: BranchSummaryPreparation, summary: str) -> FileDetails:
    """The branch summary entry's `details`: its items name entries of the branch left."""
    sources = list(zip(preparation.entry_ids, preparation.request.messages))
    return summary_details(preparation.files, summary, sources)


def handoff_details(preparation: HandoffPreparation, document: str) -> FileDetails:
    """The handoff entry's `details`: its items name entries of the session handed off
    (the entry's `fromSession`), where the new session has none of them."""
    sources = list(zip(preparation.entry_ids, preparation.request.messages))
    return summary_details(preparation.request.files, document, sources)
