"""What a stretch of conversation established, read from the messages without a model.

`extract_facts(messages)` walks the messages once and sorts their sentences and tool
traffic into the facts a checkpoint keeps: the user's requests and constraints, the
decisions taken, the files touched, the errors seen (verbatim, and whether a later run of
the same command or file succeeded), the work finished and the work left open.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextd.compaction.files import shell_read_paths
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
from contextd.summarizers.delegation import (
    Plan,
    brief,
    ended_early,
    is_subagent_call,
    plan_written,
    report,
)
from contextd.summarizers.outcomes import (
    Verdict,
    is_noise,
    may_hold_noise,
    is_search,
    main_command,
    pipeline,
    program,
    verdict,
)
from contextd.summarizers.user_messages import (
    one_line,
    options_offered,
    picked_options,
    REJECTED_TOOL_USE,
    continues,
    read_user_text,
    rejects,
    states_a_task,
    user_words_in_result,
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
MAX_COMMAND_CHARS = 160
_PROBE = re.compile(r"^\s*([A-Za-z][\w .-]{0,20}?):\s+(\d{3})\s*$", re.MULTILINE)
"""A status probe's answer: `HTTP: 200`, `CSS: 000`, as health-check scripts print them."""
_PROBE_ANSWER = re.compile(r":\s+\d{3}\s*$", re.MULTILINE)
"""The end of every _PROBE line, found by a fast scan for its colon where _PROBE, anchored
at line starts, is tried at every position of a long output."""


def probe_answers(text: str) -> list[tuple[str, str]]:
    """The (label, status code) of every status probe answer in `text`."""
    return _PROBE.findall(text) if _PROBE_ANSWER.search(text) else []

# --- what sentences say ----------------------------------------------------------------

CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|never|always|don'?t|do not|prefer(?:ably|red)?|"
    r"should|shouldn't|only|avoid|no need to|"
    r"not allowed|forbidden|stick to|stay|keep)\b",
    re.IGNORECASE,
)
NARRATION = re.compile(
    r"^(?:now\s+)?(?:i'll|i will|let me)\s+(?:use\s+\S+\s+to\b|read|look|check|run|search|open)",
    re.IGNORECASE,
)
"""The assistant saying which tool it runs next: not a decision about the work."""
STEP_NARRATION = re.compile(
    r"^(?:(?:now|ok(?:ay)?|actually|alright|so|hmm|wait|first)[,.!]?\s+)?"
    r"(?:let me|let's|i'll|i will|i'm going to|checking|looking|reading)\b",
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
    # A report's line may lead with what it is about: "`COMPARISON.md`: added a notice".
    r"^(?:(?:`[^`]+`|\*\*[^*]+\*\*)\s*[:\u2014-]\s*)?"
    r"(?:(?:i|we)(?:'ve| have)?\s+|now\s+)?(?:fixed|added|implemented|created|updated|"
    r"refactored|removed|renamed|wrote|rewrote|moved|replaced|changed|completed|finished|resolved|"
    r"confirmed|verified|committed|pushed|deployed|merged|documented|installed|configured|"
    r"marked|expanded|extended|clarified|drafted|deleted|introduced|enabled|disabled|migrated|"
    r"upgraded|restructured|rebuilt|simplified)\b"
    r"|\b(?:now pass(?:es)?|all tests pass|tests? (?:now )?pass(?:es|ed)?|is (?:now )?done|"
    r"is (?:now )?complete|works now|now works|successfully)\b",
    re.IGNORECASE,
)
STILL_FAILING = re.compile(
    r"\b(?:failing|failed|fails|broken|blocked|still (?:not|failing|broken)|doesn'?t work|not working)\b",
    re.IGNORECASE,
)
OWN_ERROR = re.compile(
    r"^\s*(?:\S+:\s*)?(?:error|fatal|err!)(?:\[|:|\s)|^\s*(?:Traceback|\w+(?:Error|Exception):)|"
    r"command not found|No such file or directory|exited with (?:code )?[1-9]|Command failed|"
    r"^\s*FAILED\b|^\s*npm ERR!|Failed to compile",
    re.IGNORECASE,
)
"""A line in which a command reports its own failure."""
ROOT_CAUSE = re.compile(
    r"\b(?:root cause|the (?:issue|problem|bug|cause) (?:is|was)|caused by|because|the reason|"
    r"this happens when|that'?s why)\b",
    re.IGNORECASE,
)
CHOICE = re.compile(r"\b(?:instead of|rather than|switch(?:ed|ing)? to|decided|chose|opt(?:ed)? for)\b", re.IGNORECASE)
PROBLEM_WORDS = re.compile(r"\b(?:fail(?:s|ed|ing)?|error|broken|still|not|n't)\b", re.IGNORECASE)
"""A sentence with these reports a problem, even when it also says "updated" or "fixed"."""
OFFER = re.compile(
    r"^(?:if you(?:'d)? (?:want|like|prefer)|want me to|should i|shall i|would you like|i can\b|let me know)",
    re.IGNORECASE,
)
"""An offer to the user is not a decision: nothing was chosen yet."""
AGREEMENT = re.compile(r"^(?:ah,? )?(?:you'?re (?:absolutely )?right|good (?:point|catch)|right,)", re.IGNORECASE)
CONSTRAINT_RESTATED = re.compile(r"\b(?:needs? to|must|should|has to|not just|only|never|always)\b", re.IGNORECASE)
SPECIFIC = re.compile(
    r"`[^`]{2,}`|\b[\w.+-]+@[\w-]+\.[\w.]+\b|\b[0-9a-f]{8}-[0-9a-f]{4}-|\*\*[^*]{3,}\*\*|"
    r"\b\d{2,}\b"
)
"""Something a finding names exactly: code, an address, an id, a bold term, a number."""
STATE = re.compile(
    r"\b(?:currently|already|deprecated|no longer|is missing|are missing|does(?: not|n'?t) exist|"
    r"in-memory|not (?:yet )?(?:implemented|supported|set up|configured))\b",
    re.IGNORECASE,
)
"""A sentence that says how things stand (what exists, what is deprecated), which in an
autonomous run is often the only record of what the agent found."""
TODO_TOOLS = frozenset({"todowrite", "todo_write", "update_plan"})
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
    r"^(?:grep|rg|ag|ack|find|fd|cat|bat|head|tail|less|more|sed -n|awk|ls|tree|wc|nl|jq|stat|file|"
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
    superseded: bool = False
    """A later run of the same command failed again: only the latest failure is reported."""
    probes: tuple[str, ...] = ()
    """Status probes the failure reported (`HTML: 000`): a later healthy answer to the same
    probe (`HTML: 200`) fixes it, whatever command gave it."""

    def as_items(self) -> list[str]:
        """A command's failure is one item that names the command, so that a later summary
        can tell when a clean run of it fixed the error; other errors are line by line."""
        if self.command:
            return [f"`{shown_command(self.command)}` failed: " + " | ".join(self.texts)]
        return list(self.texts)


