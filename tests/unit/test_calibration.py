"""The context's token figure: which usage still holds, and calibrated counts for models
whose tokenizer does not ship."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import pytest
from contextd.importers import IMPORTERS, save
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    Entry,
    ImageContent,
    MessageEntry,
    ModelChangeEntry,
    PruneEntry,
    Settings,
    SummarizerInfo,
    TextContent,
    Usage,
    UserMessage,
)
from contextd.tokens import count_entry, resolve_model
from contextd.tokens.calibration import (
    PRIOR_WEIGHT_TOKENS,
    Evidence,
    calibration_factor,
    learn,
    prompt_tokens,
    stated_prompt_tokens,
)
from contextd.tokens.context_size import context_size, usage_anchor

from tests.corpus import read_text

O200K = "o200k_base"


class Chain:
    """A linear session built entry by entry, each one the child of the last."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def _add(self, cls: type[Any], **fields: Any) -> Entry:
        parent = self.entries[-1].id if self.entries else None
        entry = cls(id=f"e{len(self.entries)}", parentId=parent, **fields)
        self.entries.append(entry)
        return entry

    def user(self, text: str) -> Entry:
        return self._add(MessageEntry, message=UserMessage(content=text))

    def answer(self, text: str, usage: Usage | None = None, **fields: Any) -> Entry:
        message = AssistantMessage(content=[TextContent(text=text)], usage=usage, **fields)
        return self._add(MessageEntry, message=message)

    def compaction(self, first_kept: str, summary: str = "summary of earlier work") -> Entry:
        return self._add(
            CompactionEntry,
            summary=summary,
            firstKeptEntryId=first_kept,
            tokensBefore=0,
            tokensAfter=0,
            reason="manual",
            summarizer=SummarizerInfo(provider="offline"),
        )

    def prune(self, ids: list[str]) -> Entry:
        return self._add(PruneEntry, entryIds=ids, tokensSaved=0)

    def model(self, model: str) -> Entry:
        return self._add(ModelChangeEntry, model=model)

    def tokens(self) -> dict[str, int]:
        return {entry.id: count_entry(entry, O200K) for entry in self.entries}

    def counted_so_far(self) -> int:
        """Counted tokens of everything so far (no compaction in these chains)."""
        return sum(self.tokens().values())


def no_placeholder(tokens: int) -> int:
    return 12


def tokenizer_of(model: str) -> str:
    return resolve_model(model, {}).tokenizer


def words(n: int, seed: int) -> str:
    return " ".join(f"word{seed}_{i}" for i in range(n))


# --- which usage still describes the context -----------------------------------------


def test_usage_from_before_a_compaction_never_describes_the_context_after_it():
    """The issue's repro: kept answers carry 100k..160k usage; after the compaction the figure
    is the counted summary plus kept part, not the last kept answer's 160,700."""
    chain = Chain()
    for turn, reported in enumerate((100_000, 120_000, 140_000, 160_000)):
        chain.user(words(50, turn))
        chain.answer(f"answer {turn}", Usage(input=reported, output=700))
    last_turn = chain.entries[-2].id
    chain.compaction(first_kept=last_turn)

    figure = context_size(chain.entries, chain.tokens(), no_placeholder)

    counted = sum(chain.tokens()[entry.id] for entry in chain.entries[-3:])
    assert figure.tokens == counted < 1_000
    assert figure.source == "counted"
    assert usage_anchor(chain.entries) is None


def test_an_answer_after_the_compaction_anchors_the_figure_again():
    chain = Chain()
    chain.user(words(50, 0))
    chain.answer("first", Usage(input=100_000, output=500))
    chain.compaction(first_kept=chain.entries[0].id)
    chain.user("next request")
    chain.answer("after", Usage(input=9_000, output=300, cacheRead=1_000))
    tail = chain.user(words(20, 9))

    figure = context_size(chain.entries, chain.tokens(), no_placeholder)

    assert figure.source == "usage"
    assert figure.tokens == 10_300 + chain.tokens()[tail.id]


def test_a_prune_ends_the_usage_of_every_answer_before_it():
    chain = Chain()
    chain.user(words(50, 0))
    chain.answer("first", Usage(input=50_000, output=100))
    chain.prune([])
    assert context_size(chain.entries, chain.tokens(), no_placeholder).source == "counted"


def test_failed_answers_are_never_an_anchor():
    chain = Chain()
    chain.user("hello")
    chain.answer("ok", Usage(input=1_000, output=10))
    chain.user("more")
    chain.answer("", Usage(input=99_999, output=0), stopReason="error", errorMessage="boom")
    assert usage_anchor(chain.entries) == 1


