"""The structured checkpoint as data: sections of ranked items, rendered to markdown within
a token budget, and parsed back from a previous summary's markdown.

Each item has a rank (how much it matters: 5 = a fact the next session cannot rebuild,
such as a user constraint or an exact error) and a sequence number (its age). When the
document is over budget, items go lowest rank first and, within a rank, oldest first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contextd.tokens import count_text

ENCODING = "o200k_base"
"""Budgets are counted in the encoding of current models; others differ by a few percent,
which the slack in the requested budget absorbs."""

NONE = "(none)"

# Section keys: the vocabulary shared by extraction, merging and layouts.
GOAL = "goal"
CONSTRAINTS = "constraints"
DONE = "done"
IN_PROGRESS = "in_progress"
BLOCKED = "blocked"
DECISIONS = "decisions"
NEXT = "next"
CRITICAL = "critical"
READ_FILES = "read_files"
MODIFIED_FILES = "modified_files"
USER_MESSAGES = "user_messages"
COMMANDS = "commands"
OPEN_ERRORS = "open_errors"
EARLIER = "earlier"

_BULLETS = {DONE: "- [x] ", IN_PROGRESS: "- [ ] "}
_SUFFIXES = {MODIFIED_FILES: " (modified)", READ_FILES: " (read)"}
"""File lists printed as bullets (not as tags) say which list a path came from."""
_NUMBERED = {NEXT}


def count_tokens(text: str) -> int:
    return count_text(text, ENCODING)


def normalized(text: str) -> str:
    """The form two items are compared in: case, spacing and end punctuation do not count."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".:;").lower()


@dataclass(frozen=True)
class Item:
    text: str
    rank: int
    seq: int


_FILE_KEYS = frozenset({READ_FILES, MODIFIED_FILES})
_DEDUPE_GROUPS = {READ_FILES: "files", MODIFIED_FILES: "files", BLOCKED: "errors", CRITICAL: "errors"}
"""Sections that share duplicates: a path is read or modified, an error blocks or is context.
Elsewhere a sentence may appear in two sections (a request that states a constraint)."""


class Checkpoint:
    """Items by section key, in insertion order, without duplicates (see _DEDUPE_GROUPS):
    the first section to receive an item keeps it."""

    def __init__(self) -> None:
        self._sections: dict[str, list[Item]] = {}
        self._seen: set[tuple[str, str]] = set()
        self._blocks: list[str] = []

    def add(self, key: str, text: str, rank: int) -> None:
        text = text.strip("\n").rstrip()
        identity = normalized(text)
        seen = (_DEDUPE_GROUPS.get(key, key), identity)
        if not identity or identity == normalized(NONE) or seen in self._seen:
            return
        if key not in _FILE_KEYS and self._inside_block(identity):
            return
        self._seen.add(seen)
        if "\n" in text:
            self._blocks.append(identity)
        seq = sum(len(items) for items in self._sections.values())
        self._sections.setdefault(key, []).append(Item(text, rank, seq))

    def add_all(self, key: str, texts: Iterable[str], rank: int) -> None:
        for text in texts:
            self.add(key, text, rank)

    def mentions(self, text: str) -> bool:
        """Whether some item already says `text`, word for word."""
        identity = normalized(text)
        return any(identity in normalized(item.text) for item in self.all_items())

    def _inside_block(self, identity: str) -> bool:
        """A line already quoted inside a verbatim block (a whole error output)."""
        return any(identity in block for block in self._blocks)

    def items(self, key: str) -> list[Item]:
        return list(self._sections.get(key, []))

    def all_items(self) -> list[Item]:
        return [item for items in self._sections.values() for item in items]


@dataclass(frozen=True)
class Part:
    """One heading of a layout and the sections printed under it.

    With `tag`, the items are bare lines inside `<tag>...</tag>`, left out when empty (the
    read/modified file lists); with no keys, the heading is a container (`## Progress`).
    An `optional` part is left out when it has no items, instead of saying "(none)".
    """

    heading: str | None
    keys: tuple[str, ...] = ()
    tag: str | None = None
    optional: bool = False


Layout = Sequence[Part]


def render(checkpoint: Checkpoint, layout: Layout, dropped: frozenset[int] = frozenset()) -> str:
    blocks: list[str] = []
    for part in layout:
        items = [
            (key, item)
            for key in part.keys
            for item in checkpoint.items(key)
            if item.seq not in dropped
        ]
        if part.tag is not None:
            if items:
                listed = "\n".join(item.text for _, item in items)
                blocks.append(f"<{part.tag}>\n{listed}\n</{part.tag}>")
            continue
        if part.optional and not items:
            continue
        lines = [part.heading] if part.heading else []
        if part.keys:
            lines += _item_lines(items) or [NONE]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks).strip() + "\n"


def _item_lines(items: list[tuple[str, Item]]) -> list[str]:
    lines: list[str] = []
    number = 0
    for key, item in items:
        if "\n" in item.text:
            lines.append(_fenced(item.text))
            continue
        if key in _NUMBERED:
            number += 1
            lines.append(f"{number}. {item.text}")
        else:
            lines.append(_BULLETS.get(key, "- ") + item.text + _SUFFIXES.get(key, ""))
    return lines


