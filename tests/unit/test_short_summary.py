"""short_summary: the one line a tree preview or tooltip shows for a summary."""

from __future__ import annotations

from contextd.compaction.short_summary import SHORT_SUMMARY_CHARS, short_summary
from hypothesis import given
from hypothesis import strategies as st

CHECKPOINT = """## Goal
Make checkout totals round half-even

## Constraints & Preferences
- Keep the public API

## Progress
### Done
- [x] Found the float sum in cart.py
### In Progress
- [ ] Switching cart.py to Decimal
### Blocked
(none)

## Next Steps
1. Run the cart tests
"""


def test_goal_and_the_work_in_progress():
    assert short_summary(CHECKPOINT) == (
        "Make checkout totals round half-even — now: Switching cart.py to Decimal"
    )


def test_next_step_when_nothing_is_in_progress():
    summary = CHECKPOINT.replace("- [ ] Switching cart.py to Decimal", "(none)")
    assert short_summary(summary) == "Make checkout totals round half-even — next: Run the cart tests"


def test_a_free_text_summary_gives_its_first_sentence():
    imported = "The user is building a gym onboarding flow. More detail follows.\nAnd more."
    assert short_summary(imported) == "The user is building a gym onboarding flow."


def test_an_introduction_is_not_the_first_sentence():
    imported = (
        "This session is being continued from a previous conversation that ran out of context. "
        "The conversation is summarized below:\nAnalysis:\nThe user wants magic-link sign-in."
    )
    assert short_summary(imported) == "The user wants magic-link sign-in."


# Shaped as Claude Code's own /compact summaries in the corpus (claude-code-atlas-*).
CLAUDE_CODE_SUMMARY = """This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:
Analysis:
1. I created a comprehensive todo list:
   - Authentication & Authorization Audit

Summary:
## 1. Primary Request and Intent
The user wanted:
1. A comprehensive multi-agent **security audit** of the entire codebase
2. Automatic fixing of all identified vulnerabilities

## 7. Current Work
Restoring the reverted sanitizer.

## 8. Optional Next Step
Commit the fixes without the husky hook failing.
"""


def test_claude_code_summary_reads_its_request_and_current_work():
    assert short_summary(CLAUDE_CODE_SUMMARY) == (
        "The user wanted: A comprehensive multi-agent security audit of the entire codebase — "
        "now: Restoring the reverted sanitizer."
    )


def test_claude_code_plain_headings_and_next_step():
    summary = (
        "Summary:\n1. Primary Request and Intent:\n   Add a Send Welcome Email button.\n"
        "2. Key Technical Concepts:\n   - Supabase\n9. Optional Next Step:\n   Test the magic link.\n"
    )
    assert short_summary(summary) == "Add a Send Welcome Email button. — next: Test the magic link."


@given(st.text(max_size=2000))
def test_always_one_line_within_the_limit(text):
    line = short_summary(text)
    assert "\n" not in line and len(line) <= SHORT_SUMMARY_CHARS