def test_usage_of_all_zeros_reports_nothing():
    """Claude Code in front of GLM writes `input_tokens: 0, output_tokens: 0` on every answer."""
    chain = Chain()
    chain.user(words(100, 0))
    chain.answer("ok", Usage(input=0, output=0))
    figure = context_size(chain.entries, chain.tokens(), no_placeholder)
    assert (figure.tokens, figure.source) == (chain.counted_so_far(), "counted")


def test_counted_parts_are_calibrated_and_said_to_be_estimates():
    chain = Chain()
    chain.user(words(400, 1))
    counted = chain.counted_so_far()

    figure = context_size(chain.entries, chain.tokens(), no_placeholder, calibration=1.25, exact=False)

    assert figure.tokens == round(counted * 1.25)
    assert figure.source == "estimated"
    assert context_size(chain.entries, chain.tokens(), no_placeholder).source == "counted"


def test_after_an_anchor_only_the_tail_is_calibrated():
    chain = Chain()
    chain.user("hi")
    chain.answer("there", Usage(input=5_000, output=100))
    tail = chain.user(words(300, 2))

    figure = context_size(chain.entries, chain.tokens(), no_placeholder, calibration=1.5, exact=False)

    assert figure.tokens == 5_100 + round(chain.tokens()[tail.id] * 1.5)
    assert figure.source == "usage"


# --- the calibration factor --------------------------------------------------------------


def test_exact_encodings_are_never_calibrated():
    assert calibration_factor(None, Evidence(reported=200_000, counted=100_000)) == 1.0


def test_without_evidence_the_prior_holds():
    assert calibration_factor(1.25, Evidence()) == 1.25


def test_evidence_outweighs_the_prior_as_it_grows():
    few = calibration_factor(1.0, Evidence(reported=5_000, counted=4_000))
    many = calibration_factor(1.0, Evidence(reported=125_000, counted=100_000))
    assert 1.0 < few < many < 1.25
    assert many == pytest.approx(1.25, abs=0.015)


def test_the_prior_is_worth_a_few_turns():
    """One turn of PRIOR_WEIGHT_TOKENS counted tokens moves the factor half way."""
    half = calibration_factor(1.0, Evidence(reported=2 * PRIOR_WEIGHT_TOKENS, counted=PRIOR_WEIGHT_TOKENS))
    assert half == 1.5


def scripted_session(chain: Chain, ratio: float, hidden: int, turns: int, model: str | None = None) -> None:
    """Turns whose answers report `ratio` x the counted prompt plus `hidden` tokens the
    session never sees (a system prompt, tool schemas)."""
    for turn in range(turns):
        chain.user(words(200 + 50 * turn, turn))
        prompt = hidden + round(ratio * chain.counted_so_far())
        chain.answer(words(40, 100 + turn), Usage(input=prompt, output=80), model=model)


@pytest.mark.parametrize("hidden", [0, 15_000])
def test_the_factor_is_learned_from_growth_whatever_the_session_cannot_see(hidden):
    chain = Chain()
    scripted_session(chain, 1.4, hidden, turns=12)

    ledger = learn(chain.entries, chain.tokens(), tokenizer_of, "claude-4")

    assert ledger.factor("claude-4", 1.25) == pytest.approx(1.4, abs=0.03)


def screenshot(width: int, height: int) -> ImageContent:
    """A PNG as far as its size goes: its signature and IHDR chunk."""
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height) + bytes(5)
    return ImageContent(data=base64.b64encode(head).decode(), mimeType="image/png")


