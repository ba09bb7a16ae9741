"""What a tool result says about the work: a success, a failure, or nothing at all.

Real transcripts taught these rules (tests/fixtures/real):
- an exit code decides success, not the words in the output: a migration log that prints
  "FAIL" for a skipped check exits 0, and a build whose output says nothing alarming can
  exit 126. Codex wraps output as `{"output", "metadata": {"exit_code"}}`, as
  `Exit code: N / Wall time / Output:` text or (unified exec) with a header holding
  `Process exited with code N` above `Output:`, pi appends `Command exited with code N`, Claude
  Code starts a failed Bash result with `Exit code N`;
- a search that found nothing (grep, rg, ... exiting 1 with no output) is an answer, not a
  failure;
- some results say nothing about the work: the importer's placeholder for a result the
  agent never recorded, a command the user aborted, output that is only debugger noise
  ("Waiting for the debugger to disconnect...").
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["ok", "failed", "neutral", "unknown"]
"""`neutral`: the result neither shows the work succeeding nor failing; `unknown`: only the
output can tell (a pipeline ending in a filter reports the filter's status)."""

PLACEHOLDER = re.compile(r"^\[No result was recorded", re.IGNORECASE)
ABORTED = re.compile(
    r"^(?:aborted|terminated|interrupted|cancell?ed)\b|\b(?:operation|request|command) "
    r"(?:was )?(?:aborted|cancell?ed|interrupted)\b|^\[Request interrupted by user",
    re.IGNORECASE,
)
DEBUGGER_NOISE = re.compile(
    r"^(?:Waiting for the debugger to disconnect(?:\.*|…)|Debugger (?:attached|listening on \S+)\.*|"
    r"For help, see: https://nodejs\.org/en/docs/inspector|Debugger ending on \S+)\s*$",
    re.IGNORECASE,
)
_CODEX_TEXT = re.compile(r"^Exit code: (-?\d+)\s*\n(?:Wall time:[^\n]*\n)?(?:Output:\n?)?", re.DOTALL)
_CODEX_UNIFIED = re.compile(
    r"^(?:[A-Z][A-Za-z ]*:[^\n]*\n)*Process exited with code (-?\d+)\s*\n(?:[A-Z][A-Za-z ]*:[^\n]*\n)*Output:\n?"
)
"""Codex's unified exec: `Chunk ID / Wall time / Process exited with code N / Original token count / Output:`."""
_CLAUDE_FAILED = re.compile(r"^Exit code (-?\d+)\s*(?:\n|$)")
_PI_TRAILER = re.compile(r"\n*\s*Command exited with code (-?\d+)\s*$")
TIMED_OUT = re.compile(r"^Command timed out after\b", re.IGNORECASE)

SEARCH_PROGRAMS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "git grep"})
"""Programs whose exit status 1 with no output means "no match"."""
FILTERS = frozenset({"tail", "head", "grep", "egrep", "rg", "wc", "sed", "awk", "cut", "sort",
                     "uniq", "tee", "less", "more", "cat", "tr", "column", "jq", "xargs"})
"""Programs at the end of a pipeline whose exit status hides the status of the command."""
WRAPPERS = frozenset({"sudo", "env", "time", "timeout", "nohup", "exec", "command"})


@dataclass(frozen=True)
class ToolOutput:
    """A tool result read for its outcome: the text without exit-code framing."""

    text: str
    exit_code: int | None


def read_output(text: str) -> ToolOutput:
    """The output text and exit code of a tool result, whatever agent wrote it."""
    stripped = text.strip()
    if stripped.startswith("{") and '"output"' in stripped[:200]:
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("output"), str):
            metadata = data.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            return ToolOutput(data["output"].strip(), code if isinstance(code, int) else None)
    if match := _CODEX_TEXT.match(stripped) or _CODEX_UNIFIED.match(stripped):
        return ToolOutput(stripped[match.end():].strip(), int(match.group(1)))
    # The literal first: the pattern, tried at every position, took most of a long output's reading.
    if "Command exited with code" in stripped and (match := _PI_TRAILER.search(stripped)):
        return ToolOutput(stripped[: match.start()].strip(), int(match.group(1)))
    if match := _CLAUDE_FAILED.match(stripped):
        return ToolOutput(stripped[match.end():].strip(), int(match.group(1)))
    return ToolOutput(stripped, None)


