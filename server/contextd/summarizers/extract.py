"""What a stretch of conversation established, read from the messages without a model.

`extract_facts(messages)` walks the messages once and sorts their sentences and tool
traffic into the facts a checkpoint keeps: the user's requests and constraints, the
decisions taken, the files touched, the errors seen (verbatim, and whether a later run of
the same command or file succeeded), the work finished and the work left open.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextd.compaction.context import (
    BRANCH_SUMMARY_PREAMBLE,
    COMPACTION_PREAMBLE,
    HANDOFF_PREAMBLE,
)
from contextd.model import (
    DEFAULT_MODIFY_TOOLS,
    DEFAULT_READ_TOOLS,
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)

SUMMARY_PREAMBLES = (COMPACTION_PREAMBLE, BRANCH_SUMMARY_PREAMBLE, HANDOFF_PREAMBLE)

MAX_SENTENCE_CHARS = 400
MAX_ERROR_LINE_CHARS = 500
MAX_ERROR_LINES_PER_RESULT = 6
WHOLE_ERROR_MAX_LINES = 8
WHOLE_ERROR_MAX_CHARS = 700
MAX_DONE_CLAIMS = 8
MAX_NEXT_STEPS = 6
MAX_MENTIONED_FILES = 25

# --- what sentences say ----------------------------------------------------------------

CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|never|always|don'?t|do not|prefer(?:ably|red)?|"
    r"should|shouldn't|only|avoid|make sure|ensure|required?|requirement|no need to|"
    r"not allowed|forbidden|stick to|stay|keep)\b",
    re.IGNORECASE,
)
NARRATION = re.compile(
    r"^(?:now\s+)?(?:i'll|i will|let me)\s+(?:use\s+\S+\s+to\b|read|look|check|run|search|open)",
    re.IGNORECASE,
)
"""The assistant saying which tool it runs next: not a decision about the work."""
STEP_NARRATION = re.compile(
    r"^(?:now,?\s+|ok(?:ay)?,?\s+)?(?:let me|let's|i'll|i will|i'm going to|checking|looking|reading)\b",
    re.IGNORECASE,
)
"""A sentence about the assistant's very next step: what it is doing, not the work's state."""
DECISION = re.compile(
    r"\b(?:we'll|we will|i'll (?:use|go with|switch|keep|stick)|i will (?:use|go with|switch)|"
    r"let's (?:use|go with|switch|keep|stick|do)|decided|decision|going with|go with|"
    r"instead of|rather than|chose|chosen|choose to|opted|opt for|switch(?:ed|ing)? (?:to|from)|"
    r"settled on|the plan is|the approach is|trade-?off|will use|decided to|i'd go with|go for)\b",
    re.IGNORECASE,
)
DONE_CLAIM = re.compile(
    r"^(?:(?:i|we)(?:'ve| have)?\s+|now\s+)?(?:fixed|added|implemented|created|updated|"
    r"refactored|removed|renamed|wrote|moved|replaced|changed|completed|finished|resolved)\b"
    r"|\b(?:now pass(?:es)?|all tests pass|tests? (?:now )?pass(?:es|ed)?|is (?:now )?done|"
    r"is (?:now )?complete|works now|now works|successfully)\b",
    re.IGNORECASE,
)
NEXT_STEP = re.compile(
    r"\b(?:next|then|todo|to do|remaining|still need|need to|will|i'll|let me|going to|"
    r"after that|afterwards|follow[- ]up)\b",
    re.IGNORECASE,
)

# --- what output lines say -------------------------------------------------------------

ERROR_LINE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception|Failure)\b|\bError\b|\berror(?:\[|:)|\bERROR\b"
    r"|\bFAILED\b|\bFAIL\b|\b[1-9]\d* (?:failed|errors?)\b|\bfatal\b|\bpanic(?:ked)?\b"
    r"|Segmentation fault|\bERR!|No such file or directory|Permission denied"
    r"|command not found|[Cc]annot find|undefined reference|Uncaught|^E\s{2,}\S"
    r"|exit (?:code|status) [1-9]"
)
CODE_LINE = re.compile(
    r"^\s*(?:raise|except|catch|throw|class|def|import|from|return|if|elif|assert|#|//)\b"
)
"""Source lines in an output (a traceback's code excerpt) that only mention an error."""
TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\)")
FRAME = re.compile(r'^\s*File "[^"]+", line \d+')

