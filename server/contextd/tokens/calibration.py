"""How many tokens a provider counts for what we count with o200k, learned from its usage reports.

Anthropic and Google publish no tokenizer (nor does any unknown model), so their contexts are
counted with `o200k_base` and multiplied by a calibration factor. The factor starts from the
tokenizer family's prior (`ModelInfo.calibration_prior`) and learns from every valid answer
of the session: between two consecutive valid answers on one branch, with no compaction or
prune between them, the provider's prompt grew by `reported` tokens while the entries we
counted in between (the first answer itself, the results and messages after it) hold
`counted` tokens. Comparing growth rather than whole prompts leaves out what the client sends
that contextd never sees (the system prompt, tool schemas): that part is the same in both
prompts. A context-overflow error that states the prompt's size is one more such answer.
The factor is learned on text alone: a stretch that holds an image (whose cost is in the
provider's tokens already, see `ModelInfo.image_scale`) teaches nothing.

Everything here is a pure function of the session's entries, so the factor is derived again
from the session file on load: a restart keeps it with no extra file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from contextd.model import AssistantMessage, Entry, Usage

PRIOR_WEIGHT_TOKENS = 4_000
"""How much counted growth the prior is worth: a few turns of real evidence outweigh it."""

PLAUSIBLE_RATIOS = (0.5, 3.0)
"""A growth ratio outside these bounds is not a tokenizer difference but something we cannot
see (an edited history, a provider that drops old thinking, a restarted agent): ignored."""

FACTOR_DECIMALS = 3
"""The factor is rounded before use, so `tokens == reported + round(counted * calibration)`
holds for the figures a client is shown."""


@dataclass(frozen=True)
class Evidence:
    """Growth observed for one tokenizer: provider tokens and our counted tokens, summed."""

    reported: int = 0
    counted: int = 0

    def add(self, reported: int, counted: int) -> Evidence:
        return Evidence(self.reported + reported, self.counted + counted)


NO_EVIDENCE = Evidence()


def calibration_factor(prior: float | None, evidence: Evidence) -> float:
    """The factor to multiply counted tokens with: 1.0 for an exact encoding (no prior),
    else the prior blended with the evidence, weighted by counted tokens."""
    if prior is None:
        return 1.0
    factor = (prior * PRIOR_WEIGHT_TOKENS + evidence.reported) / (
        PRIOR_WEIGHT_TOKENS + evidence.counted
    )
    low, high = PLAUSIBLE_RATIOS
    return round(min(max(factor, low), high), FACTOR_DECIMALS)


def prompt_tokens(usage: Usage) -> int:
    """The prompt an answer was given, as the provider counted it (its output left out)."""
    parts = usage.input + usage.cacheRead + usage.cacheWrite
    if parts == 0 and usage.total is not None:
        return max(usage.total - usage.output, 0)
    return parts


_NUMBER = r"(\d[\d,]*)"
_STATED_PROMPT_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Anthropic: "prompt is too long: 212000 tokens > 200000 maximum"
    re.compile(rf"{_NUMBER} tokens? > \d"),
    # OpenAI: "maximum context length is 128000 tokens. However, you requested 130000 tokens
    # (125000 in the messages, 5000 in the completion)"
    re.compile(rf"maximum context length is .*?{_NUMBER} in the messages", re.DOTALL),
    # OpenAI: "maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens"
    re.compile(rf"maximum context length is .*?resulted in {_NUMBER} tokens", re.DOTALL),
    # Google: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)"
    re.compile(rf"input token count \({_NUMBER}\) exceeds"),
    # Zhipu (GLM): "Request 182867 input tokens exceeds the model's maximum context length 202750"
    re.compile(rf"Request {_NUMBER} input tokens exceeds"),
)
_STATED_WINDOW_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"tokens? > {_NUMBER} maximum"),  # Anthropic
    re.compile(rf"maximum context length (?:is )?{_NUMBER}"),  # OpenAI, Zhipu
    re.compile(rf"maximum number of tokens allowed \({_NUMBER}\)"),  # Google
)


def stated_prompt_tokens(error_message: str | None) -> int | None:
    """The prompt size a context-overflow error states, for the providers whose wording is
    known; None when the message states no size."""
    if not error_message:
        return None
    for pattern in _STATED_PROMPT_PATTERNS:
        match = pattern.search(error_message)
        if match:
            return _number(match.group(1))
    return None


def stated_window(error_message: str | None) -> int | None:
    """The model's window a context-overflow error states, for the providers whose wording
    is known; None when the message states none."""
    for pattern in _STATED_WINDOW_PATTERNS:
        match = pattern.search(error_message or "")
        if match:
            return _number(match.group(1))
    return None


def _number(text: str) -> int:
    return int(text.replace(",", ""))


class Since(NamedTuple):  # one made per node of every load: a tuple is made fastest
    """What calibration knows at one node of the tree: the prompt size the latest valid answer
    above it reported (None after a compaction or prune, or before any answer), and how many
    tokens were counted since; `tokenizer` is the session model's at that node."""

    prompt: int | None
    counted: int
    tokenizer: str