def shown_command(command: str) -> str:
    """A command as a summary shows it: env assignments (`PGPASSWORD=...`) left out, a long
    one cut in the middle, since its start says what runs and its end what it runs on."""
    shown = main_command(command) or command
    # Where it ran stays: `cd dashboard && pnpm run typecheck` is not `pnpm run typecheck`.
    if workdir := re.match(r"^cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*&&\s*", command.strip()):
        shown = workdir.group(0) + shown
    return one_line(shown, MAX_COMMAND_CHARS).replace("`", "'")


@dataclass(frozen=True)
class CommandRun:
    """The latest run of one command: what the artifact trail reports for it."""

    command: str
    verdict: Verdict
    detail: str
    """The passing run's last line, or the failure's first error line."""

    def as_item(self) -> str:
        mark = {"ok": "ok", "failed": "failed", "neutral": "no result", "unknown": "ran"}[self.verdict]
        return f"`{shown_command(self.command)}` {mark}" + (f": {self.detail}" if self.detail else "")


@dataclass
class Facts:
    requests: list[str] = field(default_factory=list)
    """What the user said, message by message, oldest first: injected text left out,
    pasted logs trimmed."""
    task: str = ""
    """The latest message that says what to do: the work's current goal."""
    task_continues: bool = False
    """The task carries on with the earlier goal (or accepts what the assistant offered)
    instead of replacing it."""
    constraints: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    """What the assistant said it finished, latest MAX_DONE_CLAIMS."""
    edits: list[str] = field(default_factory=list)
    """Changes that went through, each with what the assistant said it was for, oldest first."""
    shipped: list[str] = field(default_factory=list)
    """Commits, pushes, pull requests and tags that went through, oldest first."""
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
    """Compaction, branch or handoff documents, or an agent's own continuation summary,
    that arrived as user messages."""
    sentences: list[str] = field(default_factory=list)
    """Every prose sentence, for finding what a focus (instructions, a goal) is about."""
    findings: list[str] = field(default_factory=list)
    """What the assistant found out: the points of a finished turn's report, and sentences
    that name something specific (an id, a path, a value) outside narration."""
    root_causes: list[str] = field(default_factory=list)
    """Sentences where the assistant stated why something happened."""
    unanswered: bool = False
    """The conversation ends on a user request nobody has answered yet."""
    question: str = ""
    """The assistant's last message ends on a question to the user, still unanswered."""
    model_error: str = ""
    """The model call the span ends on failed (rate limit, credits): no later answer came."""
    commands: dict[str, CommandRun] = field(default_factory=dict)
    """Each command's latest run, in the order they last ran."""
    todos: list[tuple[str, str]] = field(default_factory=list)
    """The agent's latest todo list: (status, text)."""
    environment: list[str] = field(default_factory=list)
    """Facts about the machine the commands showed: programs that are not installed."""
    finished_earlier_turn: bool = False
    """The span opens in the middle of a turn (an earlier summary holds its request) and
    that turn ended with an answer that reports no problem and asks nothing."""

    succeeded_commands: list[str] = field(default_factory=list)
    """Shell commands whose latest run came back clean, oldest first."""
    briefs: list[str] = field(default_factory=list)
    """What the agent required of its sub-agents, one line per brief."""
    reports: list[str] = field(default_factory=list)
    """What sub-agents reported back that names something exactly."""
    definitions: list[str] = field(default_factory=list)
    """What the agent's writes define (functions, tables, schema changes), file by file:
    the names the next session looks for, which prose rarely repeats."""
    plan: Plan | None = None
    """The latest plan the agent wrote whole (plan file or plan presented for approval)."""

    @property
    def blocked(self) -> list[str]:
        return [
            item for error in self.errors if not (error.resolved or error.superseded) for item in error.as_items()
        ]

    @property
    def resolved_errors(self) -> list[str]:
        return [item for error in self.errors if error.resolved for item in error.as_items()]

    @property
    def superseded_errors(self) -> list[str]:
        """Earlier failures of a command that failed again later: history, not blockers."""
        return [
            item for error in self.errors if error.superseded and not error.resolved for item in error.as_items()
        ]