FILE_PATH = re.compile(
    r"(?<![\w@/.:~-])"
    r"(?:(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]+"  # rooted: /a/b, ./a, ~/a
    r"|(?:[\w.@+-]+/)+[\w@+-]*\.[A-Za-z]\w{0,9}"  # relative with an extension: a/b.py
    r"|[\w-]+\.(?:py|pyi|ipynb|ts|tsx|js|jsx|mjs|cjs|json|jsonl|toml|yaml|yml|md|rst|txt|cfg|"
    r"ini|lua|rs|go|java|kt|c|h|cc|cpp|hpp|cs|rb|php|sh|sql|html|css|scss|vue|svelte|lock|xml|"
    r"swift|proto|tf|dockerfile))\b"
)
URL = re.compile(r"https?://[^\s)>\]\"'`]+")

PATH_ARGUMENTS = ("path", "file_path", "filePath", "file", "filename", "notebook_path", "target_file")
LIST_PATH_ARGUMENTS = ("paths", "files")
COMMAND_ARGUMENTS = ("command", "cmd", "script")
PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
CHECK_COMMAND = re.compile(
    r"\b(?:pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|tsc|mypy|pyright|ruff|eslint|"
    r"flake8|(?:npm|pnpm|yarn|bun)(?: run)? (?:test|build|lint|check)|cargo (?:test|build|check|clippy)|"
    r"go (?:test|build|vet)|make|mvn|gradle|dotnet (?:test|build)|ctest)\b"
)
CONTENT_COMMAND = re.compile(
    r"^(?:grep|rg|ag|ack|find|fd|cat|bat|head|tail|less|more|sed -n|awk|ls|tree|wc|"
    r"git (?:grep|log|show|diff|blame))\b"
)
"""Commands whose output is file content or search hits, not a report on the work."""
RUNNERS = {"python", "python3", "uv", "poetry", "npx", "npm", "pnpm", "yarn", "bun", "node",
           "cargo", "go", "make", "bash", "sh", "sudo", "env", "git", "docker"}


@dataclass
class ErrorSeen:
    subject: str
    texts: list[str]
    index: int
    resolved: bool = False
    command: str = ""
    """The shell command whose output showed the error, when there was one."""

    def as_items(self) -> list[str]:
        """A command's failure is one item that names the command, so that a later summary
        can tell when a clean run of it fixed the error; other errors are line by line."""
        if self.command:
            return [f"`{self.command}` failed: " + " | ".join(self.texts)]
        return list(self.texts)


@dataclass
class Facts:
    requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    """What the assistant said it finished, latest MAX_DONE_CLAIMS."""
    checks_passed: list[str] = field(default_factory=list)
    """Test, build and lint commands whose latest run succeeded."""
    in_progress: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    errors: list[ErrorSeen] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
    mentioned_files: list[str] = field(default_factory=list)
    """Paths named outside read/modify tools: all the user's, the latest others'."""
    user_files: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    embedded_summaries: list[str] = field(default_factory=list)
    """Compaction, branch or handoff documents that arrived as user messages."""
    sentences: list[str] = field(default_factory=list)
    """Every prose sentence, for finding what a focus (instructions, a goal) is about."""
    unanswered: bool = False
    """The conversation ends on a user request nobody has answered yet."""

    succeeded_commands: list[str] = field(default_factory=list)
    """Shell commands whose latest run came back clean, oldest first."""

    @property
    def blocked(self) -> list[str]:
        return [item for error in self.errors if not error.resolved for item in error.as_items()]

    @property
    def resolved_errors(self) -> list[str]:
        return [item for error in self.errors if error.resolved for item in error.as_items()]


def extract_facts(messages: Sequence[Message]) -> Facts:
    facts = Facts()
    calls: dict[str, ToolCall] = {}
    answered: set[str] = set()
    checks: dict[str, str] = {}
    successes: list[tuple[int, str]] = []
    last_text = ""
    for index, message in enumerate(messages):
        if isinstance(message, UserMessage):
            _read_user(message, facts)
        elif isinstance(message, AssistantMessage):
            text = _assistant_text(message)
            if text:
                last_text = text
                _read_assistant_text(text, facts)
            for call in message.tool_calls:
                calls[call.id] = call
                _read_call(call, facts)
            if message.stopReason == "error" and message.errorMessage:
                facts.errors.append(ErrorSeen("assistant", [message.errorMessage.strip()], index))
        else:
            answered.add(message.toolCallId)
            answered_call = calls.get(message.toolCallId)
            subject = _subject(answered_call, message.toolName)
            if _read_result(message, answered_call, subject, index, facts, checks):
                successes.append((index, subject))
    _mark_resolved(facts.errors, successes)
    facts.checks_passed = [_check_done(command, tail) for command, tail in checks.items()]
    facts.done = _dedupe(facts.done)[-MAX_DONE_CLAIMS:]
    pending = [call for call_id, call in calls.items() if call_id not in answered]
    facts.unanswered = bool(messages) and isinstance(messages[-1], UserMessage)
    _read_open_work(last_text, pending, facts)
    others = [path for path in _dedupe(facts.mentioned_files) if path not in facts.user_files]
    facts.mentioned_files = _dedupe([*facts.user_files, *others[-MAX_MENTIONED_FILES:]])
    return facts


