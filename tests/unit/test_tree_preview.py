"""A tree node's preview reads only as much of a long entry as its one line needs, and is
the line the whole text would give."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextd.compaction.short_summary import clip
from contextd.session.navigation import one_line

pieces = st.sampled_from(["a", "bc", " ", "   ", "\n", "\t", "\u3000", "\x1c", "é", "word " * 30, " " * 200])
spaced_text = st.lists(pieces, max_size=60).map("".join)
"""Whitespace of every kind, in runs long enough to push the words past what is read first."""


@given(text=st.one_of(st.text(), spaced_text), limit=st.integers(1, 120))
def test_the_preview_is_the_whole_texts_line_clipped(text: str, limit: int) -> None:
    assert one_line(text, limit) == clip(" ".join(text.split()), limit)


def test_a_long_run_of_whitespace_before_the_words_is_read_past() -> None:
    text = " " * 10_000 + "the answer " * 50
    assert one_line(text, 100) == clip(" ".join(text.split()), 100)
    assert one_line(text, 100).startswith("the answer")