class Observation(NamedTuple):
    tokenizer: str
    reported: int
    counted: int


def calibration_step(
    before: Since, entry: Entry, tokens: int, tokenizer_of: Callable[[str], str]
) -> tuple[Since, Observation | None]:
    """The calibration state after the node `entry` (whose counted tokens are `tokens`), given
    the state at its parent, and what its answer teaches, if anything.

    `tokenizer_of` names the tokenizer of a model id (the answer's own `model`, else the
    session's model at that point)."""
    # Type and role tags, not isinstance: this runs for every node of every load, and a
    # pydantic model's isinstance is slow when the answer is no.
    if entry.type == "message":
        message = entry.brief
        if message.role == "assistant":
            return _answer_step(before, message, tokens, tokenizer_of)
        if message.lost_result or message.holds_image:
            # A result the transcript lost: the provider counted the real one, contextd a
            # stand-in. An image: its cost is in the provider's tokens already (counted at
            # the prior's scale, `ModelInfo.image_scale`) and by a rule the provider follows
            # only about, so the growth around it would teach the factor the prior back.
            return Since(None, 0, before.tokenizer), None
    elif entry.type == "compaction" or entry.type == "prune":
        # The context changed in a way the counts do not show: no growth spans this.
        return Since(None, 0, before.tokenizer), None
    elif entry.type == "model_change":
        tokenizer = tokenizer_of(entry.model)
        if tokenizer != before.tokenizer:  # the next prompt is counted by another tokenizer
            return Since(None, 0, tokenizer), None
        return before, None
    return Since(before.prompt, before.counted + tokens, before.tokenizer), None


def _answer_step(
    before: Since, answer: AssistantMessage, tokens: int, tokenizer_of: Callable[[str], str]
) -> tuple[Since, Observation | None]:
    tokenizer = tokenizer_of(answer.model) if answer.model else before.tokenizer
    reported = _reported_prompt(answer)
    observation = None
    if reported is not None and before.prompt is not None and tokenizer == before.tokenizer:
        observation = _plausible(Observation(tokenizer, reported - before.prompt, before.counted))
    if answer.failed or reported is None:
        return Since(before.prompt, before.counted + tokens, before.tokenizer), observation
    return Since(reported, tokens, tokenizer), observation


def _reported_prompt(answer: AssistantMessage) -> int | None:
    """The prompt size the provider reported for this answer: its usage when it is valid, the
    size an overflow error states otherwise."""
    if not answer.failed:
        prompt = prompt_tokens(answer.usage) if answer.usage is not None else 0
        return prompt or None  # all zeros: the agent had nothing to report
    if answer.errorKind == "context_overflow":
        return stated_prompt_tokens(answer.errorMessage)
    return None


def _plausible(observation: Observation) -> Observation | None:
    if observation.counted <= 0 or observation.reported <= 0:
        return None
    low, high = PLAUSIBLE_RATIOS
    ratio = observation.reported / observation.counted
    return observation if low <= ratio <= high else None


