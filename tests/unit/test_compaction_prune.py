"""plan_prune: which old tool output is replaced by a placeholder."""

from __future__ import annotations

from contextd.compaction.context import build_context, pruned_entry_ids, visible_entries
from contextd.compaction.prune import plan_prune
from contextd.compaction.sizes import PRUNED_RESULT_TOKENS
from contextd.model import MessageEntry, PruningSettings, ToolResultMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.compaction_sessions import SessionBuilder, play, sessions


def three_reads(builder: SessionBuilder, size: int = 4000) -> list[str]:
    builder.user("read them")
    return [builder.tool_step("read", {"path": f"{n}.py"}, "x" * size)[1] for n in range(3)]


def test_prunes_old_output_and_protects_the_newest():
    builder = SessionBuilder()
    results = three_reads(builder)  # about 1000 tokens each
    builder.assistant("done")

    plan = plan_prune(
        builder.path(), builder.tokens, PruningSettings(protectTokens=1000, minimumSavings=100)
    )

    assert plan is not None
    assert plan.entry_ids == tuple(results[:2])
    assert plan.tokens_saved == sum(builder.tokens[r] - PRUNED_RESULT_TOKENS for r in results[:2])


def test_the_result_that_crosses_the_protected_window_is_protected_whole():
    builder = SessionBuilder()
    results = three_reads(builder)
    plan = plan_prune(
        builder.path(), builder.tokens, PruningSettings(protectTokens=1500, minimumSavings=0)
    )
    assert plan is not None and plan.entry_ids == (results[0],)


def test_protected_tools_are_never_pruned():
    builder = SessionBuilder()
    builder.user("go")
    _, skill = builder.tool_step("skill", {"name": "x"}, "s" * 8000)
    _, read = builder.tool_step("read", {"path": "a"}, "r" * 8000)
    builder.tool_step("read", {"path": "b"}, "r" * 400)
    plan = plan_prune(
        builder.path(),
        builder.tokens,
        PruningSettings(protectTokens=50, minimumSavings=0, protectedTools=["skill"]),
    )
    assert plan is not None and plan.entry_ids == (read,)


def test_nothing_when_savings_do_not_exceed_the_minimum_or_pruning_is_off():
    builder = SessionBuilder()
    three_reads(builder, size=400)
    path, tokens = builder.path(), builder.tokens
    assert (
        plan_prune(path, tokens, PruningSettings(protectTokens=0, minimumSavings=100_000)) is None
    )
    assert (
        plan_prune(path, tokens, PruningSettings(enabled=False, protectTokens=0, minimumSavings=0))
        is None
    )


def test_already_pruned_results_are_not_pruned_again_and_pruned_output_shows_a_placeholder():
    builder = SessionBuilder()
    results = three_reads(builder)
    first = plan_prune(
        builder.path(), builder.tokens, PruningSettings(protectTokens=0, minimumSavings=0)
    )
    assert first is not None
    builder.apply_prune(first)

    again = plan_prune(
        builder.path(), builder.tokens, PruningSettings(protectTokens=0, minimumSavings=0)
    )

    assert again is None
    contents = {
        item.entry_id: item.message.content
        for item in build_context(builder.path(), builder.tokens)
        if isinstance(item.message, ToolResultMessage)
    }
    assert contents[results[0]] == f"[Output pruned: {builder.tokens[results[0]]} tokens]"


@st.composite
def prune_cases(draw: st.DrawFn):
    played = play(draw(sessions))
    pruning = PruningSettings(
        protectTokens=draw(st.integers(0, 3000)),
        minimumSavings=draw(st.integers(0, 1000)),
        protectedTools=draw(st.lists(st.sampled_from(["read", "bash", "skill"]), max_size=2)),
    )
    return played.builder, pruning


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prune_cases())
def test_prune_plans_respect_protection_and_prune_everything_else_that_is_old(case):
    builder, pruning = case
    path, tokens = builder.path(), builder.tokens
    plan = plan_prune(path, tokens, pruning)
    already = pruned_entry_ids(path)
    results = [
        e
        for e in visible_entries(path)
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    ]
    planned = set(plan.entry_ids) if plan else set()
    for index, entry in enumerate(results):
        newer = sum(tokens[e.id] for e in results[index + 1 :] if e.id not in already)
        prunable = (
            entry.id not in already
            and entry.message.toolName not in pruning.protectedTools
            and newer >= pruning.protectTokens
            and tokens[entry.id] > PRUNED_RESULT_TOKENS
        )
        if plan:
            assert (entry.id in planned) == prunable
        if entry.id in planned:
            assert newer >= pruning.protectTokens
    if plan:
        assert plan.tokens_saved > pruning.minimumSavings
        assert planned <= {e.id for e in results}
