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
    COMMANDS,
    CONSTRAINTS,
    CRITICAL,
    DECISIONS,
    DONE,
    EARLIER,
    GOAL,
    IN_PROGRESS,
    MODIFIED_FILES,
    NEXT,
    READ_FILES,
    USER_MESSAGES,
    Checkpoint,
    Layout,
    Part,
    count_tokens,
    fit,
    parse_summary,
)
from contextd.summarizers.extract import (
    ERROR_LINE,
    FILE_PATH,
    OFFER,
    Facts,
    extract_facts,
)
from contextd.summarizers.trail import add_commands, fixed_by_clean_runs
from contextd.summarizers.user_messages import one_line

MAX_SUMMARY_TOKENS = 6000
"""However large the budget, a summary is sent with every later request: past this size it
costs more than the detail it adds is worth."""
MAX_GOAL_CHARS = 400
MAX_GOAL_TOKENS = 300
"""An earlier summary's goal (a split turn's whole request) is cut in the middle to this."""
MAX_FOCUS_SENTENCES = 6
MIN_REQUEST_WORDS = 4
"""Shorter user messages ("yes", "go on") steer the work but do not state a goal."""
USER_MESSAGES_SHARE = 0.3
"""At most this share of the budget quotes the user's messages."""
RECENT_USER_MESSAGES = 5
MAX_ROOT_CAUSES = 6
MAX_FINDINGS = 40
MAX_EDITS = 8
RECENT_FINDINGS = 15
MENTIONED = "Files mentioned: "
FIXED_LATER = "Fixed later: "
FAILED_BEFORE = "Failed before its latest run: "
"""Errors kept as context are labelled as history, so that none reads as an open one."""
LINKS = "Links: "
EARLIER_REQUEST = "Earlier request (superseded): "
MODEL_FAILED = "The last model call failed: "
ANSWERED_LATER = ("Wait for the user's answer to: ", "Answer the latest user request")
"""Next steps an earlier summary left that any later user message settles."""

