"""prepare_compaction: what is summarized and kept, the rebuilt context, repeated compactions."""

from __future__ import annotations

import pytest
from contextd.compaction.context import build_context
from contextd.compaction.prepare import (
    TURN_CONTEXT_HEADING,
    CompactionPreparation,
    NothingToCompact,
    assemble_compaction_summary,
    prepare_compaction,
)
from contextd.compaction.prune import PrunePlan
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    FileDetails,
    MessageEntry,
    ToolResultMessage,
    UserMessage,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.compaction_sessions import (
    Played,
    SessionBuilder,
    context_ids,
    play,
    sessions,
    settings_with,
)


def long_turn(builder: SessionBuilder, n: int, size: int = 400) -> None:
    builder.user(f"request {n} " + "r" * size)
    builder.tool_step("read", {"path": f"src/{n}.py"}, "o" * size)
    builder.assistant(f"answer {n} " + "a" * size)


def orphans(builder: SessionBuilder) -> tuple[set[str], set[str]]:
    """Tool calls in the context whose result exists but is not in it, and results in the
    context whose call is not before them."""
    path = builder.path()
    answered = {
        e.message.toolCallId
        for e in path
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    }
    seen_calls: set[str] = set()
    seen_results: set[str] = set()
    orphan_results: set[str] = set()
    for item in build_context(path, builder.tokens):
        if isinstance(item.message, AssistantMessage):
            seen_calls.update(call.id for call in item.message.tool_calls)
        elif isinstance(item.message, ToolResultMessage):
            seen_results.add(item.message.toolCallId)
            if item.message.toolCallId not in seen_calls:
                orphan_results.add(item.message.toolCallId)
    return (seen_calls & answered) - seen_results, orphan_results


# --- properties over generated sessions --------------------------------------


def check_compactions(played: Played) -> None:
    builder = played.builder
    for before, preparation, compaction_id in played.compactions:
        rebuilt = context_ids_at(builder, compaction_id)
        # The context right after the compaction: its summary, then exactly what it kept.
        assert rebuilt == [compaction_id, *preparation.kept_entry_ids]
        # Nothing of the context before it was lost: every message was summarized or kept.
        previous_messages = [i for i in before if not isinstance(builder.by_id[i], CompactionEntry)]
        assert [*preparation.summarize_entry_ids, *preparation.kept_entry_ids] == previous_messages
        first_kept = builder.by_id[preparation.first_kept_entry_id]
        assert not (
            isinstance(first_kept, MessageEntry)
            and isinstance(first_kept.message, ToolResultMessage)
        )


def context_ids_at(builder: SessionBuilder, leaf: str) -> list[str]:
    return [item.entry_id for item in build_context(builder.path(leaf), builder.tokens)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions)
def test_generated_sessions_compact_without_losing_or_orphaning_anything(actions):
    played = play(actions)
    check_compactions(played)
    assert orphans(played.builder) == (set(), set())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions)
def test_latest_compaction_keeps_its_messages_while_the_session_goes_on(actions):
    played = play(actions)
    if not played.compactions:
        return
    _, latest, _ = played.compactions[-1]
    now = context_ids(played.builder)
    assert set(latest.kept_entry_ids) <= set(now)
    summaries = [i for i in now if isinstance(played.builder.by_id[i], CompactionEntry)]
    assert len(summaries) == 1


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions, st.floats(0.5, 2.0), st.integers(100, 3000), st.sampled_from(["manual", "overflow"]))
def test_a_calibrated_preparation_is_the_preparation_of_the_calibrated_counts(actions, factor, keep, reason):
    """The cut is made in the model's tokens: calibrating inside the preparation (the visible
    entries only) prepares what the counts of every entry, calibrated first, prepare; pruned
    results' placeholders included."""
    builder = play(actions).builder
    path, settings_ = builder.path(), settings_with(keep_recent=keep)
    calibrated = {entry_id: round(tokens * factor) for entry_id, tokens in builder.tokens.items()}
    assert prepare_compaction(path, builder.tokens, settings_, reason=reason, calibration=factor) == prepare_compaction(
        path, calibrated, settings_, reason=reason
    )


# --- repeated compactions (the bug pi shipped) --------------------------------


def test_second_compaction_summarizes_from_the_first_compactions_kept_part():
    builder = SessionBuilder()
    for n in range(6):
        long_turn(builder, n)
    first = builder.compact(settings_with(keep_recent=700))
    assert isinstance(first, CompactionPreparation)
    kept_by_first = first.kept_entry_ids
    for n in range(6, 12):
        long_turn(builder, n)

    second = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=700))

    assert isinstance(second, CompactionPreparation)
    # It starts where the first one's kept part starts, not after the compaction entry.
    assert second.summarize_entry_ids[0] == first.first_kept_entry_id
    assert set(kept_by_first) <= set(second.summarize_entry_ids)
    assert second.previous_summary is not None and second.history_request is not None
    assert second.history_request.previous_summary == second.previous_summary
    assert "<previous-summary>" in second.history_request.prompt
    assert "Done" in second.history_request.prompt  # the update prompt's instructions
    assert "answer 5 " in second.history_request.prompt  # the first compaction kept it


