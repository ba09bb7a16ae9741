"""The default summarizer: extractive, deterministic, no network.

It reads the facts of the conversation (see `extract.py`), merges them into the previous
summary when there is one, and prints the checkpoint shape that fits the request's kind,
within `max_tokens`. Exact strings (errors, paths, the user's own words for constraints)
are copied, never paraphrased, because the next session acts on them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable

from contextd.model import SummarizerSettings
from contextd.summarizers.base import SummaryKind, SummaryRequest
from contextd.summarizers.checkpoint import (
    BLOCKED,
    CONSTRAINTS,
    CRITICAL,
    DECISIONS,
    DONE,
    GOAL,
    IN_PROGRESS,
    MODIFIED_FILES,
    NEXT,
    READ_FILES,
    Checkpoint,
    Layout,
    Part,
    fit,
    parse_summary,
)
from contextd.summarizers.extract import (
    ERROR_LINE,
    FILE_PATH,
    Facts,
    command_subject,
    extract_facts,
)

MAX_GOAL_CHARS = 400
MAX_FOCUS_SENTENCES = 6
MIN_REQUEST_WORDS = 4
"""Shorter user messages ("yes", "go on") steer the work but do not state a goal."""
MENTIONED = "Files mentioned: "
LINKS = "Links: "

# Ranks: what survives when the summary must shrink (the highest goes last).
CORE = 6
"""The goal the work is for: a summary without it is no use at all."""
ESSENTIAL = 5
IMPORTANT = 4
USEFUL = 3
BACKGROUND = 2

_PROGRESS = (
    Part("## Progress"),
    Part("### Done", (DONE,)),
    Part("### In Progress", (IN_PROGRESS,)),
    Part("### Blocked", (BLOCKED,)),
)
_FILE_TAGS = (
    Part(None, (READ_FILES,), tag="read-files"),
    Part(None, (MODIFIED_FILES,), tag="modified-files"),
)
CHECKPOINT_LAYOUT: Layout = (
    Part("## Goal", (GOAL,)),
    Part("## Constraints & Preferences", (CONSTRAINTS,)),
    *_PROGRESS,
    Part("## Key Decisions", (DECISIONS,)),
    Part("## Next Steps", (NEXT,)),
    Part("## Critical Context", (CRITICAL,)),
    *_FILE_TAGS,
)
TURN_PREFIX_LAYOUT: Layout = (
    Part("## Original Request", (GOAL,)),
    Part("## Constraints & Preferences", (CONSTRAINTS,)),
    Part("## Key Decisions", (DECISIONS,)),
    Part("## Early Progress", (DONE, IN_PROGRESS)),
    Part("### Blocked", (BLOCKED,)),
    Part("## Context for the Rest of the Turn", (CRITICAL, NEXT)),
    *_FILE_TAGS,
)
HANDOFF_LAYOUT: Layout = (
    Part("## Goal", (GOAL,)),
    Part("## Constraints & Preferences", (CONSTRAINTS,)),
    Part("## Key Decisions", (DECISIONS,)),
    *_PROGRESS,
    Part("## Files", (MODIFIED_FILES, READ_FILES)),
    Part("## Critical Context", (CRITICAL,)),
    Part("## Next Steps", (NEXT,)),
)
LAYOUTS: dict[SummaryKind, Layout] = {
    "compaction": CHECKPOINT_LAYOUT,
    "branch": CHECKPOINT_LAYOUT,
    "turn_prefix": TURN_PREFIX_LAYOUT,
    "handoff": HANDOFF_LAYOUT,
}


class OfflineSummarizer:
    provider = "offline"
    model: str | None = None

    def __init__(self, settings: SummarizerSettings | None = None) -> None:
        """Takes the settings like every summarizer; it needs none of them."""

    async def summarize(self, request: SummaryRequest) -> str:
        # A long session takes a moment to scan: keep the daemon's loop free meanwhile.
        return await asyncio.to_thread(summarize_offline, request)


def summarize_offline(request: SummaryRequest) -> str:
    """The checkpoint for `request`: the same request always gives the same text."""
    facts = extract_facts(request.messages)
    earlier: dict[str, list[str]] = {}
    for summary in [request.previous_summary or "", *facts.embedded_summaries]:
        for key, items in parse_summary(summary).items():
            earlier.setdefault(key, []).extend(items)
    checkpoint = Checkpoint()
    _add_goals(checkpoint, request, facts, earlier.get(GOAL, []))
    checkpoint.add_all(CONSTRAINTS, [*earlier.get(CONSTRAINTS, []), *facts.constraints], ESSENTIAL)
    _add_progress(checkpoint, facts, earlier)
    checkpoint.add_all(DECISIONS, [*earlier.get(DECISIONS, []), *facts.decisions], ESSENTIAL)
    _add_next_steps(checkpoint, facts, earlier.get(NEXT, []))
    _add_critical_context(
        checkpoint,
        request,
        facts,
        earlier.get(CRITICAL, []),
        [*earlier.get(READ_FILES, []), *earlier.get(MODIFIED_FILES, [])],
    )
    _add_files(checkpoint, request, facts, earlier)
    return fit(checkpoint, LAYOUTS[request.kind], request.max_tokens)


def _add_goals(
    checkpoint: Checkpoint, request: SummaryRequest, facts: Facts, earlier: list[str]
) -> None:
    if request.goal:
        checkpoint.add(GOAL, _one_line(request.goal), CORE)
    for position, goal in enumerate(earlier):
        checkpoint.add(GOAL, goal, ESSENTIAL if position == 0 else BACKGROUND)
    requests = [r for r in facts.requests if len(r.split()) >= MIN_REQUEST_WORDS] or facts.requests
    if not requests:
        return
    first_rank = BACKGROUND if earlier else ESSENTIAL
    checkpoint.add(GOAL, _one_line(requests[0]), first_rank)
    checkpoint.add(GOAL, _one_line(requests[-1]), ESSENTIAL if request.goal else CORE)


def _add_progress(checkpoint: Checkpoint, facts: Facts, earlier: dict[str, list[str]]) -> None:
    # An error needs a passing check or a claimed fix to count as gone; started work is
    # also finished by an edit of the file it names.
    evidence = [*facts.done, *facts.checks_passed]
    finished_work = [*evidence, *facts.modified_files]
    # Blocked first: an error string is kept in the first section that takes it.
    still_blocked, fixed_by_runs = _fixed_by_clean_runs(earlier.get(BLOCKED, []), facts.succeeded_commands)
    still_blocked, now_resolved = _split(still_blocked, evidence)
    now_resolved = [*fixed_by_runs, *now_resolved]
    checkpoint.add_all(BLOCKED, [*still_blocked, *facts.blocked], ESSENTIAL)
    checkpoint.add_all(CRITICAL, now_resolved, IMPORTANT)
    still_open, now_done = _split(earlier.get(IN_PROGRESS, []), finished_work)
    # A finished "the test fails" is not an accomplishment: it goes, the fix stays in Done.
    now_done = [item for item in now_done if not PROBLEM_REPORT.search(item)]
    earlier_done, checks, claims = _latest_per_subject(
        [*earlier.get(DONE, []), *now_done], facts.checks_passed, facts.done
    )
    checkpoint.add_all(DONE, earlier_done, BACKGROUND)
    checkpoint.add_all(DONE, checks, USEFUL)
    checkpoint.add_all(DONE, claims, BACKGROUND)
    checkpoint.add_all(IN_PROGRESS, still_open, BACKGROUND)
    checkpoint.add_all(IN_PROGRESS, facts.in_progress, USEFUL)


def _add_next_steps(checkpoint: Checkpoint, facts: Facts, earlier: list[str]) -> None:
    steps = list(facts.next_steps)
    if facts.unanswered:
        steps.insert(0, "Answer the latest user request (see Goal).")
    if not steps and facts.blocked:
        steps.append("Resolve the blocking error quoted above.")
    checkpoint.add_all(NEXT, steps, USEFUL)
    pending, _ = _split(earlier, [*facts.done, *facts.checks_passed])
    checkpoint.add_all(NEXT, pending, BACKGROUND)


def _add_critical_context(
    checkpoint: Checkpoint,
    request: SummaryRequest,
    facts: Facts,
    earlier: list[str],
    earlier_files: list[str],
) -> None:
    earlier_mentions = [item for item in earlier if item.startswith(MENTIONED)]
    earlier_links = [item for item in earlier if item.startswith(LINKS)]
    for item in earlier:
        if item not in earlier_mentions and item not in earlier_links:
            checkpoint.add(CRITICAL, item, IMPORTANT if _is_fact(item) else BACKGROUND)
    checkpoint.add_all(CRITICAL, facts.resolved_errors, IMPORTANT)
    checkpoint.add_all(CRITICAL, _focus_sentences(checkpoint, request, facts), IMPORTANT)
    known = {*facts.read_files, *facts.modified_files, *request.files.readFiles,
             *request.files.modifiedFiles, *earlier_files}
    mentioned = [
        path
        for path in _unique([*_paths_in(earlier_mentions), *facts.mentioned_files])
        if path not in known
    ]
    if mentioned:
        checkpoint.add(CRITICAL, MENTIONED + ", ".join(f"`{p}`" for p in mentioned), IMPORTANT)
    links = _unique([*(link for item in earlier_links for link in item[len(LINKS):].split()),
                     *facts.links])
    if links:
        checkpoint.add(CRITICAL, LINKS + " ".join(links), BACKGROUND)


def _add_files(
    checkpoint: Checkpoint, request: SummaryRequest, facts: Facts, earlier: dict[str, list[str]]
) -> None:
    modified = _unique(
        [*earlier.get(MODIFIED_FILES, []), *request.files.modifiedFiles, *facts.modified_files]
    )
    read = _unique([*earlier.get(READ_FILES, []), *request.files.readFiles, *facts.read_files])
    checkpoint.add_all(MODIFIED_FILES, modified, ESSENTIAL)
    checkpoint.add_all(READ_FILES, [path for path in read if path not in modified], IMPORTANT)


# --- merging with an earlier summary ---------------------------------------------------

_STOPWORDS = frozenset(
    ["the", "and", "for", "with", "that", "this", "from", "into", "have", "has", "was", "were", "will", "would", "should", "could", "then", "than", "them", "they", "their", "there", "these", "those", "what", "when", "where", "which", "while", "about", "after", "before", "being", "been", "also", "just", "only", "some", "more", "most", "other", "such", "each", "make", "made", "does", "done", "need", "needs", "still", "all", "any", "not", "but", "are", "can", "its", "it's", "our", "your", "you", "use", "using", "used"]
)


_INSTRUCTION_WORDS = frozenset(
    ["keep", "focus", "preserve", "remember", "important", "details", "everything", "know", "mention", "summary", "summarize", "include", "especially", "mainly"]
)


def significant_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z0-9_]{3,}", text.lower()) if w not in _STOPWORDS}


def _split(items: list[str], finished_work: list[str]) -> tuple[list[str], list[str]]:
    """Earlier items into (still open, finished by the new work): finished when the new
    work names the same file, or most of the item's words."""
    finished_paths = {path for text in finished_work for path in _paths_in([text])}
    finished_words = [significant_words(text) for text in finished_work]
    still: list[str] = []
    finished: list[str] = []
    for item in items:
        words = significant_words(item)
        done = bool(finished_paths & set(_paths_in([item]))) or (
            len(words) >= 2 and any(len(words & new) >= 0.6 * len(words) for new in finished_words)
        )
        (finished if done else still).append(item)
    return still, finished