# Ranks: what survives when the summary must shrink (the highest goes last).
CORE = 6
"""The goal the work is for: a summary without it is no use at all."""
ESSENTIAL = 5
IMPORTANT = 4
USEFUL = 3
BACKGROUND = 2
DETAIL = 1
"""The assistant's own account of each edit: the first to go, before the user's older words."""

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
    Part("## User Messages (newest first)", (USER_MESSAGES,), optional=True),
    Part("## Constraints & Preferences", (CONSTRAINTS,)),
    *_PROGRESS,
    Part("## Key Decisions", (DECISIONS,)),
    Part("## Next Steps", (NEXT,)),
    Part("## Critical Context", (CRITICAL,)),
    Part("## Commands (latest run)", (COMMANDS,), optional=True),
    Part("## Earlier Summary (carried forward)", (EARLIER,), optional=True),
    *_FILE_TAGS,
)
TURN_PREFIX_LAYOUT: Layout = (
    Part("## Original Request", (GOAL,)),
    Part("## Constraints & Preferences", (CONSTRAINTS,)),
    Part("## Key Decisions", (DECISIONS,)),
    Part("## Early Progress", (DONE, IN_PROGRESS)),
    # Errors of a turn's beginning: the kept end of the turn shows what came of them.
    Part("### Errors So Far", (BLOCKED,)),
    Part("## Context for the Rest of the Turn", (CRITICAL, NEXT)),
    Part("## Commands (latest run)", (COMMANDS,), optional=True),
    *_FILE_TAGS,
)
HANDOFF_LAYOUT: Layout = (
    Part("## Goal", (GOAL,)),
    Part("## User Messages (newest first)", (USER_MESSAGES,), optional=True),
    Part("## Constraints & Preferences", (CONSTRAINTS,)),
    Part("## Key Decisions", (DECISIONS,)),
    *_PROGRESS,
    Part("## Files", (MODIFIED_FILES, READ_FILES)),
    Part("## Critical Context", (CRITICAL,)),
    Part("## Commands (latest run)", (COMMANDS,), optional=True),
    Part("## Next Steps", (NEXT,)),
    Part("## Earlier Summary (carried forward)", (EARLIER,), optional=True),
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
    if request.followed_by_request:
        _answered_by_the_next_request(facts)
    budget = min(request.max_tokens, MAX_SUMMARY_TOKENS)
    earlier: dict[str, list[str]] = {}
    carried_text: list[str] = []
    for summary in [request.previous_summary or "", *facts.embedded_summaries]:
        if _is_foreign(summary):
            carried_text.append(summary)  # free text (a Claude Code or Codex summary): kept as is
            continue
        for key, items in parse_summary(summary).items():
            earlier.setdefault(key, []).extend(items)
    checkpoint = Checkpoint()
    _add_goals(checkpoint, request, facts, earlier.get(GOAL, []), budget)
    _add_user_messages(checkpoint, facts, earlier.get(USER_MESSAGES, []), budget)
    checkpoint.add_all(CONSTRAINTS, [*earlier.get(CONSTRAINTS, []), *facts.constraints], ESSENTIAL)
    _add_delegation(checkpoint, facts)
    _add_progress(checkpoint, facts, earlier)
    checkpoint.add_all(DECISIONS, [*earlier.get(DECISIONS, []), *facts.decisions], ESSENTIAL)
    _add_next_steps(
        checkpoint, facts, earlier.get(NEXT, []), earlier.get(GOAL, []), request.previous_summary or ""
    )
    _add_critical_context(
        checkpoint,
        request,
        facts,
        earlier.get(CRITICAL, []),
        [*earlier.get(READ_FILES, []), *earlier.get(MODIFIED_FILES, [])],
    )
    add_commands(checkpoint, facts, earlier.get(COMMANDS, []))
    _add_earlier_text(checkpoint, [*earlier.get(EARLIER, []), *_carried_lines(carried_text)])
    # Added last, so that within their rank they go after the carried text: names in code
    # are what a summary of prose keeps worst.
    checkpoint.add_all(CRITICAL, facts.definitions, BACKGROUND)
    _add_files(checkpoint, request, facts, earlier)
    return fit(checkpoint, LAYOUTS[request.kind], budget)


def _answered_by_the_next_request(facts: Facts) -> None:
    """The messages end where the user's next request begins: the question the assistant
    ended on and what it offered are answered, not next steps; they stay on record, since
    the request ("both", "yes") may mean nothing without them."""
    offered = [step for step in facts.next_steps if OFFER.match(step)]
    asked = [facts.question] if facts.question else []
    if offered or asked:
        facts.decisions.append("Put to the user, answered by the request that follows: " + "; ".join([*offered, *asked]))
    facts.question = ""
    facts.next_steps = [step for step in facts.next_steps if step not in offered]


def _add_goals(
    checkpoint: Checkpoint, request: SummaryRequest, facts: Facts, earlier: list[str], budget: int
) -> None:
    """The goal is the current task: the latest message that says what to do, not the first
    message (often a pasted log or an agent's injected instructions)."""
    if request.goal:
        checkpoint.add(GOAL, _one_line(request.goal), CORE)
    # With no message that states a task, the latest substantial one stands in, unless an
    # earlier summary already says what the work is for.
    task = facts.task or ("" if earlier else next(
        (r for r in reversed(facts.requests) if len(r.split()) >= MIN_REQUEST_WORDS), ""
    ))
    if request.kind == "turn_prefix" and facts.requests:
        # The turn's own request, however short ("it's not working"), and whole: the rest
        # of the turn works to it, and a turn's context has no User Messages to quote it.
        task = facts.requests[-1]
        checkpoint.add(GOAL, _within_tokens(task, int(budget * USER_MESSAGES_SHARE)), CORE)
    elif task:
        checkpoint.add(GOAL, _one_line(task), ESSENTIAL if request.goal else CORE)
    for position, goal in enumerate(earlier):
        goal = _within_tokens(goal, MAX_GOAL_TOKENS)
        if position == 0 and facts.finished_earlier_turn:
            # The request of the turn the span finished is done, not the goal any more.
            checkpoint.add(DONE, goal, USEFUL)
        elif (task or request.goal) and not facts.task_continues:
            # The user has asked for something else since: history, not the current goal.
            checkpoint.add(CRITICAL, _labelled(EARLIER_REQUEST, [goal])[0], BACKGROUND)
        else:
            checkpoint.add(GOAL, goal, ESSENTIAL if position == 0 else BACKGROUND)


def _add_user_messages(
    checkpoint: Checkpoint, facts: Facts, earlier: list[str], budget: int
) -> None:
    """Every user message verbatim, newest first, within a share of the budget: the next
    session reads what was asked in the user's own words."""
    budget = int(budget * USER_MESSAGES_SHARE)
    quoted = [_quoted(text) for text in reversed(facts.requests)]
    used = 0
    for position, text in enumerate([*quoted, *earlier]):
        used += count_tokens(text)
        if used > budget and position > 0:
            break
        # Listed newest first, so the insertion order cannot say which to drop first: the
        # rank falls with age, and the oldest messages go before the newer ones.
        rank = ESSENTIAL if position == 0 else IMPORTANT if position < RECENT_USER_MESSAGES else (
            USEFUL if position < 2 * RECENT_USER_MESSAGES else BACKGROUND if position < 3 * RECENT_USER_MESSAGES else DETAIL
        )
        if position >= len(quoted):
            rank = min(rank, USEFUL)
        checkpoint.add(USER_MESSAGES, text, rank)


def _add_delegation(checkpoint: Checkpoint, facts: Facts) -> None:
    """An autonomous run's design: the plan it works to and what it asked of and heard
    from its sub-agents (their briefs' requirements are constraints the work keeps)."""
    if plan := facts.plan:
        checkpoint.add(CRITICAL, plan.headline(), ESSENTIAL)
        checkpoint.add_all(CONSTRAINTS, [f"Plan rule: {rule}" for rule in plan.rules], IMPORTANT)
        checkpoint.add_all(CRITICAL, [f"Plan exit criterion: {item}" for item in plan.criteria], IMPORTANT)
    checkpoint.add_all(CONSTRAINTS, facts.briefs, IMPORTANT)
    checkpoint.add_all(CRITICAL, facts.reports, USEFUL)


def _quoted(text: str) -> str:
    return f"\"{one_line(text)}\""


def _is_foreign(summary: str) -> bool:
    """A summary not written in one of the checkpoint's shapes (an imported Claude Code or
    Codex summary): it cannot be merged section by section, so it is carried forward as
    text. A split turn's summary (`## Original Request`) is ours and merges."""
    return bool(summary.strip()) and not re.search(r"^## (?:Goal|Original Request)\s*$", summary, re.MULTILINE)


def _carried_lines(texts: list[str]) -> list[str]:
    """A free-text summary as lines, code blocks left out (the files hold the code), its
    headings kept as bold labels so that its structure survives the bullets."""
    lines: list[str] = []
    for text in texts:
        fenced = False
        for line in text.splitlines():
            if line.strip().startswith("```"):
                fenced = not fenced
                continue
            if fenced or not line.strip():
                continue
            if heading := _FOREIGN_HEADING.match(line):
                lines.append(f"**{(heading.group(1) or heading.group(2)).strip().rstrip(':')}**")
            else:
                lines.append(re.sub(r"^\s*(?:[-*+]\s+)", "", line).strip())
    return lines


_FOREIGN_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(.+)|\d+\.\s+([^:]{3,60}):\s*)$")


