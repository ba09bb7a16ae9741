"""What the hook adds after an agent's compaction: contextd's facts the agent's summary
lacks, most important first, within the budget."""

from __future__ import annotations

from contextd_client.agents.added_context import HEADER, added_context, tokens

OURS = """## Goal
- Fix the flaky parser test

## User Messages (newest first)
- "keep the public API unchanged"

## Constraints & Preferences
- Never edit files under vendor/.
- Keep the public API unchanged.

## Progress

### Done
- [x] `make lint` passed

### Blocked
```
`pytest tests/test_parser.py` failed: AssertionError: 41 != 42
```

<modified-files>
src/parser.py
</modified-files>
"""


def test_adds_what_the_agents_summary_lacks() -> None:
    added = added_context(OURS, "The user wants the parser test fixed. Keep the public API unchanged.")
    assert added.startswith(HEADER)
    assert "Never edit files under vendor/." in added
    assert "`pytest tests/test_parser.py` failed: AssertionError: 41 != 42" in added
    assert "src/parser.py" in added
    assert "- Keep the public API unchanged." not in added  # the agent's summary says it


def test_nothing_to_add_when_the_summary_says_it_all() -> None:
    assert added_context(OURS, OURS) == ""


def test_stays_within_the_budget_keeping_the_most_important_first() -> None:
    many = OURS.replace("- Never edit files under vendor/.", "\n".join(f"- Constraint number {i} about module_{i}." for i in range(300)))
    added = added_context(many, "", max_tokens=400)
    assert tokens(added) <= 400 and "Constraint number 0 " in added and "Constraint number 299" not in added
