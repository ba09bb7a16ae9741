"""compression_stats: what compaction and pruning took out of the history."""

from __future__ import annotations

from contextd.compaction.context import build_context
from contextd.compaction.prepare import CompactionPreparation
from contextd.compaction.prune import plan_prune
from contextd.compaction.stats import compression_stats
from contextd.model import PruningSettings
from hypothesis import HealthCheck, given, settings

from tests.unit.compaction_sessions import SessionBuilder, play, sessions, settings_with


def grown_session(turns: int) -> SessionBuilder:
    builder = SessionBuilder()
    for n in range(turns):
        builder.user(f"turn {n}: fix module {n}")
        builder.tool_step("read", {"path": f"src/{n}.py"}, "x" * 2000)
        builder.assistant(f"fixed module {n}")
    return builder


def test_a_fresh_session_is_all_context():
    builder = grown_session(2)
    history = sum(builder.tokens.values())

    stats = compression_stats(builder.path(), builder.tokens, history)

    assert stats.history_entries == stats.context_entries == 8
    assert stats.history_tokens == history
    assert stats.ratio == 1.0
    assert (stats.compactions, stats.prunes, stats.summary_tokens) == (0, 0, 0)


def test_a_compaction_counts_what_it_saved_and_the_summary_it_left():
    builder = grown_session(6)
    history_before = sum(builder.tokens.values())
    preparation = builder.compact(settings_with(keep_recent=600))
    assert isinstance(preparation, CompactionPreparation)
    compaction = builder.by_id[builder.leaf or ""]
    context = build_context(builder.path(), builder.tokens)
    figure = sum(builder.tokens[item.entry_id] for item in context)

    stats = compression_stats(builder.path(), builder.tokens, figure)

    assert stats.compactions == 1
    assert stats.compaction_tokens_saved == compaction.tokensBefore - compaction.tokensAfter > 0
    assert stats.summary_tokens == builder.tokens[compaction.id]
    assert stats.context_entries == len(context) < stats.history_entries
    # The summary joins the history: the model read it when it was current.
    assert stats.history_tokens == history_before + builder.tokens[compaction.id]
    assert stats.ratio == round(figure / stats.history_tokens, 4) < 1


def test_prunes_report_their_savings():
    builder = grown_session(4)
    plan = plan_prune(builder.path(), builder.tokens, PruningSettings(protectTokens=600, minimumSavings=0))
    assert plan is not None
    builder.apply_prune(plan)

    stats = compression_stats(builder.path(), builder.tokens, 1000)

    assert (stats.prunes, stats.prune_tokens_saved) == (1, plan.tokens_saved)
    assert stats.as_dict()["prunes"] == {"count": 1, "tokensSaved": plan.tokens_saved}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions)
def test_the_context_never_holds_more_entries_than_the_history(actions):
    builder = play(actions).builder
    path = builder.path()
    context = build_context(path, builder.tokens)

    stats = compression_stats(path, builder.tokens, sum(builder.tokens[i.entry_id] for i in context))

    assert stats.context_entries == len(context) <= stats.history_entries
    assert stats.compactions == sum(1 for e in path if e.type == "compaction")
    assert stats.prunes == sum(1 for e in path if e.type == "prune")
    assert 0 <= stats.compaction_tokens_saved