PROBLEM_REPORT = re.compile(r"\b(?:fail(?:s|ed|ure|ing)?|errors?|broken|breaks)\b", re.IGNORECASE)
FAILED_COMMAND = re.compile(r"^`([^`]+)` failed: ")


def _fixed_by_clean_runs(items: list[str], clean_commands: list[str]) -> tuple[list[str], list[str]]:
    """Earlier blockers into (still blocked, fixed): a command's failure is fixed once the
    same program has since run clean."""
    clean = {command_subject(command) for command in clean_commands}
    still: list[str] = []
    fixed: list[str] = []
    for item in items:
        failed = FAILED_COMMAND.match(item)
        (fixed if failed and command_subject(failed.group(1)) in clean else still).append(item)
    return still, fixed


CHECK_RESULT = re.compile(r"^(?:\[x\] )?`([^`]+)` (?:passed|failed)")
TEST_COUNT_CLAIM = re.compile(r"^(?:\[x\] )?(?:all )?\d+ tests? pass(?:es|ed)?\.?$", re.IGNORECASE)


def _subject(item: str) -> str | None:
    """What a Done item is the latest word on: a check's command, or the test count."""
    if match := CHECK_RESULT.match(item):
        return match.group(1)
    if TEST_COUNT_CLAIM.match(item.strip()):
        return "the test count"
    return None


