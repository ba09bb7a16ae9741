"""The part of the prompt contextd never sees, learned from the provider's reports.

An agent sends more than the conversation contextd holds: its system prompt and tool schemas
(Claude Code: 15-65k tokens with MCP servers; Codex and pi: 1-6k). A provider's report
counts them; contextd's own count does not. Right after a compaction there is no report yet,
so the figure would show only the counted part, and tell a user they have room they do not
have. The difference is learned per session: the prompt the provider reported minus the
calibrated count of what contextd sent before that answer.

It is learned at the first valid report of each stretch (from the session's start, from a
compaction or prune, or from a change to another model): there the counted part is smallest, so counting's own drift (results
the agent shortens, a calibration still settling) weighs least; a later compaction carries
the value on until the next stretch's first report replaces it (a new model, new tools), or
a report shows the prompt outgrew what contextd saw by far more than drift (tools connected
mid-session: `GROWTH_SHARE`), and teaches it there. A
stretch whose beginning contextd never saw teaches nothing: a transcript that opens with an
answer or a tool result (a file cut from a longer session) has history in its first reports
that the next compaction drops. A handoff passes the value on in its entry.

Before a session's path has taught anything (no report yet, or only reports of a stretch
whose beginning contextd never saw), a mirror of a known agent takes that agent's prior
(`UNSEEN_PRIORS`, learned from the corpus of real transcripts), replaced by the first value
the path teaches.

Everything here is a pure function of the path, so a restart or a fork derives the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from contextd.compaction.context import standing_instructions, visible_entries
from contextd.model import (
    CompactionEntry,
    Entry,
    HandoffEntry,
    Message,
    MessageEntry,
)
from contextd.tokens.calibration import prompt_tokens, stated_prompt_tokens
from contextd.tokens.context_size import context_tokens_of, reports_context


ANY_MODEL = "*"

UNSEEN_PRIORS: dict[tuple[str, str], int] = {
    # Each is the median, over the transcripts of tests/fixtures/real of that agent (and
    # tokenizer family), of the first unseen part each transcript taught (benchmarks/README.md,
    # "The figure against the provider's next report"). Claude Code with Claude 4.x: atlas-opus41
    # 50,259, atlas-short 52,881, atlas-sonnet45 65,787 (one user's MCP servers; its GLM
    # transcripts report zeros and teach nothing, so no prior for them).
    ("claude-code", "claude-4"): 52_881,
    # Codex with gpt-5.x: lotto 3,218, voice-assistant 3,330, knearme-agent-review 4,894,
    # knearme-two-compactions 4,894, knearme-compacted 5,532.
    ("codex", "o200k_base"): 4_894,
    # pi, whatever the model (its own prompt and tools): termux-qwen 1,348,
    # coffee-model-switches 1,504, coffee-single-task 1,585, coffee-deepseek 1,590.
    ("pi", ANY_MODEL): 1_544,
}
"""The unseen part (provider tokens) to assume for a mirror of `(agent, tokenizer)` until its
own reports teach it. An agent's unseen part depends on its version and the tools a user
connects (MCP servers: tens of thousands of tokens), so a prior is a stand-in, never a
measurement: the first value the path teaches replaces it."""


def unseen_prior(agent: str | None, tokenizer: str) -> int:
    """The prior for a session of `agent` (None: a session clients write, which sends its
    instructions through contextd) talking to a model of `tokenizer`; 0 where none is known."""
    if agent is None:
        return 0
    return UNSEEN_PRIORS.get((agent, tokenizer), UNSEEN_PRIORS.get((agent, ANY_MODEL), 0))


@dataclass(frozen=True)
class UnseenEvidence:
    """One report's prompt and the counted (uncalibrated) tokens contextd had sent for it."""

    prompt: int
    counted: int

    def tokens(self, calibration: float) -> int:
        """The unseen part with today's calibration (never negative: counting can overshoot)."""
        return max(self.prompt - round(self.counted * calibration), 0)


@dataclass(frozen=True)
class UnseenState:
    """What the path teaches: the evidence in force at its end (None before any), and whether
    the current stretch is settled (it taught already, or it cannot teach: no need to look
    at its later answers)."""

    evidence: UnseenEvidence | None
    settled: bool


GROWTH_SHARE = 0.15
"""A report whose prompt grew past what contextd saw by more than this share of the prompt
(and `GROWTH_MIN_TOKENS`) shows the agent's unseen part grew: tools connected mid-session
(an MCP server that finished starting), a longer system prompt. Smaller gaps are counting's
drift and the reminders an agent adds to its history, which a compaction drops again."""
GROWTH_MIN_TOKENS = 2_000