@dataclass
class _Walk:
    """What the walk over the messages carries from one message to the next."""

    calls: dict[str, ToolCall] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    checks: dict[str, str] = field(default_factory=dict)
    successes: list[tuple[int, str]] = field(default_factory=list)
    last_text: str = ""
    turn_text: str = ""
    """The assistant's latest text in the current turn: its conclusion when the turn ends."""
    turn_decisions: list[str] = field(default_factory=list)
    turn_ended: bool = False
    """The last message is an assistant answer with no tool call pending: the turn is over."""
    turn_ended_once: bool = False
    purposes: dict[str, str] = field(default_factory=dict)
    """Edit calls and what the text before them said they change, by call id."""
    last_report: list[str] = field(default_factory=list)
    """The sentences of the latest finished turn's closing report."""
    command_paths: dict[str, list[str]] = field(default_factory=dict)
    """The paths each command names, searched once: a call and its result both ask."""

    def paths_in(self, command: str) -> list[str]:
        """`FILE_PATH.findall(command)`."""
        found = self.command_paths.get(command)
        if found is None:
            found = self.command_paths[command] = FILE_PATH.findall(command)
        return found


def extract_facts(messages: Sequence[Message]) -> Facts:
    facts = Facts()
    walk = _Walk()
    for index, message in enumerate(messages):
        if isinstance(message, UserMessage):
            _end_turn(walk, facts)
            walk.turn_ended = False
            _read_user(message, facts, walk)
        elif isinstance(message, AssistantMessage):
            _read_assistant(message, index, facts, walk)
        else:
            walk.turn_ended = False
            walk.answered.add(message.toolCallId)
            answered_call = walk.calls.get(message.toolCallId)
            _read_result(message, answered_call, index, facts, walk)
    _end_turn(walk, facts)
    facts.findings += walk.last_report
    _mark_resolved(facts.errors, walk.successes)
    facts.checks_passed = [_check_done(command, tail) for command, tail in walk.checks.items()]
    facts.done = _dedupe(facts.done)[-MAX_DONE_CLAIMS:]
    pending = [call for call_id, call in walk.calls.items() if call_id not in walk.answered]
    facts.unanswered = bool(messages) and isinstance(messages[-1], UserMessage) and bool(facts.requests)
    _read_open_work(walk.last_text, pending, facts, walk.turn_ended)
    others = [path for path in _dedupe(facts.mentioned_files) if path not in facts.user_files]
    facts.mentioned_files = _dedupe([*facts.user_files, *others[-MAX_MENTIONED_FILES:]])
    return facts


# --- per message -------------------------------------------------------------------------


def _read_user(message: UserMessage, facts: Facts, walk: _Walk) -> None:
    text = message_text(message.content).strip()
    if not text:
        return
    for preamble in SUMMARY_PREAMBLES:
        if text.startswith(preamble.strip()):
            facts.embedded_summaries.append(text[len(preamble.strip()):].strip())
            return
    if stopped := ended_early(text):
        facts.reports.append(stopped)
        return
    user = read_user_text(text)
    if user.earlier_summary:
        facts.embedded_summaries.append(user.earlier_summary)
        return
    if user.said:
        _read_said(user.said, user.pasted_log, user.command, facts, walk)


def _read_said(said: str, pasted_log: bool, command: str, facts: Facts, walk: _Walk) -> None:
    """What the user said, however it arrived: a message, or a rejected tool call's reply.
    Anything the agent asked before it is answered now, and what its last text said was
    open or next is no longer the state of the work."""
    facts.question = ""
    offered = _offers(walk.last_text)
    last_text, walk.last_text = walk.last_text, ""
    if rejects(said):
        # The user turned down what the last turn concluded: its decisions do not stand.
        facts.decisions = [d for d in facts.decisions if d not in walk.turn_decisions]
    facts.requests.append(said)
    if states_a_task(said) and not pasted_log:
        facts.task = said
        facts.task_continues = continues(said)
    picks = picked_options(said)
    options = options_offered(last_text)
    chosen = [f"{pick}. {options[pick]}" for pick in picks if pick in options]
    if chosen:
        facts.decisions.append(f"The user chose {' and '.join(chosen)}")
    elif offered and not states_a_task(said) and not pasted_log:
        # A short reply ("both", "yes") means something only with what it answers.
        facts.task = f"\"{one_line(said, MAX_SENTENCE_CHARS)}\" (the user's answer to the offers under Key Decisions)"
        facts.task_continues = True
        facts.decisions.append(f"The user answered \"{one_line(said, MAX_SENTENCE_CHARS)}\" to: " + "; ".join(offered))
    for sentence in sentences(_unwrapped(said)):
        facts.sentences.append(sentence)
    facts.constraints += _rules(said)
    facts.user_files += FILE_PATH.findall(said.removeprefix(command))
    facts.links += URL.findall(said)
    walk.turn_decisions = []


def _read_assistant(message: AssistantMessage, index: int, facts: Facts, walk: _Walk) -> None:
    walk.turn_ended = not message.tool_calls and message.stopReason == "stop"
    text = _assistant_text(message)
    failed = message.stopReason in ("error", "aborted")
    # A provider's failure (rate limit, credits, a dropped connection) is not the work's
    # blocker; the last one matters only if no answer came after it.
    if failed and message.stopReason == "error" and message.errorMessage:
        facts.model_error = message.errorMessage.strip()
    elif not failed and (text or message.tool_calls):
        facts.model_error = ""
    if text:
        walk.last_text = text
        walk.turn_text = text
        facts.question = ""
        _read_assistant_text(text, facts, walk)
    purpose = _edit_purpose(text)
    for call in message.tool_calls:
        walk.calls[call.id] = call
        _read_call(call, facts, walk)
        if purpose and _modifies(call):
            walk.purposes[call.id] = purpose


