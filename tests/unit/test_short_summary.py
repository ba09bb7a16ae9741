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
    imported = (
        "This session is being continued from a previous conversation. The user is building a "
        "gym onboarding flow.\nMore detail follows."
    )
    assert short_summary(imported) == "This session is being continued from a previous conversation."


@given(st.text(max_size=2000))
def test_always_one_line_within_the_limit(text):
    line = short_summary(text)
    assert "\n" not in line and len(line) <= SHORT_SUMMARY_CHARS
