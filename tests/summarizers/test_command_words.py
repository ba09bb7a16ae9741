"""The first words of a command, as the shell reads them, without shlex reading all of it."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from contextd.summarizers.extract import first_words
from contextd.summarizers.outcomes import is_noise

SHELL_PIECES = ["npm", "test", " ", "\t", "\n", "'", '"', "\\", "a b", "it's", "<<EOF", "\r", "x=1"]


def read_by_shlex(command: str) -> list[str]:
    """How the summarizer read a command's words before: all of it through shlex."""
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


@given(st.lists(st.sampled_from(SHELL_PIECES), max_size=12).map("".join), st.integers(1, 3))
def test_first_words_are_shlex_words(command, count):
    assert first_words(command, count) == read_by_shlex(command)[:count]


def test_a_heredoc_with_an_apostrophe_is_read_as_plain_words():
    command = "cat > notes.md <<'EOF'\nit's done\nEOF"
    assert first_words(command, 2) == ["cat", ">"]


@given(st.lists(st.sampled_from(["Debugger attached.", "ok", "", "  ", "\n"]), max_size=6).map("\n".join))
def test_noise_is_output_made_only_of_debugger_lines(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert is_noise(text) == (bool(lines) and all(line == "Debugger attached." for line in lines))