def _end_turn(walk: _Walk, facts: Facts) -> None:
    """The turn's last assistant text is its conclusion: root causes stated there count,
    and a question at its end waits for the user."""
    text = walk.turn_text
    walk.turn_text = ""
    if not text:
        return
    if not facts.requests and not walk.turn_ended_once:
        # Finished only when the turn's answer says so and reports no failure anywhere.
        facts.finished_earlier_turn = (
            walk.turn_ended and not _closing_question(text)
            and bool(DONE_CLAIM.search(_first_sentences(text, 2))) and not STILL_FAILING.search(text)
        )
    walk.turn_ended_once = True
    question = _closing_question(text)
    if walk.turn_ended and not question:
        # The latest finished turn's report states where the work stands (one that asks
        # reports nothing yet); earlier reports are superseded by it.
        walk.last_report = [
            s for s in sentences(text)
            if _is_prose(s) and not (_asks(s) or _narrates(s) or OFFER.match(s) or TABLE_ROW.match(s))
        ]
    for sentence in sentences(text):
        if ROOT_CAUSE.search(sentence) and not _asks(sentence) and not NARRATION.match(sentence):
            facts.root_causes.append(sentence)
    facts.question = question


def _assistant_text(message: AssistantMessage) -> str:
    # Thinking is the model's scratchpad: its conclusions reappear in the visible text.
    # Some models (DeepSeek, Qwen behind pi) write it into the text between <think> tags.
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    return _THINK.sub("", text).strip()


_THINK = re.compile(r"<think>.*?(?:</think>|\Z)|\A.*?</think>", re.DOTALL)


def _read_assistant_text(text: str, facts: Facts, walk: _Walk) -> None:
    agreed = False
    for sentence in sentences(text):
        facts.sentences.append(sentence)
        if AGREEMENT.match(sentence):
            agreed = True  # the next sentence restates the user's correction
            continue
        if agreed and CONSTRAINT_RESTATED.search(sentence):
            facts.constraints.append(sentence)
        agreed = False
        if OFFER.match(sentence):
            continue
        if DECISION.search(sentence) and not _narrates(sentence):
            facts.decisions.append(sentence)
            walk.turn_decisions.append(sentence)
        elif (DONE_CLAIM.search(sentence) and not _asks(sentence) and not sentence.endswith(":")
              and not PROBLEM_WORDS.search(sentence)):
            facts.done.append(sentence)
        elif ((SPECIFIC.search(sentence) or STATE.search(sentence)) and _is_prose(sentence)
              and not _narrates(sentence) and not _asks(sentence) and not TABLE_ROW.match(sentence)):
            facts.findings.append(sentence)
    facts.mentioned_files += FILE_PATH.findall(_outside_fences(text))


def _asks(sentence: str) -> bool:
    """A question, in any script's question mark (`？` in Japanese and Chinese text)."""
    return sentence.endswith(("?", "？", "؟"))


TABLE_ROW = re.compile(r"^\|.*\|$")
"""A markdown table's row: without its header it says nothing on its own."""


def _narrates(sentence: str) -> bool:
    """The assistant saying what it does next ("Let me fix it:"), not a choice about the work."""
    return bool(NARRATION.match(sentence) or STEP_NARRATION.match(sentence) and not CHOICE.search(sentence)
                or sentence.rstrip().endswith(":"))


def _modifies(call: ToolCall) -> bool:
    return call.name in DEFAULT_MODIFY_TOOLS or bool(PATCH_FILE.search(_patch_text(call.arguments)))


def _edit_purpose(text: str) -> str:
    """What the assistant says its next edit is for ("Now let me modify the `run` method
    to: 1. … 2. …"), without the narration; empty when it names nothing ("Let me fix it:")."""
    narrated = [match for s in sentences(text) if (match := STEP_NARRATION.match(s))]
    if not narrated:
        return ""
    purpose = narrated[-1].string[narrated[-1].end():].strip(" ,")
    if purpose.endswith(":"):
        purpose = f"{purpose} " + "; ".join(_list_items(text)[:MAX_PURPOSE_ITEMS])
    purpose = purpose.rstrip(": ")
    if not (SPECIFIC.search(purpose) or len(purpose.split()) >= MIN_PURPOSE_WORDS) or NOT_AN_EDIT.match(purpose):
        return ""
    return _clip(purpose, MAX_SENTENCE_CHARS)


MAX_PURPOSE_ITEMS = 3
NOT_AN_EDIT = re.compile(
    r"(?:commit|push|run|test|check|verify|deploy|build|wait|monitor|search|see|read|look|find)\b",
    re.IGNORECASE,
)
"""Narration of a step after the edit ("commit and push these fixes"), not what it changes."""
MIN_PURPOSE_WORDS = 5


