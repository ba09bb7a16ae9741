"""The offline summarizer: the checkpoint it writes from a realistic session, what it keeps
under a budget, and how it carries an earlier summary forward."""

from __future__ import annotations

import re

from contextd.compaction.context import COMPACTION_PREAMBLE
from contextd.model import FileDetails, Message
from contextd.summarizers.base import SummaryKind, SummaryRequest
from contextd.summarizers.offline import OfflineSummarizer, summarize_offline
from contextd.tokens import count_message, count_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from tests.summarizers.sessions import (
    OPEN_ERROR,
    PLANTED_CONSTRAINTS,
    PLANTED_DECISIONS,
    PLANTED_ERRORS,
    PLANTED_PATHS,
    RESOLVED_ERROR,
    ratelimit_session,
)

ENCODING = "o200k_base"
CHECKPOINT_HEADINGS = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
]
_messages = TypeAdapter(list[Message])


def request(
    messages: list[Message],
    *,
    kind: SummaryKind = "compaction",
    max_tokens: int = 4000,
    **fields: object,
) -> SummaryRequest:
    return SummaryRequest(
        kind=kind, messages=messages, system_prompt="", prompt="", max_tokens=max_tokens, **fields
    )


def sections(summary: str) -> dict[str, str]:
    """Heading -> the text under it, up to the next heading."""
    parts = re.split(r"^(#{2,3} .+)$", summary, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts), 2)}


OPTIONAL_HEADINGS = {
    "## User Messages (newest first)",
    "## Commands (latest run)",
    "## Earlier Summary (carried forward)",
}
"""Sections printed only when they have something: no "(none)" placeholder for them."""


def headings(summary: str) -> list[str]:
    """The headings that every summary of its kind has, optional sections left out."""
    return [h for h in re.findall(r"^#{1,3} .+$", summary, flags=re.MULTILINE) if h not in OPTIONAL_HEADINGS]


def test_every_section_is_filled_from_a_realistic_session() -> None:
    summary = summarize_offline(request(ratelimit_session()))

    assert headings(summary) == CHECKPOINT_HEADINGS
    body = sections(summary)
    for heading in CHECKPOINT_HEADINGS:
        if heading != "## Progress":
            assert body[heading] and body[heading] != "(none)", heading
    assert "Add rate limiting to the public API" in body["## Goal"]
    assert "- [x] `pytest tests/test_ratelimit.py -q` passed: 12 passed in 0.84s" in body["### Done"]
    assert "- [ ] mypy reports a type error in the limiter." in body["### In Progress"]
    assert OPEN_ERROR in body["### Blocked"]
    assert RESOLVED_ERROR not in body["### Blocked"], "a later green run resolved it"
    assert RESOLVED_ERROR in body["## Critical Context"]
    assert body["## Next Steps"].startswith("1. Next I'll fix the return type of `remaining()`")
    assert "`deploy/config/limits.yaml`" in body["## Critical Context"]
    assert "<modified-files>\nservices/api/ratelimit.py\n</modified-files>" in summary
    assert "<read-files>\nservices/api/app.py\ntests/test_ratelimit.py\n</read-files>" in summary


def test_planted_facts_survive_verbatim() -> None:
    summary = summarize_offline(request(ratelimit_session()))

    for fact in (*PLANTED_PATHS, *PLANTED_CONSTRAINTS, *PLANTED_DECISIONS, *PLANTED_ERRORS):
        assert fact in summary, fact


def test_the_summary_is_far_smaller_than_the_session() -> None:
    messages = ratelimit_session()
    summary = summarize_offline(request(messages))

    before = sum(count_message(message, ENCODING) for message in messages)
    assert count_text(summary, ENCODING) <= 0.3 * before


def test_the_same_input_gives_the_same_output() -> None:
    first = summarize_offline(request(ratelimit_session(), instructions="keep the limiter"))
    again = summarize_offline(request(ratelimit_session(), instructions="keep the limiter"))

    assert first == again


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(max_tokens=st.integers(min_value=40, max_value=1200))
def test_the_budget_is_never_exceeded_and_facts_go_last(max_tokens: int) -> None:
    summary = summarize_offline(request(ratelimit_session(), max_tokens=max_tokens))

    assert count_text(summary, ENCODING) <= max_tokens
    if max_tokens >= 330:
        for fact in (*PLANTED_CONSTRAINTS, *PLANTED_DECISIONS, OPEN_ERROR):
            assert fact in summary, fact


