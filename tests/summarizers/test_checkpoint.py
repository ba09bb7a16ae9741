"""Checkpoint markdown: what is printed can be read back, and the budget cuts by rank."""

from __future__ import annotations

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
    count_tokens,
    fit,
    parse_summary,
    render,
)
from contextd.summarizers.offline import (
    CHECKPOINT_LAYOUT,
    HANDOFF_LAYOUT,
    TURN_PREFIX_LAYOUT,
)
from hypothesis import given
from hypothesis import strategies as st

KEYS = [GOAL, CONSTRAINTS, DONE, IN_PROGRESS, BLOCKED, DECISIONS, NEXT, CRITICAL]
FILE_KEYS = [READ_FILES, MODIFIED_FILES]

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
sentence = st.builds(
    lambda first, rest, end: (first + " " + " ".join(rest) + end).strip(),
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=1),
    st.lists(words, max_size=8),
    st.sampled_from(["", ".", ": `x = 1`", " (see src/app.py)", " 'quoted'"]),
)
path = st.builds("/".join, st.lists(words, min_size=1, max_size=4)).map(lambda p: p + ".py")


@given(
    items=st.dictionaries(st.sampled_from(KEYS), st.lists(sentence, max_size=4, unique=True)),
    files=st.dictionaries(st.sampled_from(FILE_KEYS), st.lists(path, max_size=4, unique=True)),
)
def test_a_rendered_checkpoint_reads_back_the_same(
    items: dict[str, list[str]], files: dict[str, list[str]]
) -> None:
    for layout in (CHECKPOINT_LAYOUT, HANDOFF_LAYOUT):
        checkpoint = Checkpoint()
        for key, texts in {**items, **files}.items():
            checkpoint.add_all(key, texts, 3)
        expected = {
            key: [item.text for item in checkpoint.items(key)]
            for key in [*KEYS, *FILE_KEYS]
            if checkpoint.items(key)
        }

        assert parse_summary(render(checkpoint, layout)) == expected


def test_a_summary_written_by_a_model_is_read_by_its_headings() -> None:
    summary = """The conversation history before this point was compacted:

## Goal
Ship the exporter.

## Constraints and Preferences:
* Keep CSV output byte-identical
  to the old tool.

## Progress
### Done
- [x] Parser rewritten
### In Progress
- [ ] Streaming writer
### Blocked
(none)

## Key Decisions
- **Use csv module**: fewer surprises

## Open Questions
- Is Windows in scope?

## Next Steps
1. Benchmark the writer
2) Ask about Windows

## Critical Context
```
Traceback (most recent call last):
ValueError: bad row
```

<read-files>
src/exporter.py
</read-files>
"""

    assert parse_summary(summary) == {
        GOAL: ["Ship the exporter."],
        CONSTRAINTS: ["Keep CSV output byte-identical to the old tool."],
        DONE: ["Parser rewritten"],
        IN_PROGRESS: ["Streaming writer"],
        DECISIONS: ["**Use csv module**: fewer surprises"],
        CRITICAL: ["Is Windows in scope?", "Traceback (most recent call last):\nValueError: bad row"],
        NEXT: ["Benchmark the writer", "Ask about Windows"],
        READ_FILES: ["src/exporter.py"],
    }


def test_a_block_with_backticks_gets_a_longer_fence() -> None:
    checkpoint = Checkpoint()
    checkpoint.add(BLOCKED, "SyntaxError: ```\nunterminated fence", 5)

    text = render(checkpoint, CHECKPOINT_LAYOUT)

    assert "````\nSyntaxError: ```\nunterminated fence\n````" in text
    assert parse_summary(text)[BLOCKED] == ["SyntaxError: ```\nunterminated fence"]


def test_a_line_already_quoted_in_an_error_block_is_not_repeated() -> None:
    checkpoint = Checkpoint()
    checkpoint.add(BLOCKED, "Traceback (most recent call last):\nKeyError: 'id'", 5)
    checkpoint.add(CRITICAL, "KeyError: 'id'", 4)
    checkpoint.add(BLOCKED, "KeyError: 'id'", 5)
    checkpoint.add(MODIFIED_FILES, "KeyError: 'id'", 5)  # file lists are their own namespace

    assert [item.text for item in checkpoint.all_items()] == [
        "Traceback (most recent call last):\nKeyError: 'id'",
        "KeyError: 'id'",
    ]


def test_fit_drops_lower_ranks_then_older_items() -> None:
    checkpoint = Checkpoint()
    checkpoint.add(DONE, "old background item " + "x" * 200, 2)
    checkpoint.add(DONE, "new background item " + "y" * 200, 2)
    checkpoint.add(CONSTRAINTS, "Never push to main.", 5)
    full = render(checkpoint, CHECKPOINT_LAYOUT)

    fitted = fit(checkpoint, CHECKPOINT_LAYOUT, count_tokens(full) - 10)

    assert "old background item" not in fitted
    assert "new background item" in fitted
    assert "Never push to main." in fitted


def test_turn_prefix_layout_keeps_constraints_decisions_and_blockers_apart() -> None:
    # Each kind under its own heading, so that merging it into the next checkpoint keeps
    # its rank instead of demoting it to background context.
    checkpoint = Checkpoint()
    checkpoint.add(GOAL, "Port the CLI", 6)
    checkpoint.add(DECISIONS, "Going with click", 5)
    checkpoint.add(DONE, "Parsed args", 2)
    checkpoint.add(BLOCKED, "ImportError: click", 5)

    assert render(checkpoint, TURN_PREFIX_LAYOUT) == (
        "## Original Request\n- Port the CLI\n\n"
        "## Constraints & Preferences\n(none)\n\n"
        "## Key Decisions\n- Going with click\n\n"
        "## Early Progress\n- [x] Parsed args\n\n"
        "### Errors So Far\n- ImportError: click\n\n"
        "## Context for the Rest of the Turn\n(none)\n"
    )


def test_an_open_box_under_early_progress_is_read_back_as_in_progress() -> None:
    parsed = parse_summary(
        "## Early Progress\n- [x] Parsed the arguments\n- [ ] Another failure from my change\n"
    )
    assert parsed[DONE] == ["Parsed the arguments"]
    assert parsed[IN_PROGRESS] == ["Another failure from my change"]
