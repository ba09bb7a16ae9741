"""What contextd adds after an agent's own compaction: the facts of contextd's summary of the
same span that the agent's summary does not hold, within a token budget.

Pure: text in, text out (the hook command does the talking to the daemon)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from contextd.compaction.context import HISTORY_TOOLS_LINE
from contextd.tokens import count_text

BUDGET_ENCODING = "o200k_base"
DEFAULT_MAX_TOKENS = 2000
HEADER = (
    "contextd, which keeps this session's whole history, adds what the compaction summary "
    "above does not hold (taken from the conversation before the compaction):"
)
WORD = re.compile(r"[\w./-]{3,}", re.UNICODE)
ALREADY_SAID_SHARE = 0.8
"""An item whose words are this much in the agent's summary already is not repeated."""


@dataclass(frozen=True)
class Part:
    """A section of the added context: the summary sections it draws from, and its title."""

    title: str
    sections: tuple[str, ...]


PARTS = (
    Part("Standing constraints and preferences (the user's words)", ("Constraints & Preferences",)),
    Part("Open errors (with the command that shows them)", ("Blocked", "Open Errors (computed)")),
    Part("Commands, latest outcome", ("Commands (latest run)",)),
    Part("Done, as the latest runs left it", ("Done",)),
    Part("Files modified", ("Files modified",)),
    Part("The user's latest messages, verbatim", ("User Messages (newest first)",)),
    Part("Where the work stands", ("In Progress", "Next Steps")),
    Part("Decisions and context", ("Key Decisions", "Critical Context")),
)


def sections_of(summary: str) -> dict[str, list[str]]:
    """The items (bullets, or a fenced block as one item) of each `##`/`###` section, and the
    `<modified-files>` list as the section "Files modified"."""
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
        if heading:
            current = sections.setdefault(heading.group(1).strip(), [])
        elif line.strip() == "<modified-files>":
            current = sections.setdefault("Files modified", [])
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


def added_context(contextd_summary: str, agent_summary: str, max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """The parts of `contextd_summary` the agent's summary lacks, most important first, cut
    at `max_tokens` (whole items only); "" when there is nothing to add."""
    said = words_of(agent_summary)
    sections = sections_of(contextd_summary)
    budget = max_tokens - tokens(HEADER) - tokens(HISTORY_TOOLS_LINE)
    blocks: list[str] = []
    for part in PARTS:
        items = [item for item in _items(sections, part.sections) if not already_said(item, said)]
        block = _fitting(part.title, items, budget)
        if block:
            blocks.append(block)
            budget -= tokens(block) + 1
    if not blocks:
        return ""
    return "\n\n".join([HEADER, *blocks]) + HISTORY_TOOLS_LINE


def _items(sections: dict[str, list[str]], names: Iterable[str]) -> list[str]:
    found: list[str] = []
    for name in names:
        for item in sections.get(name, []):
            bullet = item if item.startswith(("-", "`", "1")) else f"- {item}"
            if bullet not in found and item not in ("- (none)", "(none)"):
                found.append(bullet)
    return found


def _fitting(title: str, items: list[str], budget: int) -> str:
    """`### title` and as many items as fit in `budget` tokens, in order."""
    lines = [f"### {title}"]
    used = tokens(lines[0])
    for item in items:
        cost = tokens(item) + 1
        if used + cost > budget:
            break
        lines.append(item)
        used += cost
    return "\n".join(lines) if len(lines) > 1 else ""


def tokens(text: str) -> int:
    return count_text(text, BUDGET_ENCODING)