def test_a_tight_budget_drops_the_least_important_first() -> None:
    full = summarize_offline(request(ratelimit_session()))
    tight = summarize_offline(request(ratelimit_session(), max_tokens=330))

    assert len(tight) < len(full)
    assert "Fixed the refill order" not in tight, "a claim of progress goes before facts"
    assert all(constraint in tight for constraint in PLANTED_CONSTRAINTS)
    assert headings(tight) == CHECKPOINT_HEADINGS, "the shape holds whatever the budget"


PREVIOUS_SUMMARY = """## Goal
- Add rate limiting to the public API.

## Constraints & Preferences
- Rate limits are per API key, not per IP address.

## Progress
### Done
- [x] Read services/api/app.py

### In Progress
- [ ] Fix the burst test in tests/test_ratelimit.py
- [ ] Decide how limits reach the dashboard

### Blocked
- FAILED tests/test_ratelimit.py::test_burst - AssertionError: expected 429, got 200

## Key Decisions
- **Redis is out**: the limiter keeps state in process memory.

## Next Steps
1. Ask about the dashboard export format

## Critical Context
- The staging host is api-staging.internal:8443

<read-files>
services/api/app.py
</read-files>

<modified-files>
services/api/ratelimit.py
</modified-files>
"""


def later_messages() -> list[Message]:
    return _messages.validate_python([
        {"role": "user", "content": "Go on with the burst test, and keep the error budget at 1%."},
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "t1", "name": "edit",
             "arguments": {"path": "services/api/ratelimit.py", "old": "a", "new": "b"}}]},
        {"role": "toolResult", "toolCallId": "t1", "toolName": "edit", "content": "ok"},
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "t2", "name": "bash",
             "arguments": {"command": "pytest tests/test_ratelimit.py"}}]},
        {"role": "toolResult", "toolCallId": "t2", "toolName": "bash", "content": "12 passed in 0.8s"},
        {"role": "assistant", "content": [{"type": "text", "text":
            "Fixed the burst test in tests/test_ratelimit.py: the bucket now refills after the check."}]},
    ])


def test_an_earlier_summary_is_carried_forward_and_updated() -> None:
    summary = summarize_offline(request(later_messages(), previous_summary=PREVIOUS_SUMMARY))
    body = sections(summary)

    # The current task leads; the goal carried from the earlier summary follows it.
    assert body["## Goal"] == (
        "- Go on with the burst test, and keep the error budget at 1%.\n- Add rate limiting to the public API."
    )
    assert "Rate limits are per API key, not per IP address." in body["## Constraints & Preferences"]
    assert "keep the error budget at 1%" in body["## Constraints & Preferences"]
    assert "**Redis is out**: the limiter keeps state in process memory." in body["## Key Decisions"]
    assert "- [x] Fix the burst test in tests/test_ratelimit.py" in body["### Done"], "finished now"
    assert "- [ ] Decide how limits reach the dashboard" in body["### In Progress"], "still open"
    assert body["### Blocked"] == "(none)", "the burst failure was fixed"
    assert RESOLVED_ERROR in body["## Critical Context"], "the exact error is still on record"
    assert "The staging host is api-staging.internal:8443" in body["## Critical Context"]
    assert "Ask about the dashboard export format" in body["## Next Steps"]
    assert "<read-files>\nservices/api/app.py\n</read-files>" in summary
    assert summary.count("services/api/ratelimit.py\n") == 1


def test_a_summary_inside_the_messages_is_merged_not_taken_as_a_request() -> None:
    messages = _messages.validate_python(
        [{"role": "user", "content": COMPACTION_PREAMBLE + PREVIOUS_SUMMARY}, *later_messages()]
    )

    body = sections(summarize_offline(request(messages)))

    assert "The conversation history" not in body["## Goal"]
    assert "Rate limits are per API key, not per IP address." in body["## Constraints & Preferences"]


def test_files_from_the_request_join_those_of_the_tool_calls() -> None:
    files = FileDetails(readFiles=["README.md", "services/api/app.py"], modifiedFiles=["setup.cfg"])

    summary = summarize_offline(request(ratelimit_session(), files=files))

    assert "<read-files>\nREADME.md\nservices/api/app.py\ntests/test_ratelimit.py\n</read-files>" in summary
    assert "<modified-files>\nsetup.cfg\nservices/api/ratelimit.py\n</modified-files>" in summary


def test_a_short_failed_tool_output_is_kept_whole() -> None:
    output = "Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\nKeyError: 'LIMIT'"
    messages = _messages.validate_python([
        {"role": "user", "content": "Run the script please."},
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "x", "name": "bash", "arguments": {"command": "python run.py"}}]},
        {"role": "toolResult", "toolCallId": "x", "toolName": "bash", "content": output, "isError": True},
    ])

    body = sections(summarize_offline(request(messages)))

    assert body["### Blocked"] == f"```\n`python run.py` failed: {output}\n```"
    assert "Resolve the blocking error" not in body["## Next Steps"], "no step that says nothing"


