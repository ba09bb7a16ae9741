"""What contextd adds after an agent's own compaction: the facts of contextd's summary of the
same span that the model no longer sees after the compaction (neither in the agent's summary nor
in the messages it kept), within a token budget.

Pure: text in, text out (the hook command does the talking to the daemon)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


BUDGET_ENCODING = "o200k_base"
DEFAULT_MAX_TOKENS = 2000
HEADER = (
    "contextd, which keeps this session's whole history, adds what the compaction summary "
    "above does not hold (taken from the conversation before the compaction):"
)
WORD = re.compile(r"[\w./-]{3,}", re.UNICODE)
ALREADY_SAID_SHARE = 0.8
"""An item whose words are this much in what the model still sees is not repeated."""


@dataclass(frozen=True)
class Part:
    """A section of the added context: the summary sections it draws from, its title, and
    whether its items are given whole however long (the user's constraints, the errors)."""

    title: str
    sections: tuple[str, ...]
    whole: bool = False


PARTS = (
    Part("Standing constraints and preferences (the user's words)", ("Constraints & Preferences",), whole=True),
    Part("Open errors (with the command that shows them)", ("Blocked", "Open Errors (computed)"), whole=True),
    Part("Commands, latest outcome", ("Commands (latest run)",)),
    Part("Files modified", ("Files modified",)),
    Part("Done, as the latest runs left it", ("Done",)),
    Part("The user's latest messages, verbatim", ("User Messages (newest first)",)),
    Part("Where the work stands", ("In Progress", "Next Steps")),
    Part("Decisions and context", ("Key Decisions", "Critical Context")),
    Part("From the earlier summary, left out of this one", ("Earlier Summary (carried forward)",)),
    Part("Files read", ("Files read",)),
)
"""Most important first: the budget is filled a round at a time, an item of each part per
round in this order (`_packed`)."""

ITEM_MAX_TOKENS = 100
"""Longer items of the other parts are cut (the whole is a history_get away): one pasted log
must not take the room of ten facts."""

FILE_LISTS = {"modified-files": "Files modified", "read-files": "Files read"}
"""The summary's `<tag>` file lists, as the sections they are read into."""


def sections_of(summary: str) -> dict[str, list[str]]:
    """The items (bullets, or a fenced block as one item) of each `##`/`###` section, and of
    each `<tag>` list (the file lists as "Files modified" and "Files read")."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    fence: list[str] | None = None
    for line in summary.splitlines():
        if fence is not None:
            fence.append(line)
            if line.strip().startswith("```"):
                assert current is not None
                current.append("\n".join(fence))
                fence = None
            continue
        heading = re.match(r"#{2,3}\s+(.*\S)", line)
        tag = re.fullmatch(r"<([\w-]+)>", line.strip())
        if heading:
            current = sections.setdefault(heading.group(1).strip(), [])
        elif tag:
            current = sections.setdefault(FILE_LISTS.get(tag.group(1), tag.group(1)), [])
        elif line.strip().startswith("</"):
            current = None
        elif current is not None and line.strip().startswith("```"):
            fence = [line]
        elif current is not None and line.strip():
            current.append(line.strip())
    return sections


def words_of(text: str) -> set[str]:
    return {word.casefold().strip("./-") for word in WORD.findall(text)}


def already_said(item: str, said: set[str]) -> bool:
    words = words_of(item)
    return bool(words) and len(words & said) >= ALREADY_SAID_SHARE * len(words)


def added_context(contextd_summary: str, still_seen: str, max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """The parts of `contextd_summary` that what the model still sees after the agent's
    compaction (`still_seen`: its summary, the messages it kept) lacks, within `max_tokens`;
    "" when there is nothing to add."""
    # The daemon's models and tiktoken are imported when a hook adds context, not by every
    # `contextd` command that builds its parser from this package.
    from contextd.compaction.context import HISTORY_TOOLS_LINE

    said = words_of(still_seen)
    sections = sections_of(contextd_summary)
    seen: set[str] = set()
    wanted: list[tuple[Part, list[str]]] = []
    for part in PARTS:
        items = [item for item in _items(sections, part.sections) if not already_said(item, said)]
        items = [item if part.whole else _shortened(item) for item in items if _first_time(item, seen)]
        if items:
            wanted.append((part, items))
    budget = max_tokens - tokens(HEADER) - tokens(HISTORY_TOOLS_LINE) - 1
    blocks = [f"### {part.title}\n" + "\n".join(chosen) for part, chosen in _packed(wanted, budget) if chosen]
    if not blocks:
        return ""
    return "\n\n".join([HEADER, *blocks]) + HISTORY_TOOLS_LINE


def _shortened(item: str) -> str:
    """`item` cut to about ITEM_MAX_TOKENS tokens, on a word boundary, marked as cut."""
    if tokens(item) <= ITEM_MAX_TOKENS:
        return item
    cut = item[: len(item) * ITEM_MAX_TOKENS // tokens(item)].rsplit(" ", 1)[0]
    return cut + " […]" + ('"' if item.endswith('"') else "")


def _first_time(item: str, seen: set[str]) -> bool:
    """Whether no earlier part already holds the item (a user's words are both a standing
    constraint and one of the latest messages): compared without bullets, quotes and case."""
    key = item.lstrip("-[x] ").strip().strip('"`.').casefold()
    if key in seen:
        return False
    seen.add(key)
    return True


def _packed(wanted: list[tuple[Part, list[str]]], budget: int) -> list[tuple[Part, list[str]]]:
    """The items of each part that fit in `budget` tokens, in their order, taken a round at a
    time: each round gives every part, most important first, its next item. So one long list
    (every command run, every file read) cannot crowd out the other kinds of facts, and each
    part's first items (the newest, the ones it ranks first) come before anyone's later ones.
    An item too big for what is left is passed over for the smaller ones after it."""
    chosen: list[list[str]] = [[] for _ in wanted]
    pending = [list(items) for _, items in wanted]
    left = budget
    while any(pending):
        for (part, _), taken, queue in zip(wanted, chosen, pending, strict=True):
            while queue:
                item = queue.pop(0)
                cost = tokens(item) + 1 + (0 if taken else tokens(f"### {part.title}") + 2)
                if cost <= left:
                    taken.append(item)
                    left -= cost
                    break
    return [(part, taken) for (part, _), taken in zip(wanted, chosen, strict=True)]


def _items(sections: dict[str, list[str]], names: Iterable[str]) -> list[str]:
    found: list[str] = []
    for name in names:
        for item in sections.get(name, []):
            bullet = item if item.startswith(("-", "`", "1")) else f"- {item}"
            if bullet not in found and item not in ("- (none)", "(none)"):
                found.append(bullet)
    return found


def tokens(text: str) -> int:
    from contextd.tokens import count_text

    return count_text(text, BUDGET_ENCODING)