def _read_call(call: ToolCall, facts: Facts, walk: _Walk) -> None:
    paths = _call_paths(call.arguments)
    if _modifies(call):
        facts.modified_files += paths
    elif call.name in DEFAULT_READ_TOOLS:
        facts.read_files += paths
    else:
        facts.mentioned_files += paths
    command = _command(call.arguments)
    if shown := shell_read_paths(call):
        facts.read_files += shown  # `sed -n '1,80p' a.ts` reads a.ts
    elif command:
        facts.mentioned_files += walk.paths_in(command)
    if _modifies(call) and paths and (defined := _definitions(call.arguments)):
        facts.definitions.append(f"`{paths[0]}` defines: " + "; ".join(defined))
    if is_subagent_call(call) and (required := brief(call)):
        facts.briefs.append(required)
    if plan := plan_written(call, facts.plan):
        facts.plan = plan
    if call.name.lower() in TODO_TOOLS and isinstance(call.arguments.get("todos"), list):
        facts.todos = [
            (str(todo.get("status", "")), str(todo.get("content", "")).strip())
            for todo in call.arguments["todos"]
            if isinstance(todo, dict) and str(todo.get("content", "")).strip()
        ]


DEFINITION = re.compile(
    r"^\s*(?:(?:CREATE|ALTER|DROP)\s+(?:OR\s+REPLACE\s+)?(?:TABLE|FUNCTION|VIEW|POLICY|INDEX|TRIGGER|TYPE|COLUMN)\b.*"
    r"|ALTER\s+COLUMN\b.*"
    r"|(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function|class|interface|def)\s+\w+.*"
    r"|(?:export\s+)?(?:const|type)\s+\w+\s*(?::[^=]*)?=\s*(?:\(|async|function|\{|z\.).*)",
    re.IGNORECASE,
)
"""A line of written code that defines something other code or a later session names."""
MAX_DEFINITIONS = 4
MAX_DEFINITION_CHARS = 120


def _definitions(arguments: dict[str, Any]) -> list[str]:
    """The definitions a write or edit adds (new text only: a patch's `+` lines)."""
    text = next((arguments[k] for k in ("content", "new_string", "new_str") if isinstance(arguments.get(k), str)), "")
    if not text and (patch := _patch_text(arguments)):
        text = "\n".join(line[1:] for line in patch.splitlines() if line.startswith("+"))
    found = [_clip(" ".join(line.split()).rstrip("{( "), MAX_DEFINITION_CHARS) for line in text.splitlines() if DEFINITION.match(line)]
    return _dedupe(found)[:MAX_DEFINITIONS]


def _read_result(
    result: ToolResultMessage, call: ToolCall | None, index: int, facts: Facts, walk: _Walk
) -> None:
    """Records what a tool result shows: a success, a failure, or nothing."""
    raw = message_text(result.content)
    if REJECTED_TOOL_USE in raw:
        _read_rejection(raw, facts, walk)
        return
    if call is not None and is_subagent_call(call) and not result.isError and (found := report(call, raw)):
        facts.reports.append(found)
    command = _command(call.arguments) if call else ""
    outcome, text = _outcome(raw, result.isError, command)
    if outcome == "neutral":
        if command:
            _record_run(facts, command, "neutral", "")
        return
    subject = _subject(call, result.toolName)
    outcome, texts = _second_look(outcome, text, command, call, facts)
    if texts:
        probes = tuple(f"probe:{label}" for label, code in probe_answers(text) if not code.startswith(("2", "3")))
        facts.errors.append(ErrorSeen(subject, texts, index, command=command, probes=probes))
    if command:
        _record_command_result(command, outcome, texts, text, call, facts, walk)
    if outcome == "ok":
        _record_success(subject, command, text, call, index, facts, walk)


def _read_rejection(raw: str, facts: Facts, walk: _Walk) -> None:
    """Not a failure of the work: the user stopped the call, often to say what to do."""
    if (words := user_words_in_result(raw)) and (user := read_user_text(words)).said:
        _end_turn(walk, facts)
        _read_said(user.said, user.pasted_log, user.command, facts, walk)


def _outcome(raw: str, is_error: bool, command: str) -> tuple[Verdict, str]:
    """The result's outcome (ok, failed or neutral) and its output's text."""
    outcome, output = verdict(raw, is_error, command)
    text = output.text
    if outcome == "unknown":
        # The pipeline's status is a filter's: only the command's own error report counts,
        # not a listing that shows "Error" in a status column.
        reported = _may_report_errors(command) and any(OWN_ERROR.search(line) for line in text.splitlines())
        outcome = "failed" if reported else "ok"
    if outcome == "failed" and command and not _may_report_errors(command):
        outcome = "neutral"  # a read or search that found nothing is an answer, not a blocker
    return outcome, text


def _second_look(
    outcome: Verdict, text: str, command: str, call: ToolCall | None, facts: Facts
) -> tuple[Verdict, list[str]]:
    """The outcome of a failure looked at again, and its error texts (none unless it is one)."""
    if outcome != "failed":
        return outcome, []
    if call is not None and call.name in DEFAULT_READ_TOOLS:
        return "ok", []  # a read that found no file is an answer, not a blocker
    texts = _error_texts(text, from_command=bool(command))
    if texts and (missing := _missing_program(texts)):
        # A probe for a tool that is not installed is a fact about the machine, not a
        # blocker: the agent goes on with another tool.
        facts.environment.append(f"`{missing}` is not installed here (command not found)")
        return "neutral", []
    return outcome, texts


