"""What contextd adds after an agent's own compaction: the facts of contextd's summary of the
same span that the model no longer sees after the compaction (neither in the agent's summary nor
in the messages it kept), within a token budget.

Pure: text in, text out (the hook command does the talking to the daemon)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


BUDGET_ENCODING = "o200k_base"
DEFAULT_MAX_TOKENS = 2000
HEADER = (
    "contextd, which keeps this session's whole history, adds what the compaction summary "
    "above does not hold (taken from the conversation before the compaction):"
)
FOLDER_NOTE = " (a file path not starting with / is under {folder})"
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
ALMOST_NOTHING_TOKENS = 100
"""An agent's summary shorter than this holds almost nothing of the span it folded (Codex's
readable note where its summary is encrypted: 33 tokens)."""

LATEST_REPLIES = Part("The agent's latest replies that ended a turn (its reasoning first)", ())
"""Its own conclusions, newest first: what it told the user and why, which a summary of the
span may reduce to the files and commands."""
LATEST_REPLIES_KEPT = 3

EARLIER = Part("From before the agent's earlier compaction, whose summary holds almost nothing", ())
"""contextd's summary of the span the agent's previous compaction folded, when the agent's own
summary of it is not readable (Codex keeps it encrypted): the model kept nothing of that span."""
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


def holds_almost_nothing(agent_summary: str) -> bool:
    """Whether the agent's summary of a compaction holds almost nothing of what it folded, so
    contextd's own summary of that span is carried to the next compaction (`earlier_span`)."""
    return tokens(agent_summary) < ALMOST_NOTHING_TOKENS


def words_of(text: str) -> set[str]:
    return {word.casefold().strip("./-") for word in WORD.findall(text)}


def already_said(item: str, said: set[str]) -> bool:
    words = words_of(item)
    return bool(words) and len(words & said) >= ALREADY_SAID_SHARE * len(words)


def added_context(
    contextd_summary: str, still_seen: str, max_tokens: int = DEFAULT_MAX_TOKENS, *,
    span_entries: Sequence[Mapping[str, Any]] = (), earlier_span: str = "",
) -> str:
    """The parts of `contextd_summary` that what the model still sees after the agent's
    compaction (`still_seen`: its summary, the messages it kept) lacks, within `max_tokens`;
    "" when there is nothing to add. `span_entries` are the span's entries as
    `contextd/history/get` gives them (role, tool, text): the agent's latest replies come from
    them, and the file lists are ordered by how often its calls name each file.
    `earlier_span` is contextd's summary of the span the agent's previous compaction folded,
    when the agent's own summary of it holds almost nothing (EARLIER)."""
    # The daemon's models and tiktoken are imported when a hook adds context, not by every
    # `contextd` command that builds its parser from this package.
    from contextd.compaction.context import HISTORY_TOOLS_LINE

    said = words_of(still_seen)
    sections = sections_of(contextd_summary)
    earlier_sections = sections_of(earlier_span)
    folder = _main_folder([*_file_items(sections), *_file_items(earlier_sections)])
    if folder:
        sections = _relative_to(folder, sections)
        earlier_sections = _relative_to(folder, earlier_sections)
    agent_said = [str(row.get("text") or "") for row in span_entries if row.get("role") == "assistant"]
    sections = _most_named_first(sections, "\n".join([contextd_summary, *agent_said]))
    earlier_sections = _most_named_first(earlier_sections, earlier_span)
    seen: set[str] = set()
    wanted: list[tuple[Part, list[str]]] = []
    for part in PARTS:
        items = [item for item in _items(sections, part.sections) if not already_said(item, said)]
        items = [item if part.whole else _shortened(item) for item in items if _first_time(item, seen)]
        if items:
            wanted.append((part, items))
    replies = [_shortened(f"- {reply}") for reply in _latest_replies(span_entries)]
    if replies := [reply for reply in replies if not already_said(reply, said) and _first_time(reply, seen)]:
        wanted.append((LATEST_REPLIES, replies))
    if earlier := _earlier_items(earlier_sections, said, seen):
        wanted.append((EARLIER, earlier))
    header = HEADER + (FOLDER_NOTE.format(folder=folder) if folder else "")
    budget = max_tokens - tokens(header) - tokens(HISTORY_TOOLS_LINE) - 1
    blocks = [f"### {part.title}\n" + "\n".join(chosen) for part, chosen in _packed(wanted, budget) if chosen]
    if not blocks:
        return ""
    return "\n\n".join([header, *blocks]) + HISTORY_TOOLS_LINE


def _latest_replies(span_entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The agent's newest messages that called no tool (so ended its turn), newest first, on
    one line each."""
    replies = [row for row in span_entries if row.get("role") == "assistant" and not row.get("tool") and row.get("text")]
    return [" ".join(str(row["text"]).split()) for row in reversed(replies[-LATEST_REPLIES_KEPT:])]


def _file_items(sections: dict[str, list[str]]) -> list[str]:
    return [item.removeprefix("- ") for name in FILE_LISTS.values() for item in sections.get(name, [])]


def _main_folder(paths: list[str]) -> str:
    """The folder the agent's relative paths start from (its working folder), found where an
    absolute path of the lists ends with a relative one; "" when none does. Named once, it
    shortens every absolute path in it to the form the agent itself used."""
    relative = {path for path in paths if not path.startswith("/")}
    roots: dict[str, int] = {}
    for path in paths:
        for start in range(len(path)) if path.startswith("/") else ():
            if path[start] == "/" and path[start + 1 :] in relative:
                roots[path[: start + 1]] = roots.get(path[: start + 1], 0) + 1
                break
    return max(roots, key=lambda root: roots[root], default="")


def _most_named_first(sections: dict[str, list[str]], summary: str) -> dict[str, list[str]]:
    """`sections` with each file list ordered by how often the summary names the file
    (the files the work turned on first; the list's own order among equals)."""
    return {
        name: sorted(items, key=lambda path: -summary.count(path)) if name in FILE_LISTS.values() else items
        for name, items in sections.items()
    }


def _relative_to(folder: str, sections: dict[str, list[str]]) -> dict[str, list[str]]:
    """`sections` with the file lists' paths in `folder` given relative to it."""
    lists = set(FILE_LISTS.values())
    return {
        name: [item.removeprefix(folder) if name in lists else item for item in items]
        for name, items in sections.items()
    }


def _earlier_items(sections: dict[str, list[str]], said: set[str], seen: set[str]) -> list[str]:
    """The items of an earlier span's summary, its parts in their order of importance."""
    return [
        _shortened(item)
        for part in PARTS
        for item in _items(sections, part.sections)
        if not already_said(item, said) and _first_time(item, seen)
    ]


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
