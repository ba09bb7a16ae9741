"""One line per summary for places with room for one line: tree previews, tooltips, lists.

The line is the summary's goal and where the work stands ("now: …" from In Progress, else
"next: …" from Next Steps). Claude Code's own summaries (imported or followed) name the same
parts differently ("1. Primary Request and Intent:", "Current Work", "Optional Next Step") and
are read the same way. A summary without any of them gives its first sentence that is not an
introduction ("… The conversation is summarized below:").
"""

from __future__ import annotations

import re

from contextd.model import BranchSummaryEntry, CompactionEntry

SHORT_SUMMARY_CHARS = 140

_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
# A plain "1. Primary Request and Intent:" or "**Current Work:**" line is a heading only when
# it names a part we read: numbered list items end with ":" too.
_PLAIN_HEADING = re.compile(r"^\s*(?:\d+\.\s*)?(?:\*\*)?(.+?):?(?:\*\*)?:?\s*$")
_NUMBERING = re.compile(r"^\d+\.\s*")
_PARTS = {
    "goal": ("goal", "primary request and intent", "primary request"),
    "now": ("in progress", "current work"),
    "next": ("next steps", "optional next step", "next step", "pending tasks"),
}
_PART_OF_NAME = {name: part for part, names in _PARTS.items() for name in names}
_BULLET = re.compile(r"^(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_EMPTY = {"", "(none)", "none"}


def _heading(line: str) -> str | None:
    """The lower-cased name of the heading `line` is, or None for a line of content."""
    markdown = _HEADING.match(line)
    if markdown:
        return _NUMBERING.sub("", markdown.group(1)).rstrip(":").lower()
    plain = _PLAIN_HEADING.match(line)
    if plain and line.rstrip().endswith((":", ":**")):
        name = _NUMBERING.sub("", plain.group(1)).rstrip(":*").strip().lower()
        if name in _PART_OF_NAME:
            return name
    return None


def _parts(summary: str) -> dict[str, list[str]]:
    """Non-empty lines under the headings of each part ("goal", "now", "next")."""
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in summary.splitlines():
        name = _heading(line)
        if name is not None:
            part = _PART_OF_NAME.get(name)
            current = parts.setdefault(part, []) if part else None
        elif current is not None:
            item = _BULLET.sub("", line.strip()).strip()
            if item.lower() not in _EMPTY:
                current.append(item)
    return parts


def _first(parts: dict[str, list[str]], part: str) -> str | None:
    """The part's first item; an introduction ("The user wanted:") joined to the item it introduces."""
    items = parts.get(part, [])
    if len(items) > 1 and items[0].endswith(":"):
        return f"{items[0]} {items[1]}"
    return items[0] if items else None


def _first_sentence(text: str) -> str:
    lines = (line.strip() for line in text.splitlines() if line.strip() and not _HEADING.match(line))
    body = next((line for line in lines if not line.endswith(":")), "")
    return _SENTENCE_END.split(body, maxsplit=1)[0]


def clip(line: str, limit: int) -> str:
    """`line` cut to at most `limit` characters, an ellipsis saying it was cut."""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _clip(text: str) -> str:
    # Bold markers are markup, not words, wherever the line is shown.
    return clip(" ".join(text.replace("**", "").split()), SHORT_SUMMARY_CHARS)


def short_summary(summary: str) -> str:
    parts = _parts(summary)
    goal = _first(parts, "goal")
    now = _first(parts, "now")
    nxt = _first(parts, "next")
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