# --- per message -------------------------------------------------------------------------


def _read_user(message: UserMessage, facts: Facts) -> None:
    text = message_text(message.content).strip()
    if not text:
        return
    for preamble in SUMMARY_PREAMBLES:
        if text.startswith(preamble.strip()):
            facts.embedded_summaries.append(text[len(preamble.strip()):].strip())
            return
    facts.requests.append(text)
    facts.errors.extend(ErrorSeen("user", [line], -1) for line in _error_lines(text))
    for sentence in sentences(text):
        facts.sentences.append(sentence)
        if CONSTRAINT.search(sentence) and not sentence.endswith("?"):
            facts.constraints.append(sentence)
        elif DECISION.search(sentence):
            facts.decisions.append(sentence)
    facts.user_files += FILE_PATH.findall(text)
    facts.links += URL.findall(text)


def _assistant_text(message: AssistantMessage) -> str:
    # Thinking is the model's scratchpad: its conclusions reappear in the visible text.
    return "\n".join(
        block.text for block in message.content if isinstance(block, TextContent)
    ).strip()


def _read_assistant_text(text: str, facts: Facts) -> None:
    for sentence in sentences(text):
        facts.sentences.append(sentence)
        if DECISION.search(sentence) and not NARRATION.match(sentence):
            facts.decisions.append(sentence)
        elif DONE_CLAIM.search(sentence) and not sentence.endswith("?"):
            facts.done.append(sentence)
    facts.mentioned_files += FILE_PATH.findall(_outside_fences(text))


def _read_call(call: ToolCall, facts: Facts) -> None:
    paths = _call_paths(call.arguments)
    if call.name in DEFAULT_MODIFY_TOOLS or PATCH_FILE.search(_patch_text(call.arguments)):
        facts.modified_files += paths
    elif call.name in DEFAULT_READ_TOOLS:
        facts.read_files += paths
    else:
        facts.mentioned_files += paths
    command = _command(call.arguments)
    if command:
        facts.mentioned_files += FILE_PATH.findall(command)


def _read_result(
    result: ToolResultMessage,
    call: ToolCall | None,
    subject: str,
    index: int,
    facts: Facts,
    checks: dict[str, str],
) -> bool:
    """Records what a tool result shows; True when it is a clean success."""
    text = message_text(result.content).strip()
    command = _command(call.arguments) if call else ""
    texts = _error_texts(text, result.isError, _may_report_errors(command))
    if texts:
        facts.errors.append(ErrorSeen(subject, texts, index, command=command))
    if command:
        if command in facts.succeeded_commands:
            facts.succeeded_commands.remove(command)
        if not texts:
            facts.succeeded_commands.append(command)
    if command and CHECK_COMMAND.search(command):
        checks.pop(command, None)  # the latest run of a check is the one that counts
        if not texts:
            checks[command] = _last_line(text)
    return not texts


def _may_report_errors(command: str) -> bool:
    """Whether a successful result can still report errors in its text: a command's output
    can (a test run), a file's or a search's content cannot (`except KeyError:` is code)."""
    return bool(command) and not CONTENT_COMMAND.match(command)


def _error_texts(text: str, is_error: bool, scan_success: bool) -> list[str]:
    """The verbatim error of a result: short failures whole, long output by its error lines."""
    if not is_error and not scan_success:
        return []
    if not text:
        return ["(the tool failed without output)"] if is_error else []
    lines = text.splitlines()
    if is_error and len(lines) <= WHOLE_ERROR_MAX_LINES and len(text) <= WHOLE_ERROR_MAX_CHARS:
        return [text]
    found = _error_lines(text)
    if not found and is_error:
        found = [line.strip() for line in lines if line.strip()][-3:]
    if len(found) > MAX_ERROR_LINES_PER_RESULT:
        found = found[:2] + found[-(MAX_ERROR_LINES_PER_RESULT - 2):]
    return found


