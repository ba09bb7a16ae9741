"""Help wraps between words at the terminal's width and names the global options once;
`contextd completion` gives scripts that complete commands, their options and actions."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.cli.commands import CONTEXTD

COMMANDS = ["serve", "demo", "replay", "import", "sessions", "show", "tree", "compact", "handoff", "watch", "follow", "status", "config", "completion"]


def help_text(*args: str, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    done = subprocess.run([*CONTEXTD, *args, "--help"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_and_breaks_between_words(command: str, columns: int) -> None:
    text = help_text(command, columns=columns)
    whole = help_text(command, columns=400)
    for line in text.splitlines():
        assert len(line) <= columns, line
    assert text.split() == whole.split(), "a word was broken"  # same words, only lines differ
    assert "--data-dir DIR, --log-level LEVEL" in " ".join(text.split())  # the global options, named once
    assert text.count("--data-dir") == 1


def complete(line: str) -> list[str]:
    """What bash offers after `line` (the word being completed is the last one, maybe empty)."""
    if shutil.which("bash") is None:
        pytest.fail("bash is needed")
    script = subprocess.run([*CONTEXTD, "completion", "bash"], capture_output=True, text=True, timeout=60, check=True).stdout
    words = line.split(" ")  # a line ending in a space completes a new, empty word
    array = " ".join(f"'{word}'" for word in words)
    probe = f'{script}\nCOMP_WORDS=({array}); COMP_CWORD={len(words) - 1}; _contextd; printf "%s\\n" "${{COMPREPLY[@]}}"'
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_bash_completes_commands_options_and_actions() -> None:
    assert set(complete("contextd comp")) == {"completion", "compact"}
    assert "--dry-run" in complete("contextd compact --d")
    assert set(complete("contextd sessions ")) >= {"list", "rm", "--stats"}
    assert set(complete("contextd completion ")) >= {"bash", "zsh", "fish"}


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_get_a_script_naming_every_command(shell: str) -> None:
    done = subprocess.run([*CONTEXTD, "completion", shell], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    for command in COMMANDS:
        assert command in done.stdout
    assert sys.executable  # the script is text only: no interpreter path baked in
    assert sys.executable not in done.stdout