def test_open_work_an_unanswered_request_and_a_pending_call() -> None:
    messages = _messages.validate_python([
        {"role": "user", "content": "Rename the limiter module to throttle everywhere."},
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "g", "name": "grep", "arguments": {"pattern": "ratelimit", "path": "services"}}]},
    ])

    body = sections(summarize_offline(request(messages)))

    assert body["### In Progress"] == "- [ ] Waiting on `grep services`"

    unanswered = [*messages, *_messages.validate_python([{"role": "user", "content": "Also update the docs for it."}])]
    body = sections(summarize_offline(request(unanswered)))
    assert body["## Next Steps"].startswith("1. Answer the latest user request")
    assert "- Also update the docs for it." in body["## Goal"]


def test_an_empty_conversation_gives_the_empty_shape() -> None:
    summary = summarize_offline(request([]))

    assert headings(summary) == CHECKPOINT_HEADINGS
    assert summary.count("(none)") == 8


def test_turn_prefix_shape() -> None:
    messages = ratelimit_session()[6:12]

    summary = summarize_offline(request(messages, kind="turn_prefix"))

    assert headings(summary) == [
        "## Original Request", "## Constraints & Preferences", "## Key Decisions",
        "## Early Progress", "### Errors So Far", "## Context for the Rest of the Turn",
    ]
    body = sections(summary)
    assert "deploy/config/limits.yaml" in body["## Original Request"]
    assert "don't add new dependencies" in body["## Constraints & Preferences"]
    assert "- [ ] Waiting on `edit services/api/ratelimit.py`" in body["## Early Progress"]
    assert RESOLVED_ERROR in body["### Errors So Far"]  # not fixed yet within this prefix


def test_branch_summary_has_the_checkpoint_shape() -> None:
    assert headings(summarize_offline(request(ratelimit_session(), kind="branch"))) == CHECKPOINT_HEADINGS


def test_handoff_document_leads_with_the_goal() -> None:
    goal = "Finish the mypy fix and document the limits"

    summary = summarize_offline(request(ratelimit_session(), kind="handoff", goal=goal))

    assert headings(summary) == [
        "## Goal", "## Constraints & Preferences", "## Key Decisions", "## Progress",
        "### Done", "### In Progress", "### Blocked", "## Files", "## Critical Context",
        "## Next Steps",
    ]
    body = sections(summary)
    assert body["## Goal"].startswith(f"- {goal}")
    assert "- services/api/ratelimit.py (modified)" in body["## Files"]
    assert "- services/api/app.py (read)" in body["## Files"]
    assert "The limits will come from the config file." in body["## Critical Context"], "on the goal"
    for fact in (*PLANTED_CONSTRAINTS, *PLANTED_DECISIONS, OPEN_ERROR):
        assert fact in summary


def test_instructions_bring_in_the_sentences_they_ask_for() -> None:
    plain = summarize_offline(request(ratelimit_session()))
    focused = summarize_offline(request(ratelimit_session(), instructions="Keep what we know about the bucket refill"))

    sentence = "The burst test fails because the bucket refills before the check."
    assert sentence not in plain
    assert sentence in sections(focused)["## Critical Context"]


async def test_the_summarizer_object_runs_off_the_event_loop() -> None:
    summarizer = OfflineSummarizer()

    text = await summarizer.summarize(request(ratelimit_session()))

    assert (summarizer.provider, summarizer.model) == ("offline", None)
    assert text == summarize_offline(request(ratelimit_session()))


def test_code_and_search_hits_that_mention_errors_are_not_errors() -> None:
    source = "def load(path):\n    try:\n        return read(path)\n    except KeyError:\n        raise ValueError('bad config')\n"
    messages = _messages.validate_python([
        {"role": "user", "content": "Look at how config loading handles failures."},
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "r", "name": "read", "arguments": {"path": "src/config.py"}},
            {"type": "toolCall", "id": "g", "name": "bash", "arguments": {"command": "grep -rn ValueError src"}}]},
        {"role": "toolResult", "toolCallId": "r", "toolName": "read", "content": source},
        {"role": "toolResult", "toolCallId": "g", "toolName": "bash",
         "content": "src/config.py:5:        raise ValueError('bad config')\nsrc/cli.py:9: except ValueError as error:"},
        {"role": "assistant", "content": [{"type": "text", "text": "Config errors become ValueError."}]},
    ])

    body = sections(summarize_offline(request(messages)))

    assert body["### Blocked"] == "(none)"
    assert "raise ValueError" not in body["## Critical Context"]