def _error_lines(text: str) -> list[str]:
    """Lines that report an error, verbatim; for a Python traceback also its innermost frame."""
    found: list[str] = []
    frame = ""
    for line in text.splitlines():
        if TRACEBACK.match(line):
            frame = ""
            continue
        if FRAME.match(line):
            frame = line.strip()
            continue
        if ERROR_LINE.search(line) and not CODE_LINE.match(line):
            if frame:
                found.append(frame[:MAX_ERROR_LINE_CHARS])
                frame = ""
            found.append(line.strip()[:MAX_ERROR_LINE_CHARS])
    return _dedupe(found)


def _mark_resolved(errors: list[ErrorSeen], successes: list[tuple[int, str]]) -> None:
    """An error is resolved once the same command or file later succeeds; one the user
    pasted is context, not a blocker."""
    for error in errors:
        error.resolved = error.subject == "user" or any(
            index > error.index and subject == error.subject for index, subject in successes
        )


def _read_open_work(last_text: str, pending: list[ToolCall], facts: Facts) -> None:
    facts.in_progress += [f"Waiting on `{_describe_call(call)}`" for call in pending]
    claims_done = bool(last_text) and bool(DONE_CLAIM.search(_first_sentences(last_text, 1)))
    if last_text and not claims_done and not facts.unanswered:
        # What the work is in the middle of, without the narration of the next tool call.
        state = [s for s in list(sentences(last_text))[:2] if not STEP_NARRATION.match(s)]
        if state:
            facts.in_progress.append(" ".join(state))
    steps = [line for line in _list_items(last_text) if not DONE_CLAIM.search(line)]
    steps += [s for s in sentences(last_text) if NEXT_STEP.search(s) and s not in steps]
    facts.next_steps = _dedupe(steps)[:MAX_NEXT_STEPS]


def _check_done(command: str, tail: str) -> str:
    return f"`{command}` passed" + (f": {tail}" if tail else "")


# --- tool calls ----------------------------------------------------------------------


def _call_paths(arguments: dict[str, Any]) -> list[str]:
    paths = [arguments[key] for key in PATH_ARGUMENTS if isinstance(arguments.get(key), str)]
    for key in LIST_PATH_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, list):
            paths += [item for item in value if isinstance(item, str)]
    paths += PATCH_FILE.findall(_patch_text(arguments))
    return [path.strip() for path in paths if path.strip()]


def _patch_text(arguments: dict[str, Any]) -> str:
    for key in ("patch", "input", "diff"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return ""


def _command(arguments: dict[str, Any]) -> str:
    for key in COMMAND_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return ""


def command_subject(command: str) -> str:
    """The program a command runs (with its subcommand for runners like `npm test`), so that
    `python -m pytest x` and `pytest` count as the same check."""
    if check := CHECK_COMMAND.search(command):
        return check.group(0)
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return " ".join(words[:2] if words and words[0] in RUNNERS else words[:1])


def _subject(call: ToolCall | None, tool_name: str) -> str:
    """What a tool call worked on, so a later success on the same thing resolves an error:
    the file, or the command's program (with its subcommand for runners like `npm test`)."""
    if call is None:
        return tool_name
    paths = _call_paths(call.arguments)
    if paths:
        return f"{call.name}:{paths[0]}"
    command = _command(call.arguments)
    if command:
        return f"{call.name}:{command_subject(command)}"
    return call.name


def _describe_call(call: ToolCall) -> str:
    target = _command(call.arguments) or ", ".join(_call_paths(call.arguments))
    return f"{call.name} {target}".strip()[:200]


# --- text ----------------------------------------------------------------------------

_FENCED = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s+(?:\[[ xX]\]\s+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_])")


def _outside_fences(text: str) -> str:
    return _FENCED.sub("\n", text)


def sentences(text: str) -> Iterator[str]:
    """Prose sentences of a message, code blocks left out, each at most MAX_SENTENCE_CHARS."""
    for line in _outside_fences(text).splitlines():
        line = _LIST_MARK.sub("", line).strip()
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip()
            if len(sentence) >= 8:
                yield _clip(sentence, MAX_SENTENCE_CHARS)


def _first_sentences(text: str, count: int) -> str:
    return " ".join(list(sentences(text))[:count])


def _list_items(text: str) -> list[str]:
    return [
        _clip(_LIST_MARK.sub("", line).strip(), MAX_SENTENCE_CHARS)
        for line in _outside_fences(text).splitlines()
        if re.match(r"^\s*(?:[-*+]|\d+[.)])\s+\S", line)
    ]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return _clip(lines[-1], 160) if lines else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