def test_the_factor_is_learned_on_text_only_whatever_images_cost():
    """Claude charges a screenshot in its own tokens (1,590 for 1092x1092): a turn with one
    grows the prompt by that, not by the prior times it, so its stretch says nothing about
    how Claude splits text; its evidence is the text's 1.4 (images, counted at the prior's
    scale, pulled it to 1.36)."""
    claude = resolve_model("claude-sonnet-4-5", {})
    chain = Chain()
    text_counted = 0
    for turn in range(12):
        text = words(200 + 50 * turn, turn)
        blocks = [TextContent(text=text), *([screenshot(1092, 1092)] if turn % 2 else [])]
        chain._add(MessageEntry, message=UserMessage(content=blocks))
        text_counted += count_entry(chain.entries[-1], O200K) - (1590 if turn % 2 else 0)
        images = 1590 * ((turn + 1) // 2)
        chain.answer(words(40, 100 + turn), Usage(input=round(1.4 * text_counted) + images, output=80))
        text_counted += count_entry(chain.entries[-1], O200K)
    tokens = {entry.id: count_entry(entry, O200K, claude.image_rule, claude.image_scale) for entry in chain.entries}

    evidence = learn(chain.entries, tokens, tokenizer_of, "claude-4").evidence["claude-4"]

    assert evidence.reported / evidence.counted == pytest.approx(1.4, abs=0.01)


def test_restarting_derives_the_same_factor_from_the_same_entries():
    chain = Chain()
    scripted_session(chain, 1.3, 2_000, turns=6)
    first = learn(chain.entries, chain.tokens(), tokenizer_of, "claude-4")
    again = learn(list(chain.entries), chain.tokens(), tokenizer_of, "claude-4")
    assert first.evidence == again.evidence


def test_nothing_is_learned_across_a_compaction_or_a_prune():
    chain = Chain()
    chain.user(words(200, 0))
    chain.answer("a", Usage(input=1_000, output=10))
    chain.compaction(first_kept=chain.entries[0].id)
    chain.user(words(200, 1))
    chain.answer("b", Usage(input=90_000, output=10))
    chain.prune([])
    chain.user(words(200, 2))
    chain.answer("c", Usage(input=3_000, output=10))

    assert learn(chain.entries, chain.tokens(), tokenizer_of, "claude-4").evidence == {}


def test_each_tokenizer_learns_on_its_own():
    chain = Chain()
    chain.model("claude-sonnet-4-5")
    scripted_session(chain, 1.3, 0, turns=4)
    chain.model("gemini-2.5-pro")
    scripted_session(chain, 0.9, 0, turns=4, model="gemini-2.5-pro-preview")

    ledger = learn(chain.entries, chain.tokens(), tokenizer_of, "unknown")

    assert set(ledger.evidence) == {"claude-4", "gemini"}
    assert ledger.factor("claude-4", 1.25) > 1.25
    assert ledger.factor("gemini", 1.0) < 1.0


def test_no_growth_is_measured_across_a_change_of_tokenizer():
    """The first answer after a switch from Claude to Gemini reports a prompt counted by
    another tokenizer than the answer before it: no growth can be read from the two."""
    chain = Chain()
    chain.model("claude-sonnet-4-5")
    chain.user(words(300, 0))
    chain.answer("a", Usage(input=50_000, output=10))
    chain.model("gemini-2.5-pro")
    chain.user(words(300, 1))
    chain.answer("b", Usage(input=51_500, output=10))  # growth that looks plausible
    assert learn(chain.entries, chain.tokens(), tokenizer_of, "unknown").evidence == {}


def test_branches_learn_from_their_own_parents():
    """An answer on a side branch is compared with the answer above it, not the last one
    written: two branches from one answer both give true growth."""
    chain = Chain()
    chain.user(words(200, 0))
    base = chain.answer("base", Usage(input=round(1.2 * chain.counted_so_far()), output=10))
    tokens_before = chain.counted_so_far()
    chain.user(words(300, 1))
    chain.answer("left", Usage(input=round(1.2 * chain.counted_so_far()), output=10))
    side = UserMessage(content=words(300, 2))
    right_user = MessageEntry(id="r0", parentId=base.id, message=side)
    entries = [*chain.entries, right_user]
    tokens = {**chain.tokens(), "r0": count_entry(right_user, O200K)}
    right_prompt = round(1.2 * (tokens_before + tokens["r0"]))
    right_answer = MessageEntry(
        id="r1", parentId="r0", message=AssistantMessage(content=[], usage=Usage(input=right_prompt))
    )
    entries.append(right_answer)
    tokens["r1"] = count_entry(right_answer, O200K)

    ledger = learn(entries, tokens, tokenizer_of, "claude-4")

    assert ledger.factor("claude-4", 1.2) == pytest.approx(1.2, abs=0.01)
    left_growth = tokens[base.id] + tokens[chain.entries[2].id]
    right_growth = tokens[base.id] + tokens["r0"]
    assert ledger.evidence["claude-4"].counted == left_growth + right_growth


def test_an_overflow_that_states_the_prompt_size_teaches_too():
    chain = Chain()
    chain.user(words(200, 0))
    chain.answer("ok", Usage(input=round(1.3 * chain.counted_so_far()), output=10))
    counted_since = count_entry(chain.entries[-1], O200K)
    tail = chain.user(words(2_000, 1))
    counted_since += count_entry(tail, O200K)
    first_prompt = round(1.3 * count_entry(chain.entries[0], O200K))
    stated = first_prompt + round(1.6 * counted_since)
    chain.answer(
        "",
        stopReason="error",
        errorKind="context_overflow",
        errorMessage=f"prompt is too long: {stated} tokens > 200000 maximum",
    )

    ledger = learn(chain.entries, chain.tokens(), tokenizer_of, "claude-4")

    assert ledger.evidence["claude-4"] == Evidence(stated - first_prompt, counted_since)


# --- reading what providers report ---------------------------------------------------------


def test_the_prompt_leaves_the_output_out():
    assert prompt_tokens(Usage(input=100, output=50, cacheRead=1_000, cacheWrite=10)) == 1_110
    assert prompt_tokens(Usage(output=50, total=1_050)) == 1_000


@pytest.mark.parametrize(
    ("message", "prompt"),
    [
        ("prompt is too long: 212000 tokens > 200000 maximum", 212_000),
        (
            (
                "This model's maximum context length is 128000 tokens. However, your messages "
                "resulted in 130000 tokens. Please reduce the length of the messages."
            ),
            130_000,
        ),
        (
            (
                "This model's maximum context length is 128000 tokens. However, you requested "
                "133000 tokens (129000 in the messages, 4000 in the completion)."
            ),
            129_000,
        ),
        (
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            1_200_000,
        ),
        ("context window exceeded", None),
        (None, None),
    ],
)
def test_overflow_errors_state_the_prompt_size(message, prompt):
    assert stated_prompt_tokens(message) == prompt


@pytest.mark.parametrize(
    ("name", "agent"),
    [("claude-code-atlas-sonnet45", "claude-code"), ("claude-code-atlas-opus41", "claude-code"), ("pi-coffee-single-task", "pi")],
)
def test_calibration_is_learned_across_clean_stretches_only(tmp_path, name, agent):
    """28 damaged lines (the tool results with the most text, cut in half) lose those
    results: the provider counted them, contextd has a stand-in. Growth across a lost result
    teaches nothing, so the factor stays near the clean file's (it rose 9-16% before)."""
    lines = read_text(f"{name}.jsonl.gz").splitlines()
    results = sorted(
        (number for number, line in enumerate(lines) if '"tool_result"' in line or '"toolResult"' in line),
        key=lambda number: -len(lines[number]),
    )
    damaged = list(lines)
    for number in results[:28]:
        damaged[number] = damaged[number][: len(damaged[number]) // 2]

    def factor(source: list[str], data_dir: Path) -> float:
        session_id, _ = save(IMPORTERS[agent](source), data_dir, workspace="/ws", name=None)
        return SessionManager(Store(data_dir), Settings(), SilentEvents()).get(session_id).calibration

    clean = factor(lines, tmp_path / "clean")
    assert abs(factor(damaged, tmp_path / "damaged") - clean) <= 0.07 * clean


@pytest.mark.parametrize("kept_at", ["leaf", "elsewhere", "nothing"])
def test_states_let_go_are_worked_out_again_from_the_path(kept_at):
    """A loaded session keeps the calibration state of its leaf only; a node added below
    another node (a navigation) has its parent's state worked out again from the path, as
    learning the whole tree would have had it."""
    chain = Chain()
    scripted_session(chain, 1.3, 2_000, turns=10)
    split = len(chain.entries) - 4  # the last two turns come after the load
    tokens = chain.tokens()
    by_id = {entry.id: entry for entry in chain.entries}

    def path_to(node_id: str) -> list[Entry]:
        path = []
        while node_id is not None:
            path.append(by_id[node_id])
            node_id = by_id[node_id].parentId
        return path[::-1]

    loaded = learn(chain.entries[:split], tokens, tokenizer_of, "claude-4")
    keep = {"leaf": chain.entries[split - 1].id, "elsewhere": chain.entries[1].id, "nothing": None}[kept_at]
    loaded.keep_only(keep, path_to, tokens)
    assert len(loaded.since) <= 1
    for entry in chain.entries[split:]:
        loaded.add(entry, tokens[entry.id])

    whole = learn(chain.entries, tokens, tokenizer_of, "claude-4")
    assert loaded.evidence == whole.evidence and loaded.evidence["claude-4"].counted > learn(chain.entries[:split], tokens, tokenizer_of, "claude-4").evidence["claude-4"].counted