def test_a_failure_is_resolved_by_a_later_green_run_of_the_same_check() -> None:
    messages = _messages.validate_python([
        {"role": "user", "content": "Make the parser tests pass."},
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "a", "name": "bash", "arguments": {"command": "python -m pytest tests/test_parser.py"}}]},
        {"role": "toolResult", "toolCallId": "a", "toolName": "bash", "isError": True,
         "content": "FAILED tests/test_parser.py::test_empty - IndexError: list index out of range\n1 failed"},
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "b", "name": "bash", "arguments": {"command": "mypy src"}}]},
        {"role": "toolResult", "toolCallId": "b", "toolName": "bash", "isError": True,
         "content": "src/parser.py:3: error: Name \"Token\" is not defined  [name-defined]"},
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "pytest -q"}}]},
        {"role": "toolResult", "toolCallId": "c", "toolName": "bash", "content": "40 passed in 1.2s"},
    ])

    body = sections(summarize_offline(request(messages)))

    assert body["### Blocked"] == (
        '- `mypy src` failed: src/parser.py:3: error: Name "Token" is not defined  [name-defined]'
    ), "mypy never passed"
    assert "IndexError: list index out of range" in body["## Critical Context"]
    assert "- [x] `pytest -q` passed: 40 passed in 1.2s" in body["### Done"]


def test_done_keeps_only_the_latest_word_on_a_check_or_the_test_count() -> None:
    previous = (
        "## Goal\n- Keep the ledger tests green.\n\n## Progress\n\n### Done\n"
        "- [x] `python -m pytest -q` passed: 150 passed in 3.1s\n"
        "- [x] All 150 tests pass.\n"
        "- [x] Added banker's rounding to ledger/money.py.\n"
    )
    messages = _messages.validate_python([
        {"role": "user", "content": "Now make the closing date inclusive, and run the tests."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Running the suite."},
            {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "python -m pytest -q"}},
        ], "stopReason": "toolUse"},
        {"role": "toolResult", "toolCallId": "t1", "toolName": "bash", "content": "151 passed in 3.4s"},
        {"role": "assistant", "content": [{"type": "text", "text": "All 151 tests pass."}]},
    ])

    done = sections(summarize_offline(request(messages, previous_summary=previous)))["### Done"]

    assert "`python -m pytest -q` passed: 151 passed in 3.4s" in done
    assert "150 passed in 3.1s" not in done
    assert "All 151 tests pass." in done and "All 150 tests pass." not in done
    assert "Added banker's rounding to ledger/money.py." in done  # work, not a re-run: kept


def test_finished_work_moves_to_done_without_narration_or_problem_reports() -> None:
    previous = (
        "## Goal\n- Make the closing date inclusive.\n\n## Progress\n\n### In Progress\n"
        "- [ ] Make the closing date inclusive in ledger/closing.py\n"
        "- [ ] Another failure from my change in ledger/closing.py.\n"
    )
    messages = _messages.validate_python([
        {"role": "assistant", "content": [
            {"type": "toolCall", "id": "e1", "name": "edit", "arguments": {"path": "ledger/closing.py"}},
        ], "stopReason": "toolUse"},
        {"role": "toolResult", "toolCallId": "e1", "toolName": "edit", "content": "ok"},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me find where `migrate` lives. I'll read it next."}]},
    ])

    body = sections(summarize_offline(request(messages, previous_summary=previous)))

    assert "Make the closing date inclusive in ledger/closing.py" in body["### Done"]
    assert "Another failure" not in body["### Done"]
    assert "Let me find" not in body["### In Progress"]


def test_a_blocker_from_an_earlier_summary_is_cleared_by_a_clean_run_of_its_command() -> None:
    previous = (
        "## Goal\n- Make the importer script work.\n\n## Progress\n\n### Blocked\n"
        "- `python scripts/import.py data.csv` failed: KeyError: 'currency_code'\n"
        "- `mypy src` failed: src/parser.py:3: error: Name \"Token\" is not defined\n"
    )
    messages = _messages.validate_python([
        {"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": "r", "name": "bash", "arguments": {"command": "python scripts/import.py other.csv"}}]},
        {"role": "toolResult", "toolCallId": "r", "toolName": "bash", "content": "imported 12 rows"},
    ])

    body = sections(summarize_offline(request(messages, previous_summary=previous)))

    assert "KeyError: 'currency_code'" not in body["### Blocked"]
    assert "KeyError: 'currency_code'" in body["## Critical Context"]  # still on record
    assert "`mypy src` failed" in body["### Blocked"]  # mypy has not run clean since