def _record_command_result(
    command: str, outcome: Verdict, texts: list[str], text: str, call: ToolCall | None, facts: Facts, walk: _Walk
) -> None:
    # One line per command: a failure's whole text is the open error's, not the trail's.
    detail = texts[0].strip().splitlines()[0] if texts else _short_output(_without_noise(text))
    _record_run(facts, command, outcome, _clip(detail, 200))
    if command in facts.succeeded_commands:
        facts.succeeded_commands.remove(command)
    if outcome == "ok":
        facts.succeeded_commands.append(command)
        facts.shipped += _shipped(_raw_command(call.arguments) if call else command, text)
    if _is_check(command):
        walk.checks.pop(command, None)  # the latest run of a check is the one that counts
        if outcome == "ok":
            walk.checks[command] = _last_line(_without_noise(text))


def _record_success(
    subject: str, command: str, text: str, call: ToolCall | None, index: int, facts: Facts, walk: _Walk
) -> None:
    """What a successful result settles: the edit it made, and the errors it may resolve."""
    if call is not None and (purpose := walk.purposes.pop(call.id, "")):
        paths = _call_paths(call.arguments)
        facts.edits.append(f"Changed `{paths[0]}`: {purpose}" if paths else purpose)
    walk.successes.append((index, subject))
    walk.successes += [(index, f"file:{path}") for path in walk.paths_in(command)]
    walk.successes += [
        (index, f"probe:{label}") for label, code in probe_answers(text) if code.startswith(("2", "3"))
    ]


_NOT_FOUND = re.compile(
    r"^(?:(?:\S+: )*(?:line \d+: )?)([\w.+-]+): (?:command )?not found$"
    r"|^(?:\S+: )*command not found: ([\w.+-]+)$"  # zsh: `zsh:1: command not found: python`
)


_LETTER = re.compile(r"[^\W\d_]")


def _missing_program(texts: list[str]) -> str:
    """The program a failure says is not installed, when that is all it says (a separator
    line like `---`, echoed between probes, says nothing)."""
    lines = [line.strip() for text in texts for line in text.splitlines()]
    worded = [line for line in lines if _LETTER.search(line)]
    found = [m.group(1) or m.group(2) for line in worded if (m := _NOT_FOUND.match(line))]
    return found[0] if found and len(found) == len(worded) else ""


def _record_run(facts: Facts, command: str, outcome: Verdict, detail: str) -> None:
    facts.commands.pop(command, None)  # the latest run wins and moves to the end
    facts.commands[command] = CommandRun(command, outcome, detail)


def _is_check(command: str) -> bool:
    """A test, build or lint run, not a search through its output (`tsc | grep error | wc -l`),
    nor a command that only carries the words: a file written from a heredoc, a commit
    message or a pull request body that mentions pytest."""
    segments = pipeline(_without_text_arguments(command))
    return bool(segments and CHECK_COMMAND.search(segments[0])) and not (
        is_search(command) or any(program(s) == "wc" for s in segments)
    )


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1.*?(?:\s\2\b|$)", re.DOTALL)
_QUOTED_TEXT = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'")


def _without_text_arguments(command: str) -> str:
    """The command without heredoc bodies and quoted strings: what it runs, not what it says."""
    return _QUOTED_TEXT.sub("''", _HEREDOC.sub("", command))


_SHIPPING_STEP_SEPARATOR = re.compile(r"\s*(?:&&|;|\n)\s*(?=\S)")
_GIT_COMMIT = re.compile(r"git commit\b")
_GIT_PUSH = re.compile(r"git push\b")
_GIT_TAG = re.compile(r"git tag\b")
_PR_CREATE = re.compile(r"gh pr create\b")


def _shipped(command: str, output: str) -> list[str]:
    """What a successful git or gh command delivered: a commit, a push, a PR, a tag.
    `command` is as written, line breaks kept: a commit message's first line is its title."""
    found: list[str] = []
    if "git" not in command and "gh" not in command:
        return found  # every step below runs one of them (a script's lines are steps too)
    for step in _SHIPPING_STEP_SEPARATOR.split(command.strip()):
        step = main_command(step)
        if _GIT_COMMIT.match(step):
            details = _commit_details(command)
            found.append(f"Committed: {_commit_title(command)}" + (f" ({details})" if details else ""))
        elif _GIT_PUSH.match(step):
            found.append(f"Pushed: `{step}`")
        elif _GIT_TAG.match(step):
            found.append(f"Tagged: `{step}`")
        elif _PR_CREATE.match(step):
            urls = URL.findall(output)
            found.append("Opened a pull request" + (f": {urls[-1]}" if urls else ""))
    return found


MAX_COMMIT_DETAILS = 4
MAX_COMMIT_DETAILS_CHARS = 300


def _commit_details(command: str) -> str:
    """The points a commit message's body lists: the agent's own account of what the
    commit holds (in an autonomous run, often the only statement of a design choice)."""
    body = re.search(r"<<\s*'?(\w+)'?\s*\n\s*.+?\n(.*?)\n\s*\1\b", command, re.DOTALL)
    if not body:
        return ""
    points = [m.group(1).strip() for line in body.group(2).splitlines() if (m := re.match(r"^\s*[-*]\s+(.+)$", line))]
    return _clip("; ".join(points[:MAX_COMMIT_DETAILS]), MAX_COMMIT_DETAILS_CHARS)


def _commit_title(command: str) -> str:
    """The first line of the message a `git commit` command gives, heredoc or `-m`."""
    if heredoc := re.search(r"<<\s*'?(\w+)'?\s*\n\s*(.+)", command):
        return _clip(heredoc.group(2).strip(), 120)
    if message := re.search(r"-m\s+(?:\"([^\"]+)\"|'([^']+)'|(\S+))", command):
        text = next(group for group in message.groups() if group)
        return _clip(text.strip().splitlines()[0], 120)
    return "(message not given on the command line)"