def _latest_per_subject(*groups: list[str]) -> list[list[str]]:
    """The groups (oldest first) without items a later item supersedes: a command run again,
    the test count said again. Ten "All N tests pass" lines tell the next session nothing."""
    last_seen: dict[str, tuple[int, int]] = {}
    for group_index, group in enumerate(groups):
        for item_index, item in enumerate(group):
            if (subject := _subject(item)) is not None:
                last_seen[subject] = (group_index, item_index)
    return [
        [
            item
            for item_index, item in enumerate(group)
            if (subject := _subject(item)) is None or last_seen[subject] == (group_index, item_index)
        ]
        for group_index, group in enumerate(groups)
    ]


# --- helpers ---------------------------------------------------------------------------


def _focus_sentences(
    checkpoint: Checkpoint, request: SummaryRequest, facts: Facts
) -> list[str]:
    """The sentences most about what the instructions or the handoff goal ask to keep, in
    their order, leaving out those the checkpoint already says."""
    terms = significant_words(" ".join(filter(None, [request.instructions, request.goal])))
    terms -= _INSTRUCTION_WORDS
    candidates = [s for s in _unique(facts.sentences) if not checkpoint.mentions(s)]
    scores = {s: _matches(terms, significant_words(s)) for s in candidates}
    best = sorted(
        (s for s in candidates if scores[s]),
        key=lambda s: (-scores[s], -candidates.index(s)),
    )[:MAX_FOCUS_SENTENCES]
    return [s for s in candidates if s in best]


def _matches(terms: set[str], words: set[str]) -> int:
    """How many terms the words contain, a shared stem counting ("limit" ~ "limiter")."""
    return sum(any(word.startswith(term) or term.startswith(word) for word in words) for term in terms)


def _is_fact(text: str) -> bool:
    """Exact strings the next session may need: errors and paths."""
    return bool(ERROR_LINE.search(text) or FILE_PATH.search(text))


def _paths_in(texts: Iterable[str]) -> list[str]:
    return [path for text in texts for path in FILE_PATH.findall(text)]


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_GOAL_CHARS else line[: MAX_GOAL_CHARS - 1].rstrip() + "…"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))