def test_second_compaction_may_keep_what_the_first_kept_without_the_old_summary():
    builder = SessionBuilder()
    for n in range(6):
        long_turn(builder, n)
    first = builder.compact(settings_with(keep_recent=1500))
    assert isinstance(first, CompactionPreparation)
    long_turn(builder, 6)

    second = builder.compact(settings_with(keep_recent=1500))

    assert isinstance(second, CompactionPreparation)
    assert set(second.kept_entry_ids) & set(first.kept_entry_ids)  # the cut is in the old kept part
    now = context_ids(builder)
    assert now == [builder.leaf, *second.kept_entry_ids]
    assert sum(isinstance(builder.by_id[i], CompactionEntry) for i in now) == 1


def test_third_compaction_updates_the_second_summary():
    builder = SessionBuilder()
    summaries = []
    for round_ in range(3):
        for n in range(4):
            long_turn(builder, round_ * 10 + n)
        preparation = builder.compact(settings_with(keep_recent=500), f"summary of round {round_}")
        assert isinstance(preparation, CompactionPreparation)
        summaries.append(preparation.previous_summary)
    assert summaries[0] is None
    assert summaries[1] is not None and "summary of round 0" in summaries[1]
    assert summaries[2] is not None and "summary of round 1" in summaries[2]


# --- cuts, split turns, nothing to compact ------------------------------------


def test_nothing_to_compact_explains_the_figure_the_user_sees():
    builder = SessionBuilder()
    builder.user("a short question")
    builder.assistant("a short answer")
    history = sum(builder.tokens.values())

    fits = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=20_000), tokens_before=88_000)
    assert isinstance(fits, NothingToCompact)
    assert f"the history's {history:,} tokens fit in the 20,000 recent tokens" in fits.message
    assert "the rest of the 88,000 the session shows is what the agent sends besides the history" in fits.message

    alone = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=20_000), tokens_before=history)
    assert isinstance(alone, NothingToCompact) and "the rest" not in alone.message


def test_split_turn_summarizes_the_turn_prefix_separately():
    builder = SessionBuilder()
    long_turn(builder, 0)
    turn_start = builder.user("one huge turn")
    for n in range(8):
        builder.tool_step("bash", {"command": f"step {n}"}, "z" * 800)

    preparation = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=600))

    assert isinstance(preparation, CompactionPreparation)
    assert preparation.is_split_turn
    assert preparation.turn_prefix_request is not None
    assert preparation.turn_prefix_request.kind == "turn_prefix"
    assert preparation.turn_prefix_request.messages[0] == UserMessage(content="one huge turn")
    assert preparation.history_request is not None
    assert "one huge turn" not in preparation.history_request.prompt
    assert turn_start in preparation.summarize_entry_ids
    first_kept = builder.by_id[preparation.first_kept_entry_id]
    assert isinstance(first_kept, MessageEntry) and first_kept.message.role == "assistant"


def test_split_turn_summary_has_a_turn_context_section_and_file_lists():
    builder = SessionBuilder()
    builder.user("fix it")
    builder.tool_step("read", {"path": "src/a.py"}, "a" * 2000)
    builder.tool_step("edit", {"file_path": "src/b.py"}, "ok")
    for _ in range(4):
        builder.tool_step("bash", {"command": "pytest"}, "p" * 1000)
    preparation = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=300))
    assert isinstance(preparation, CompactionPreparation)
    assert preparation.is_split_turn and preparation.history_request is None

    summary = assemble_compaction_summary(
        preparation, turn_prefix_summary="The user asked to fix it."
    )

    assert summary.startswith("(No earlier history")
    assert f"{TURN_CONTEXT_HEADING}\n\nThe user asked to fix it." in summary
    assert summary.endswith(
        "<read-files>\nsrc/a.py\n</read-files>\n\n<modified-files>\nsrc/b.py\n</modified-files>"
    )


def test_assembling_without_a_requested_summary_is_an_error():
    builder = SessionBuilder()
    for n in range(5):
        long_turn(builder, n)
    preparation = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=500))
    assert isinstance(preparation, CompactionPreparation)
    with pytest.raises(ValueError, match="history_summary"):
        assemble_compaction_summary(preparation)


def test_previous_file_lists_are_carried_and_not_repeated_in_the_summary():
    builder = SessionBuilder()
    builder.user("start")
    builder.tool_step("read", {"path": "old/read.py"}, "r" * 2000)
    builder.tool_step("write", {"path": "old/written.py"}, "ok")
    for n in range(3):
        long_turn(builder, n)
    first = builder.compact(settings_with(keep_recent=400))
    assert isinstance(first, CompactionPreparation)
    for n in range(3, 8):
        long_turn(builder, n)

    second = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=400))

    assert isinstance(second, CompactionPreparation)
    assert "old/written.py" in second.files.modifiedFiles
    assert "old/read.py" in second.files.readFiles
    assert second.previous_summary is not None and "<read-files>" not in second.previous_summary
    summary = assemble_compaction_summary(second, history_summary="## Goal\nnew")
    assert summary.count("<read-files>") == 1 and summary.count("<modified-files>") == 1