def _may_report_errors(command: str) -> bool:
    """Whether a successful result can still report errors in its text: a command's output
    can (a test run), a file's or a search's content cannot (`except KeyError:` is code)."""
    return bool(command) and not CONTENT_COMMAND.match(main_command(command))


def _error_texts(text: str, *, from_command: bool) -> list[str]:
    """The verbatim error of a failed result: a short one whole, a long one by its error
    lines; without any, a command's last lines (where a shell prints what went wrong) or
    another tool's first line (its message, before the code it could not match)."""
    if not text:
        return ["(the tool failed without output)"]
    lines = text.splitlines()
    if len(lines) <= WHOLE_ERROR_MAX_LINES and len(text) <= WHOLE_ERROR_MAX_CHARS:
        return [text]
    found = _error_lines(text)
    if not found:
        said = [line.strip() for line in lines if line.strip()]
        found = said[-3:] if from_command else said[:1]
    if len(found) > MAX_ERROR_LINES_PER_RESULT:
        found = found[:2] + found[-(MAX_ERROR_LINES_PER_RESULT - 2):]
    return found


def _error_lines(text: str) -> list[str]:
    """Lines that report an error, verbatim; for a Python traceback also its innermost frame."""
    found: list[str] = []
    frame = ""
    for line in _ANSI.sub("", text).splitlines():
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
    pasted is context, not a blocker. A failed edit is resolved by any later success on
    its file (a retry, or a `cp` over it)."""
    latest_failure = {error.subject: error.index for error in errors if error.command}
    for error in errors:
        error.superseded = bool(error.command) and latest_failure[error.subject] > error.index
        fixed_by = {error.subject, *error.probes}
        error.resolved = error.subject == "user" or any(
            index > error.index and subject in fixed_by for index, subject in successes
        )


def _read_open_work(last_text: str, pending: list[ToolCall], facts: Facts, turn_ended: bool) -> None:
    """In Progress and Next Steps from where the span ends. A finished turn's last message
    is a report: its points are findings, and only what it says is next is a next step; an
    unfinished turn is in the middle of what its last message says."""
    facts.in_progress += [
        f"Waiting on `{_describe_call(call)}`" for call in pending if call.name.lower() not in TODO_TOOLS
    ]
    claims_done = bool(last_text) and bool(DONE_CLAIM.search(_first_sentences(last_text, 1)))
    # A finished turn that reports an open problem is still work in progress.
    reports_problem = bool(PROBLEM_WORDS.search(_first_sentences(last_text, 2)))
    if last_text and (not turn_ended or reports_problem) and not claims_done and not facts.unanswered and not facts.question:
        # What the work is in the middle of, without the narration of the next tool call.
        state = [s for s in list(sentences(last_text))[:2] if not STEP_NARRATION.match(s) and _is_prose(s)]
        if state:
            facts.in_progress.append(" ".join(state))
    listed = _list_items_by_heading(last_text)
    steps = [item for heading, item in listed if NEXT_HEADING.search(heading) and not DONE_CLAIM.search(item)]
    if not turn_ended:
        steps += [item for heading, item in listed if not heading and not DONE_CLAIM.search(item)]
    else:
        facts.findings += [item for heading, item in listed if not NEXT_HEADING.search(heading) and not _asks(item)]
    steps += [
        s for s in sentences(last_text)
        if NEXT_STEP.search(s) and _is_prose(s) and s not in steps and not _narrates(s) and not _is_listed(s, listed)
    ]
    facts.next_steps = _dedupe(steps)[:MAX_NEXT_STEPS]


NEXT_HEADING = re.compile(r"\b(?:next|to ?do|remaining|pending|follow[- ]ups?|options?)\b", re.IGNORECASE)


def _list_items_by_heading(text: str) -> list[tuple[str, str]]:
    """List items with the heading (or bold lead line) they sit under."""
    found: list[tuple[str, str]] = []
    heading = ""
    for line in _outside_fences(text).splitlines():
        stripped = line.strip()
        if re.match(r"^(?:#+\s+.+|\*\*[^*]+\*\*:?|[^-*+\d].{0,60}:)$", stripped):
            heading = stripped
        elif re.match(r"^\s*(?:[-*+]|\d+[.)])\s+\S", line):
            found.append((heading, _clip(_LIST_MARK.sub("", line).strip(), MAX_SENTENCE_CHARS)))
    return found


def _is_prose(sentence: str) -> bool:
    """A sentence, not a bold heading like "**Next steps**" or a three-word label."""
    return len(_EMPHASIS.sub("", sentence).split()) >= MIN_PROSE_WORDS


_EMPHASIS = re.compile(r"[*_`#]")


MIN_PROSE_WORDS = 4


def _is_listed(sentence: str, listed: list[tuple[str, str]]) -> bool:
    return any(sentence in item for _, item in listed)


def _offers(text: str) -> list[str]:
    """What an assistant message offers or asks the user to choose: its next-step items,
    its offers ("If you want, I can …"), its closing question."""
    if not text:
        return []
    listed = [item for heading, item in _list_items_by_heading(text) if NEXT_HEADING.search(heading)]
    offers = [s for s in sentences(text) if OFFER.match(s) and not _is_listed(s, [("", i) for i in listed])]
    question = _closing_question(text)
    return _dedupe([*listed, *offers, *([question] if question else [])])[:MAX_NEXT_STEPS]


def _closing_question(text: str) -> str:
    """The question an assistant message ends on, with the options it lists."""
    said = list(sentences(text))
    if not said or not _asks(said[-1]):
        questions = [s for s in said[-3:] if _asks(s)]
        if not questions or not _list_items(text):
            return ""
        return questions[-1]
    return said[-1]


def _rules(said: str) -> list[str]:
    """The user's constraints: rule sentences, and a rule that introduces a list ("Must
    reuse existing helpers:") with the list's items, which are what the rule names."""
    rules: list[str] = []
    lines = _unwrapped(said).splitlines()
    for position, line in enumerate(lines):
        for sentence in sentences(line):
            if not (CONSTRAINT.search(sentence) and _states_a_rule(sentence)):
                continue
            if sentence.endswith(":"):
                items = _list_items("\n".join(_following_list(lines[position + 1:])))
                if not items:
                    continue  # a heading ("What must change:") with nothing under it
                sentence = f"{sentence} " + "; ".join(items[:MAX_RULE_ITEMS])
            rules.append(_clip(sentence, MAX_SENTENCE_CHARS))
    return rules