def _add_earlier_text(checkpoint: Checkpoint, lines: list[str]) -> None:
    # Oldest first: when the budget is short, the start of an old summary (its analysis
    # preamble) goes before its conclusions.
    checkpoint.add_all(EARLIER, lines, BACKGROUND)


def _add_progress(checkpoint: Checkpoint, facts: Facts, earlier: dict[str, list[str]]) -> None:
    # An error needs a passing check or a claimed fix to count as gone; started work is
    # also finished by an edit of the file it names.
    evidence = [*facts.done, *facts.checks_passed]
    finished_work = [*evidence, *facts.modified_files]
    # Blocked first: an error string is kept in the first section that takes it.
    still_blocked, fixed_by_runs = fixed_by_clean_runs(earlier.get(BLOCKED, []), facts.succeeded_commands)
    still_blocked, now_resolved = _split(still_blocked, evidence)
    now_resolved = [*fixed_by_runs, *now_resolved]
    checkpoint.add_all(BLOCKED, [*still_blocked, *facts.blocked], ESSENTIAL)
    checkpoint.add_all(CRITICAL, _history(FIXED_LATER, now_resolved), IMPORTANT)
    still_open, now_done = _split(earlier.get(IN_PROGRESS, []), finished_work)
    if facts.todos:
        still_open = []  # the agent's latest task list says what is open now
    # A finished "the test fails" is not an accomplishment: it goes, the fix stays in Done.
    now_done = [item for item in now_done if not PROBLEM_REPORT.search(item)]
    earlier_done, checks, claims = _latest_per_subject(
        [*earlier.get(DONE, []), *now_done], facts.checks_passed, facts.done
    )
    checkpoint.add_all(DONE, earlier_done, BACKGROUND)
    checkpoint.add_all(DONE, checks, USEFUL)
    checkpoint.add_all(DONE, facts.shipped, USEFUL)
    checkpoint.add_all(DONE, [text for status, text in facts.todos if status == "completed"], USEFUL)
    checkpoint.add_all(DONE, facts.edits[-MAX_EDITS:], DETAIL)
    checkpoint.add_all(DONE, claims, BACKGROUND)
    checkpoint.add_all(IN_PROGRESS, still_open, BACKGROUND)
    checkpoint.add_all(IN_PROGRESS, facts.in_progress, USEFUL)
    checkpoint.add_all(
        IN_PROGRESS, [text for status, text in facts.todos if status == "in_progress"], USEFUL
    )