def learn_unseen(
    path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    pruned_tokens: Callable[[int], int],
    *,
    calibration: float,
) -> UnseenState:
    """The unseen part at the end of `path`; `entry_tokens` holds each entry's counted
    tokens, `pruned_tokens(n)` counts the placeholder of a pruned result of `n` tokens,
    `calibration` is the factor counted tokens are multiplied by."""
    evidence: Callable[[], UnseenEvidence] | None = None
    """The evidence in force, worked out only when needed (`_Evidence`)."""
    settled = not _opens_conversation(path)
    model = None
    reported: int | None = None
    """The latest report's context (None: none since the stretch began) and what was
    counted after it (this loop runs over every entry of every load: nothing is made for an
    entry but where a report asks, and entries are told apart by their type tags)."""
    counted = 0
    for index, entry in enumerate(path):
        answer = entry.brief if entry.type == "message" and entry.brief.role == "assistant" else None
        if answer is not None and (prompt := reported_prompt(answer)) is not None:
            if not settled:
                evidence, settled = _Evidence(path, index + 1, entry_tokens, pruned_tokens, calibration), True
            elif reported is not None and grew_past_counting(prompt, reported + round(counted * calibration)):
                taught = _Evidence(path, index + 1, entry_tokens, pruned_tokens, calibration)
                if _grew(prompt, evidence, taught, calibration):
                    evidence = taught
            reported, counted = _context_after(answer, prompt), 0
        elif entry.type == "compaction" or entry.type == "prune":
            settled, reported = False, None
        elif entry.type == "model_change":
            # Another model may come with another system prompt: its first report teaches.
            settled = settled and entry.model == (model or entry.model)
            model = entry.model
        elif entry.type == "handoff" and entry.unseenTokens is not None:
            evidence, settled = _known(UnseenEvidence(entry.unseenTokens, 0)), False
        elif reported is not None:
            counted += entry_tokens.get(entry.id, 0)
    return UnseenState(evidence() if evidence is not None else None, settled)


class _Evidence:
    """The evidence of the report ending `path[:end]`, worked out when first asked (it is
    O(path)): a report that teaches is replaced by the next stretch's, so working each out
    at once made a load quadratic in the stretches (pi changes models often)."""

    __slots__ = ("_path", "_end", "_entry_tokens", "_pruned_tokens", "_calibration", "_value")

    def __init__(
        self,
        path: Sequence[Entry],
        end: int,
        entry_tokens: Mapping[str, int],
        pruned_tokens: Callable[[int], int],
        calibration: float,
    ) -> None:
        self._path, self._end, self._entry_tokens, self._pruned_tokens = path, end, entry_tokens, pruned_tokens
        self._calibration = calibration
        self._value: UnseenEvidence | None = None

    def __call__(self) -> UnseenEvidence:
        if self._value is None:
            before = self._path[: self._end]
            self._value = evidence_at(before, self._entry_tokens, self._pruned_tokens, calibration=self._calibration)
        return self._value


def reported_prompt(message: Message) -> int | None:
    """The prompt a provider said it was sent for this answer: a valid report's, or the size a
    context-overflow error states (a provider whose usage reports zeros, as GLM's through
    Claude Code, may still state it there); None when it said none."""
    if reports_context(message):
        assert message.role == "assistant" and message.usage is not None
        return prompt_tokens(message.usage)
    if message.role == "assistant" and message.errorKind == "context_overflow":
        return stated_prompt_tokens(message.errorMessage)
    return None


def _context_after(message: Message, prompt: int) -> int:
    """The context after an answer that reported `prompt`: a report holds the answer itself,
    an overflow answered nothing."""
    if message.role == "assistant" and message.usage is not None and not message.failed:
        return message.usage.context_tokens
    return prompt


def _known(evidence: UnseenEvidence) -> Callable[[], UnseenEvidence]:
    return lambda: evidence


def grew_past_counting(prompt: int, expected: int) -> bool:
    """Whether a reported `prompt` exceeds the `expected` one by more than drift."""
    return prompt - expected > max(GROWTH_SHARE * prompt, GROWTH_MIN_TOKENS)


def _grew(
    prompt: int,
    evidence: Callable[[], UnseenEvidence] | None,
    taught: Callable[[], UnseenEvidence],
    calibration: float,
) -> bool:
    """Whether a report of `prompt` tokens that outgrew the previous report plus what was
    counted since, in a stretch that taught `evidence`, shows the unseen part grew (`taught`
    is what the report would teach): its prompt outgrew the counted context plus the
    unseen part known too. Both, because some agents interleave reports of another
    conversation (Codex's review mode: a prompt a fifth the size), and the step back up
    from one is no growth of the unseen part."""
    if evidence is None:
        return False
    return grew_past_counting(prompt, round(taught().counted * calibration) + evidence().tokens(calibration))


def first_unseen(
    path: Sequence[Entry], entry_tokens: Mapping[str, int], pruned_tokens: Callable[[int], int], *, calibration: float
) -> UnseenEvidence | None:
    """The first evidence `path` teaches (None if it teaches none): what a session tells
    about its agent, the value the corpus's priors are derived from."""
    for index, entry in enumerate(path):
        if entry.type == "message" and reported_prompt(entry.brief) is not None:
            evidence = learn_unseen(path[: index + 1], entry_tokens, pruned_tokens, calibration=calibration).evidence
            if evidence is not None:
                return evidence
    return None


def evidence_at(
    path: Sequence[Entry], entry_tokens: Mapping[str, int], pruned_tokens: Callable[[int], int], *, calibration: float
) -> UnseenEvidence:
    """The evidence of the answer ending `path` (a valid report, or an overflow that states
    its prompt): what it was sent is the context before it, with the prunes made before it."""
    answer, before = path[-1], path[:-1]
    assert isinstance(answer, MessageEntry)
    prompt = reported_prompt(answer.brief)
    assert prompt is not None
    tokens_of = context_tokens_of(before, entry_tokens, pruned_tokens, calibration=calibration)
    counted = sum(tokens_of(entry) for entry in [*standing_instructions(before), *visible_entries(before)])
    return UnseenEvidence(prompt, counted)


def _opens_conversation(path: Sequence[Entry]) -> bool:
    """Whether the path's first message is a user's request: contextd saw the conversation
    from its beginning (a handoff or compaction also opens a context contextd saw whole)."""
    for entry in path:
        if isinstance(entry, (CompactionEntry, HandoffEntry)):
            return True
        if entry.type == "message":
            return entry.brief.role == "user"
    return True