@dataclass
class CalibrationLedger:
    """The evidence of one session, per tokenizer, and nodes' states for their children.

    Nodes must be added parents first (file order does that). Once learned, only the states
    a next node is likely to need are kept (`keep_only`: about a hundred bytes per node
    otherwise); a node added below one whose state was let go has it worked out again from
    its path (`path_to`), which a state depends on alone."""

    tokenizer_of: Callable[[str], str]
    root_tokenizer: str
    since: dict[str, Since]
    evidence: dict[str, Evidence]
    path_to: Callable[[str], Sequence[Entry]] | None = None
    tokens: Mapping[str, int] = field(default_factory=dict)
    """The nodes' counted tokens, for the states worked out again."""
    resolved: dict[str, str] = field(default_factory=dict)
    """The tokenizer each model id named was first resolved to: the evidence holds for
    `tokenizer_of` only while it resolves them alike (a load may take the ledger as kept)."""

    @classmethod
    def start(cls, tokenizer_of: Callable[[str], str], root_tokenizer: str) -> CalibrationLedger:
        return cls(tokenizer_of, root_tokenizer, {}, {})

    @classmethod
    def restored(
        cls, tokenizer_of: Callable[[str], str], root_tokenizer: str, resolved: dict[str, str],
        evidence: dict[str, Evidence], leaf: tuple[str, Since] | None,
    ) -> CalibrationLedger:
        """A ledger as `learn` made it before, from its evidence, resolutions and the leaf's
        state (the other states are worked out again when asked, as after `keep_only`)."""
        return cls(tokenizer_of, root_tokenizer, dict([leaf]) if leaf else {}, evidence, resolved=resolved)

    def resolves_alike(self, tokenizer_of: Callable[[str], str]) -> bool:
        """Whether `tokenizer_of` resolves every model id this ledger met as it was resolved then."""
        return all(tokenizer_of(model_id) == tokenizer for model_id, tokenizer in self.resolved.items())

    def _tokenizer(self, model_id: str) -> str:
        tokenizer = self.tokenizer_of(model_id)
        self.resolved.setdefault(model_id, tokenizer)
        return tokenizer

    def add(self, entry: Entry, tokens: int) -> Observation | None:
        before = self.since.get(entry.parentId) if entry.parentId else None  # the parent's, mostly
        after, observation = calibration_step(before or self.state_at(entry.parentId), entry, tokens, self._tokenizer)
        self.since[entry.id] = after
        if observation is not None:
            known = self.evidence.get(observation.tokenizer, NO_EVIDENCE)
            self.evidence[observation.tokenizer] = known.add(observation.reported, observation.counted)
        return observation

    def state_at(self, node_id: str | None) -> Since:
        state = self.since.get(node_id) if node_id else None
        if state is None and node_id and self.path_to is not None:
            state = Since(None, 0, self.root_tokenizer)
            for node in self.path_to(node_id):
                state, _ = calibration_step(state, node, self.tokens.get(node.id, 0), self._tokenizer)
            self.since[node_id] = state
        return state or Since(None, 0, self.root_tokenizer)

    def keep_only(self, node_id: str | None, path_to: Callable[[str], Sequence[Entry]], tokens: Mapping[str, int]) -> None:
        """Let go of every node's state but `node_id`'s (the leaf's: where the next node comes);
        the others are worked out again from `path_to` and `tokens` when a node comes below them."""
        kept = self.since.get(node_id) if node_id else None
        self.since = {node_id: kept} if node_id and kept is not None else {}
        self.path_to, self.tokens = path_to, tokens

    def factor(self, tokenizer: str, prior: float | None) -> float:
        return calibration_factor(prior, self.evidence.get(tokenizer, NO_EVIDENCE))


def learn(
    nodes: Iterable[Entry],
    entry_tokens: Mapping[str, int],
    tokenizer_of: Callable[[str], str],
    root_tokenizer: str,
) -> CalibrationLedger:
    """The ledger of a whole session from its tree nodes, parents first."""
    ledger = CalibrationLedger.start(tokenizer_of, root_tokenizer)
    for entry in nodes:
        ledger.add(entry, entry_tokens.get(entry.id, 0))
    return ledger