def test_non_message_entries_before_the_cut_stay_with_the_kept_part():
    builder = SessionBuilder()
    for n in range(4):
        long_turn(builder, n)
    model_change = builder.model_change()
    info = builder.session_info()
    kept_user = builder.user("after the model change " + "k" * 400)
    builder.assistant("ok " + "k" * 400)

    preparation = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=200))

    assert isinstance(preparation, CompactionPreparation)
    assert preparation.first_kept_entry_id == model_change
    assert preparation.kept_entry_ids[0] == kept_user
    assert not preparation.is_split_turn
    assert info not in preparation.summarize_entry_ids


@pytest.mark.parametrize(
    ("build", "reason"),
    [
        (lambda b: None, "empty"),
        (lambda b: long_turn(b, 0, size=10), "fits"),
    ],
)
def test_nothing_to_compact(build, reason):
    builder = SessionBuilder()
    build(builder)
    result = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=20000))
    assert isinstance(result, NothingToCompact) and result.reason == reason


def test_an_overflow_keeps_less_when_the_context_fits_in_the_kept_part():
    """The provider said the context overflows although our count says it fits in
    keepRecentTokens: the overflow compaction keeps half, then a quarter."""
    builder = SessionBuilder()
    for n in range(4):
        long_turn(builder, n, size=200)
    total = sum(builder.tokens.values())
    settings_ = settings_with(keep_recent=total + 100)

    assert isinstance(prepare_compaction(builder.path(), builder.tokens, settings_), NothingToCompact)
    overflow = prepare_compaction(builder.path(), builder.tokens, settings_, reason="overflow")

    assert isinstance(overflow, CompactionPreparation)
    assert overflow.keep_recent_tokens < settings_.compaction.keepRecentTokens
    assert overflow.tokens_kept < total
    assert overflow.summarize_entry_ids


def test_an_overflow_keeps_a_quarter_at_least():
    """A single turn cannot be split below its last message: still nothing to compact."""
    builder = SessionBuilder()
    builder.user("only " + "x" * 40)
    result = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=20000), reason="overflow")
    assert isinstance(result, NothingToCompact) and result.reason == "fits"


def test_nothing_to_compact_right_after_a_compaction():
    builder = SessionBuilder()
    for n in range(5):
        long_turn(builder, n)
    assert isinstance(builder.compact(settings_with(keep_recent=300)), CompactionPreparation)
    again = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=300))
    assert isinstance(again, NothingToCompact) and again.reason == "just_compacted"


def test_tokens_and_request_budget():
    builder = SessionBuilder()
    for n in range(6):
        long_turn(builder, n)
    settings_ = settings_with(keep_recent=500, reserve=10000)

    preparation = prepare_compaction(
        builder.path(),
        builder.tokens,
        settings_,
        reason="threshold",
        instructions="focus on the parser",
    )

    assert isinstance(preparation, CompactionPreparation)
    assert preparation.tokens_before == sum(builder.tokens.values())
    assert preparation.tokens_kept == sum(builder.tokens[i] for i in preparation.kept_entry_ids)
    assert preparation.tokens_kept < preparation.tokens_before
    assert all(r.max_tokens <= 8000 for r in preparation.requests)
    assert preparation.tokens_after == preparation.tokens_kept + sum(
        r.max_tokens for r in preparation.requests
    )
    assert preparation.reason == "threshold"
    assert preparation.history_request is not None
    assert preparation.history_request.instructions == "focus on the parser"
    assert preparation.history_request.prompt.endswith(
        "Additional instructions from the user: focus on the parser"
    )
    given_size = prepare_compaction(builder.path(), builder.tokens, settings_, tokens_before=123456)
    assert isinstance(given_size, CompactionPreparation) and given_size.tokens_before == 123456


def test_pruned_results_are_summarized_as_their_placeholder_and_count_as_small():
    builder = SessionBuilder()
    builder.user("look")
    _, result_id = builder.tool_step("read", {"path": "big.txt"}, "SECRET-OUTPUT " * 2000)
    for n in range(4):
        long_turn(builder, n)
    builder.apply_prune(PrunePlan((result_id,), builder.tokens[result_id] - 12))

    preparation = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=500))

    assert isinstance(preparation, CompactionPreparation)
    assert preparation.history_request is not None
    assert "SECRET-OUTPUT" not in preparation.history_request.prompt
    assert "[Output pruned:" in preparation.history_request.prompt
    assert preparation.tokens_before < sum(builder.tokens.values())


def test_files_come_from_the_previous_compaction_and_branch_summaries():
    builder = SessionBuilder()
    builder.branch_summary(
        "x", "explored", FileDetails(readFiles=["b/read.py"], modifiedFiles=["b/mod.py"])
    )
    for n in range(5):
        long_turn(builder, n)
    preparation = prepare_compaction(builder.path(), builder.tokens, settings_with(keep_recent=300))
    assert isinstance(preparation, CompactionPreparation)
    assert "b/mod.py" in preparation.files.modifiedFiles
    assert {"b/read.py", "src/0.py"} <= set(preparation.files.readFiles)