def _fenced(text: str) -> str:
    """Verbatim text in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def fit(checkpoint: Checkpoint, layout: Layout, max_tokens: int) -> str:
    """The rendered checkpoint, dropping the least important items until it fits."""
    text = render(checkpoint, layout)
    if count_tokens(text) <= max_tokens:
        return text
    order = [item.seq for item in sorted(checkpoint.all_items(), key=lambda i: (i.rank, i.seq))]

    def rendered_without(count: int) -> str:
        return render(checkpoint, layout, frozenset(order[:count]))

    # Fewest drops that fit; rendering shrinks as drops grow, so bisect.
    low, high = 1, len(order)
    while low < high:
        middle = (low + high) // 2
        if count_tokens(rendered_without(middle)) <= max_tokens:
            high = middle
        else:
            low = middle + 1
    text = rendered_without(high)
    # Even the bare headings can be over a tiny budget: cut, since the budget is a hard limit.
    while (tokens := count_tokens(text)) > max_tokens:
        text = text[: len(text) * max_tokens // tokens - 1]
    return text


# --- reading a previous summary ------------------------------------------------------

_HEADING_KEYS = {
    "goal": GOAL,
    "goals": GOAL,
    "original request": GOAL,
    "task": GOAL,
    "constraints & preferences": CONSTRAINTS,
    "constraints and preferences": CONSTRAINTS,
    "constraints": CONSTRAINTS,
    "preferences": CONSTRAINTS,
    "done": DONE,
    "completed": DONE,
    "early progress": DONE,
    "progress": DONE,
    "in progress": IN_PROGRESS,
    "blocked": BLOCKED,
    "errors so far": BLOCKED,
    "open problems": BLOCKED,
    "key decisions": DECISIONS,
    "decisions": DECISIONS,
    "next steps": NEXT,
    "critical context": CRITICAL,
    "findings": CRITICAL,
    "files": MODIFIED_FILES,
    "context for suffix": CRITICAL,
    "context for the rest of the turn": CRITICAL,
    "user messages": USER_MESSAGES,
    "user messages (newest first)": USER_MESSAGES,
    "commands": COMMANDS,
    "commands (latest run)": COMMANDS,
    "open errors": OPEN_ERRORS,
    "open errors (computed)": OPEN_ERRORS,
    "earlier summary": EARLIER,
    "earlier summary (carried forward)": EARLIER,
}
_FILE_TAGS = {"read-files": READ_FILES, "modified-files": MODIFIED_FILES}

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*:?\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[([ xX])\]\s+)?(.*)$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_TAG = re.compile(r"^\s*<(/?)([a-z-]+)>\s*$")


def parse_summary(markdown: str) -> dict[str, list[str]]:
    """Items by section key from a checkpoint's markdown, whoever wrote it.

    Unknown headings count as critical context; text before the first heading (a
    preamble) is ignored; `(none)` placeholders are dropped.
    """
    sections: dict[str, list[str]] = {}
    key: str | None = None
    items: list[str] = []
    open_boxes: set[int] = set()
    """Indexes into `items` of bullets with an unticked box: `- [ ] ...`."""
    fence: str | None = None
    block: list[str] = []

    def close_section() -> None:
        for index, item in enumerate(items):
            if key is None or normalized(item) in ("", normalized(NONE)):
                continue
            item_key = key
            if key == DONE and index in open_boxes:
                item_key = IN_PROGRESS  # an open box under a mixed heading ("Early Progress")
            if key in _FILE_KEYS:  # a bulleted file list: the suffix says which list
                item_key = next((k for k, s in _SUFFIXES.items() if item.endswith(s)), key)
                item = item.removesuffix(_SUFFIXES[item_key])
            sections.setdefault(item_key, []).append(item)
        items.clear()
        open_boxes.clear()

    for line in markdown.splitlines():
        if fence is not None:
            if line.strip().startswith(fence):
                items.append("\n".join(block))
                fence, block = None, []
            else:
                block.append(line)
            continue
        if opened := _FENCE.match(line):
            fence = opened.group(1)
            continue
        if tag := _TAG.match(line):
            close_section()
            name = tag.group(2)
            key = None if tag.group(1) else _FILE_TAGS.get(name, CRITICAL)
            continue
        if heading := _HEADING.match(line):
            close_section()
            key = _HEADING_KEYS.get(heading.group(1).strip().lower(), CRITICAL)
            continue
        if key is None or not line.strip():
            continue
        if bullet := _BULLET.match(line):
            if bullet.group(1) == " ":
                open_boxes.add(len(items))
            items.append(bullet.group(2).strip())
        elif line[:1].isspace() and items:
            items[-1] = f"{items[-1]} {line.strip()}"  # a wrapped bullet
        else:
            items.append(line.strip())
    if fence is not None and block:
        items.append("\n".join(block))
    close_section()
    return sections