def _add_next_steps(
    checkpoint: Checkpoint, facts: Facts, earlier: list[str], earlier_goals: list[str], previous_summary: str
) -> None:
    steps = list(facts.next_steps)
    if facts.question and not facts.unanswered:
        steps.insert(0, f"Wait for the user's answer to: {facts.question}")
    if facts.unanswered:
        steps.insert(0, "Answer the latest user request (see Goal).")
    steps += [text for status, text in facts.todos if status == "pending"]
    checkpoint.add_all(NEXT, steps, USEFUL)
    if facts.requests or re.search(r"^## Original Request\s*$", previous_summary, re.MULTILINE):
        # The user has spoken since (a split turn's request follows the earlier Next Steps): what waited for their answer or was offered to them
        # is settled, whatever they said.
        earlier = [step for step in earlier if not step.startswith(ANSWERED_LATER) and not OFFER.match(step)]
    # A step the user has since asked for is the current task (or done), not a next step.
    pending, _ = _split(
        earlier, [*facts.done, *facts.checks_passed, *facts.requests, *earlier_goals]
    )
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
        if item.startswith(MODEL_FAILED):
            continue  # about the end of the earlier span: this span came after it
        if item not in earlier_mentions and item not in earlier_links:
            checkpoint.add(CRITICAL, item, IMPORTANT if _is_fact(item) else BACKGROUND)
    if facts.model_error:
        checkpoint.add(CRITICAL, MODEL_FAILED + _one_line(facts.model_error), USEFUL)
    checkpoint.add_all(CRITICAL, _unique(facts.root_causes)[-MAX_ROOT_CAUSES:], IMPORTANT)
    checkpoint.add_all(CRITICAL, _unique(facts.environment), USEFUL)
    findings = _unique(facts.findings)[-MAX_FINDINGS:]
    recent = len(findings) - RECENT_FINDINGS
    for position, finding in enumerate(findings):
        checkpoint.add(CRITICAL, finding, USEFUL if position >= recent else BACKGROUND)
    checkpoint.add_all(CRITICAL, _history(FIXED_LATER, facts.resolved_errors), USEFUL)
    earlier_failures = [item for item in facts.superseded_errors if item not in facts.blocked]
    checkpoint.add_all(CRITICAL, _history(FAILED_BEFORE, earlier_failures), BACKGROUND)
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
    if not terms:
        return []  # nothing can score: spare the checkpoint's word-for-word checks
    # Scored first: only a sentence that scores is worth checking against every item.
    scored = [(s, score) for s in _unique(facts.sentences) if (score := _matches(terms, significant_words(s)))]
    candidates = [(s, score) for s, score in scored if not checkpoint.mentions(s)]
    best = sorted(range(len(candidates)), key=lambda index: (-candidates[index][1], -index))[:MAX_FOCUS_SENTENCES]
    return [candidates[index][0] for index in sorted(best)]


def _matches(terms: set[str], words: set[str]) -> int:
    """How many terms the words contain, a shared stem counting ("limit" ~ "limiter")."""
    return sum(any(word.startswith(term) or term.startswith(word) for word in words) for term in terms)


def _is_fact(text: str) -> bool:
    """Exact strings the next session may need: errors and paths."""
    return bool(ERROR_LINE.search(text) or FILE_PATH.search(text))


def _labelled(label: str, items: Iterable[str]) -> list[str]:
    """History items with their label (a whole error output gets it on its first line, as
    a command's failure has its command there)."""
    return [item if item.startswith(label) else label + item for item in items]


MAX_HISTORY_ERROR_CHARS = 300


def _history(label: str, errors: Iterable[str]) -> list[str]:
    """Errors that no longer block, labelled, each on one line: the next session needs to
    know what went wrong and was dealt with, not the whole output again."""
    return _labelled(label, (one_line(error, MAX_HISTORY_ERROR_CHARS) for error in errors))


def _paths_in(texts: Iterable[str]) -> list[str]:
    return [path for text in texts for path in FILE_PATH.findall(text)]


def _within_tokens(text: str, tokens: int) -> str:
    """A message on one line, whole when it fits `tokens`, else cut in the middle to fit."""
    line = " ".join(text.split())
    size = count_tokens(line)
    return line if size <= tokens else one_line(line, len(line) * tokens // size)


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_GOAL_CHARS else line[: MAX_GOAL_CHARS - 1].rstrip() + "…"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))