MAX_RULE_ITEMS = 6


def _following_list(lines: list[str]) -> list[str]:
    """The list lines right after a line (blank lines aside), up to the first other line."""
    found: list[str] = []
    for line in lines:
        if _LIST_MARK.match(line) and not line.lstrip().startswith("#"):
            found.append(line)
        elif line.strip() or found:
            break
    return found


def _states_a_rule(sentence: str) -> bool:
    """A constraint is a statement, not a question, a bug report or a request for help."""
    return not _asks(sentence) and not PROBLEM_REPORT_WORDS.search(sentence)


PROBLEM_REPORT_WORDS = re.compile(
    r"\b(?:errors?(?!\s+(?:budget|rate|handling|messages?|codes?|pages?|boundar|reporting))|not working|doesn'?t work|isn'?t working|can'?t (?:find|see)|cannot find|still no|"
    r"broken|crash(?:es|ed)?|fails?)\b",
    re.IGNORECASE,
)


def _unwrapped(text: str) -> str:
    """Prose with hard-wrapped lines joined, so a sentence is never cut into fragments."""
    paragraphs = re.split(r"\n\s*\n", text)
    joined = []
    for paragraph in paragraphs:
        lines = paragraph.splitlines()
        out: list[str] = []
        for line in lines:
            if out and not _LIST_MARK.match(line) and not re.search(r"[.!?:]\s*$", out[-1]):
                out[-1] = f"{out[-1]} {line.strip()}"
            else:
                out.append(line)
        joined.append("\n".join(out))
    return "\n\n".join(joined)


def _without_noise(text: str) -> str:
    lines = text.splitlines()
    if not may_hold_noise(text):  # the common case, without a search per line
        return "\n".join(lines)
    return "\n".join(line for line in lines if not is_noise(line))


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\[[0-9;]{1,8}m")


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
    """The command a tool call runs, on one line."""
    return " ".join(_raw_command(arguments).split())


def _raw_command(arguments: dict[str, Any]) -> str:
    """The command as written; Codex gives it as argv (`["bash", "-lc", "npm test"]`)."""
    for key in COMMAND_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if len(value) >= 3 and value[1] in ("-c", "-lc", "-ic") and value[0].rsplit("/", 1)[-1] in SHELLS:
                value = value[-1]
            else:
                value = shlex.join(value)
        if isinstance(value, str) and value.strip():
            return value
    return ""


SHELLS = frozenset({"bash", "sh", "zsh", "dash", "fish"})


def command_subject(command: str) -> str:
    """The program a command runs (with its subcommand for runners like `npm test`), so that
    `python -m pytest x` and `pytest` count as the same check."""
    command = main_command(command)
    if check := CHECK_COMMAND.search(command):
        return check.group(0)
    # The step whose result the output reports: `chmod +x t.sh && t.sh` runs t.sh.
    last_step = next(iter(pipeline(command)), command)
    words = first_words(last_step, 2)
    return " ".join(words[:2] if words and words[0] in RUNNERS else words[:1])


_QUOTES_CLOSED = re.compile(r"""(?:[^'"\\]++|\\[\s\S]|'[^']*+'|"(?:[^"\\]++|\\[\s\S])*+")*+""")
"""A command whose quotes and escapes all close, as POSIX `shlex` reads them."""


def first_words(command: str, count: int) -> list[str]:
    """`shlex.split(command)[:count]`, or `command.split()[:count]` when shlex cannot read it,
    without shlex reading every character of a long command (a heredoc, a script) in Python:
    one pattern checks that its quotes close, then shlex reads only the first words."""
    if not _QUOTES_CLOSED.fullmatch(command):
        return command.split()[:count]
    lexer = shlex.shlex(command, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(itertools.islice(lexer, count))


def _subject(call: ToolCall | None, tool_name: str) -> str:
    """What a tool call worked on, so a later success on the same thing resolves an error:
    the file, or the command's program (with its subcommand for runners like `npm test`)."""
    if call is None:
        return tool_name
    paths = _call_paths(call.arguments)
    if paths:
        return f"file:{paths[0]}"
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


def _short_output(text: str) -> str:
    """A short output whole (versions, counts, a status), a long one by its last line."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    joined = " | ".join(lines)
    return joined if len(joined) <= SHORT_OUTPUT_CHARS else _last_line(text)


SHORT_OUTPUT_CHARS = 200


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return _clip(lines[-1], 160) if lines else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