_LEADING_STEP = re.compile(
    r"^(?:(?:cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)|sleep\s+\d+(?:\.\d+)?[smh]?)\s*(?:&&|;)\s*"
    r"|[A-Z_][A-Z0-9_]*=\S*\s+)"
)
"""A `cd DIR &&`, a wait (`sleep 60 &&`) or an env assignment before what a command runs."""
_DURATION = re.compile(r"\d+[smh]?")
_STEP_SEPARATOR = re.compile(r"&&|;|\|\|")
_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def main_command(command: str) -> str:
    """The command without what does not change what it runs: leading `cd DIR &&`, a wait
    (`sleep 60 &&`), env assignments and wrappers like `timeout 30`."""
    rest = command.strip()
    while match := _LEADING_STEP.match(rest):
        rest = rest[match.end():]
    words = rest.split()
    while words and words[0] in WRAPPERS:
        words = words[1:]
        while words and (words[0].startswith("-") or _DURATION.fullmatch(words[0])):
            words = words[1:]
    return " ".join(words)


def pipeline(command: str) -> list[str]:
    """The programs of a command's last `&&`-chained step, split at pipes."""
    last_step = _STEP_SEPARATOR.split(main_command(command))[-1]
    return [segment.strip() for segment in last_step.split("|") if segment.strip()]


def program(segment: str) -> str:
    try:
        words = shlex.split(segment)
    except ValueError:
        words = segment.split()
    words = [w for w in words if not _ASSIGNMENT.match(w)]
    while words and words[0] in WRAPPERS:
        words = words[1:]
    if not words:
        return ""
    first = words[0].rsplit("/", 1)[-1]
    if first == "git" and len(words) > 1:
        return f"git {words[1]}"
    return first


def is_search(command: str) -> bool:
    programs = [program(segment) for segment in pipeline(command)]
    return bool(programs) and any(p in SEARCH_PROGRAMS for p in programs)


def ends_in_filter(command: str) -> bool:
    """Whether the exit status is a filter's (`make 2>&1 | tail -20`), not the command's."""
    segments = pipeline(command)
    return len(segments) > 1 and program(segments[-1]) in FILTERS


def may_hold_noise(text: str) -> bool:
    """Whether a line of `text` may be debugger chatter (DEBUGGER_NOISE), which every such
    line shows by "debugger" or "nodejs.org" in any case: text without either has none.

    Looked for in the lowercased text, several times faster than a case-blind search:
    `str.lower` gives the letters of "debugger" and "nodej" from exactly the characters a
    case-blind search takes for them (the one other, `ſ` for `s`, is left out with the `s`)."""
    lowered = text.lower()
    return "debugger" in lowered or "nodej" in lowered


def is_noise(text: str) -> bool:
    """Output that is only debugger chatter says nothing about the work."""
    said = False
    for line in text.splitlines():
        line = line.strip()
        if line:
            if not DEBUGGER_NOISE.search(line):
                return False  # at the first line that says something: not at the end of a long output
            said = True
    return said


def verdict(text: str, is_error: bool, command: str) -> tuple[Verdict, ToolOutput]:
    """How a tool result ended, from its framing (exit code, error flag, placeholders) and
    never from words in a successful output."""
    output = read_output(text)
    body = output.text
    if PLACEHOLDER.match(body) or ABORTED.search(body[:200]) and len(body) < 200:
        return "neutral", output
    if is_noise(body):
        return "neutral", output
    code = output.exit_code
    filtered = bool(command) and ends_in_filter(command)
    if filtered and not is_error and (code is None or code == 0):
        return "unknown", output  # the filter's status; the output has to tell
    if code is not None:
        if code == 0:
            return "ok", output
        if code == 1 and not body.strip() and command and is_search(command):
            return "neutral", output  # no match
        return "failed", output
    if is_error:
        return "failed", output
    return "ok", output
