"""One line per summary for places with room for one line: tree previews, tooltips, lists.

The line is the summary's goal and where the work stands ("now: …" from In Progress, else
"next: …" from Next Steps). A summary without those headings (a free-text summary imported
from another agent) gives its first sentence.
"""

from __future__ import annotations

import re

from contextd.model import BranchSummaryEntry, CompactionEntry

SHORT_SUMMARY_CHARS = 140

_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
_BULLET = re.compile(r"^(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_EMPTY = {"", "(none)", "none"}


def _sections(summary: str) -> dict[str, list[str]]:
    """Non-empty lines under each heading, by lower-cased heading text."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in summary.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = sections.setdefault(heading.group(1).lower(), [])
        elif current is not None:
            item = _BULLET.sub("", line.strip()).strip()
            if item.lower() not in _EMPTY:
                current.append(item)
    return sections


def _first(sections: dict[str, list[str]], heading: str) -> str | None:
    items = sections.get(heading)
    return items[0] if items else None


def _first_sentence(text: str) -> str:
    body = next((line.strip() for line in text.splitlines() if line.strip() and not _HEADING.match(line)), "")
    return _SENTENCE_END.split(body, maxsplit=1)[0]


def clip(line: str, limit: int) -> str:
    """`line` cut to at most `limit` characters, an ellipsis saying it was cut."""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _clip(text: str) -> str:
    return clip(" ".join(text.split()), SHORT_SUMMARY_CHARS)


def short_summary(summary: str) -> str:
    sections = _sections(summary)
    goal = _first(sections, "goal")
    now = _first(sections, "in progress")
    nxt = _first(sections, "next steps")
    if goal is None:
        return _clip(_first_sentence(summary))
    if now is not None:
        return _clip(f"{goal} — now: {now}")
    if nxt is not None:
        return _clip(f"{goal} — next: {nxt}")
    return _clip(goal)


def summary_line(entry: CompactionEntry | BranchSummaryEntry) -> str:
    """The entry's stored line, or one made now for entries written before lines were stored."""
    return entry.shortSummary or short_summary(entry.summary)
