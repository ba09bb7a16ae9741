"""The artifact trail: what code, not a model, can say about a span of conversation.

Artifact tracking is where every published summarizer is weakest: a model's summary forgets
which commands ran and how they ended. The trail is computed from the messages (each
command's latest run, the errors nothing later fixed) and appended to an LLM's summary;
the read and modified files are appended by the compaction itself. A later compaction
reads the trail back from the previous summary and carries it forward, updated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.checkpoint import (
    COMMANDS,
    OPEN_ERRORS,
    Checkpoint,
    Layout,
    Part,
    fit,
    parse_summary,
)
from contextd.summarizers.extract import (
    CHECK_COMMAND,
    CONTENT_COMMAND,
    Facts,
    command_subject,
    extract_facts,
    shown_command,
)
from contextd.summarizers.outcomes import main_command

MAX_COMMANDS = 15
TRAIL_SHARE = 0.15
"""At most this share of a summary's budget goes to the trail appended to an LLM summary."""
USEFUL = 3
BACKGROUND = 2

TRAIL_LAYOUT: Layout = (
    Part("## Commands (latest run)", (COMMANDS,), optional=True),
    Part("## Open Errors (computed)", (OPEN_ERRORS,), optional=True),
)
_TRIVIAL = re.compile(
    r"(?:echo|pwd|cd|sleep|git (?:status|log|diff|show|branch)|ps|date|nl|file|stat|du|df|type)\b"
)
_LEADING_ECHOES = re.compile(r"^(?:echo\s+(?:\"[^\"]*\"|'[^']*'|[^;&|]*?)\s*(?:&&|;|\s(?=\S)))+")
FAILED_COMMAND = re.compile(r"^`([^`]+)` failed: ")


def add_commands(checkpoint: Checkpoint, facts: Facts, earlier: list[str]) -> None:
    """Each command's latest run, the newest last; earlier runs of a command run again
    since are replaced by the new one."""
    runs = [run for run in facts.commands.values() if worth_listing(run.command)]
    latest = {shown_command(run.command) for run in runs}
    checkpoint.add_all(COMMANDS, [i for i in earlier if _listed_command(i) not in latest], BACKGROUND)
    for run in runs[-MAX_COMMANDS:]:
        important = run.verdict == "failed" or CHECK_COMMAND.search(run.command)
        checkpoint.add(COMMANDS, run.as_item(), USEFUL if important else BACKGROUND)


def worth_listing(command: str) -> bool:
    """Commands that changed or checked something; reading and searching are not listed."""
    main = _LEADING_ECHOES.sub("", main_command(command))
    return bool(main) and not CONTENT_COMMAND.match(main) and not _TRIVIAL.match(main)


def _listed_command(item: str) -> str:
    match = re.match(r"^`([^`]+)`", item)
    return match.group(1) if match else ""


def fixed_by_clean_runs(items: Iterable[str], clean_commands: Iterable[str]) -> tuple[list[str], list[str]]:
    """Earlier blockers into (still blocked, fixed): a command's failure is fixed once the
    same program has since run clean."""
    failures = [(item, FAILED_COMMAND.match(item)) for item in items]
    if not any(failed for _, failed in failures):
        # Nothing to fix: the clean runs' programs, a command_subject each, are not needed.
        return [item for item, _ in failures], []
    clean = {command_subject(command) for command in clean_commands}
    still: list[str] = []
    fixed: list[str] = []
    for item, failed in failures:
        (fixed if failed and command_subject(failed.group(1)) in clean else still).append(item)
    return still, fixed


def artifact_trail(request: SummaryRequest) -> str:
    """The trail for `request`'s messages, merged with the one its previous summary carries,
    within TRAIL_SHARE of the request's budget; empty when there is nothing to say."""
    facts = extract_facts(request.messages)
    earlier = parse_summary(request.previous_summary or "")
    checkpoint = Checkpoint()
    add_commands(checkpoint, facts, earlier.get(COMMANDS, []))
    still_open, _ = fixed_by_clean_runs(earlier.get(OPEN_ERRORS, []), facts.succeeded_commands)
    checkpoint.add_all(OPEN_ERRORS, [*still_open, *facts.blocked], USEFUL)
    if not checkpoint.all_items():
        return ""
    return fit(checkpoint, TRAIL_LAYOUT, max(1, int(request.max_tokens * TRAIL_SHARE)))


def with_artifact_trail(summary: str, request: SummaryRequest) -> str:
    """An LLM's summary with the computed trail after it."""
    trail = artifact_trail(request)
    return f"{summary.rstrip()}\n\n{trail}" if trail else summary
