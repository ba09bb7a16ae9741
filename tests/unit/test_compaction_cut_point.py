"""find_cut_point: where the kept part of a compaction begins."""

from __future__ import annotations

from contextd.compaction.cut_point import CutPoint, find_cut_point, has_message, is_turn_start, valid_cuts
from contextd.model import AssistantMessage, FileDetails, MessageEntry, ToolCall, ToolResultMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.compaction_sessions import SessionBuilder, play, sessions


def roles(builder: SessionBuilder) -> list[str]:
    return [e.message.role if isinstance(e, MessageEntry) else e.type for e in builder.path()]


def test_keeps_about_the_recent_budget_and_cuts_at_a_user_message():
    builder = SessionBuilder()
    for n in range(5):
        builder.user(f"u{n}")
        builder.assistant(f"a{n}")
    entries = builder.path()
    tokens = {e.id: 100 for e in entries}

    cut = find_cut_point(entries, tokens, keep_recent_tokens=400)

    assert cut == CutPoint(6)  # u3 a3 u4 a4: 400 tokens
    assert not cut.is_split_turn and cut.history_end == 6


def test_never_cuts_at_a_tool_result_and_keeps_results_with_their_call():
    builder = SessionBuilder()
    builder.user("go")
    builder.assistant("", [("read", {"path": "a"}), ("read", {"path": "b"})])
    call_ids = [c.id for c in builder.path()[-1].message.tool_calls]  # type: ignore[union-attr]
    builder.result(call_ids[0], "read", "a")
    builder.result(call_ids[1], "read", "b")
    builder.assistant("done")
    entries = builder.path()
    tokens = {e.id: 100 for e in entries}

    # 200 tokens reach back to the second result: the cut moves on to the answer.
    cut = find_cut_point(entries, tokens, keep_recent_tokens=200)

    assert roles(builder)[cut.first_kept_index] == "assistant"
    assert cut.first_kept_index == 4
    assert cut.turn_start_index == 0  # the answer's turn began with "go"


def test_cut_inside_a_call_result_span_moves_past_the_result():
    builder = SessionBuilder()
    builder.user("go")
    _, (call,) = builder.assistant("", [("bash", {"command": "make"})])
    builder.assistant("still waiting")  # an assistant message between a call and its result
    builder.result(call, "bash", "built")
    builder.assistant("done")
    entries = builder.path()

    assert valid_cuts(entries) == [True, True, False, False, True]


def test_nothing_fits_means_keep_everything():
    builder = SessionBuilder()
    builder.user("hi")
    builder.assistant("hello")
    entries = builder.path()
    assert find_cut_point(entries, {e.id: 10 for e in entries}, 1000) == CutPoint(0)


def test_no_valid_cut_after_the_budget_falls_back_to_the_newest_valid_cut():
    builder = SessionBuilder()
    builder.user("a")
    builder.assistant("b")
    builder.user("c")
    _, (call,) = builder.assistant("", [("read", {"path": "x"})])
    builder.result(call, "read", "huge")
    entries = builder.path()
    tokens = {e.id: 10 for e in entries} | {entries[-1].id: 5000}

    cut = find_cut_point(entries, tokens, 1000)

    assert cut.first_kept_index == 3  # the call, so its result stays with it
    assert cut.turn_start_index == 2


@st.composite
def entry_lists(draw: st.DrawFn):
    played = play(draw(sessions))
    entries = played.builder.path()
    tokens = {e.id: draw(st.integers(0, 500)) for e in entries}
    return entries, tokens, draw(st.integers(0, 3000))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entry_lists())
def test_cut_is_never_at_a_tool_result_nor_between_a_call_and_its_result(case):
    entries, tokens, keep = case
    cut = find_cut_point(entries, tokens, keep)
    kept = entries[cut.first_kept_index :]
    first_message = next((e for e in kept if isinstance(e, MessageEntry)), None)
    assert first_message is None or not isinstance(first_message.message, ToolResultMessage)
    calls_before = {
        call.id
        for e in entries[: cut.first_kept_index]
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
        for call in e.message.tool_calls
    }
    results_after = {
        e.message.toolCallId
        for e in kept
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    }
    assert not calls_before & results_after
    if cut.turn_start_index is not None:
        assert cut.turn_start_index < cut.first_kept_index


def former_find_cut_point(entries, entry_tokens, keep_recent_tokens) -> CutPoint:
    """find_cut_point as it was, every entry checked: the newest valid cut at or after the
    index the kept tokens reach, else before it."""
    valid = valid_cuts(entries)
    kept, reached = 0, None
    for index in range(len(entries) - 1, -1, -1):
        kept += entry_tokens.get(entries[index].id, 0)
        if kept >= keep_recent_tokens:
            reached = index
            break
    if reached is None:
        return CutPoint(0)
    later = [index for index in range(reached, len(entries)) if valid[index]]
    earlier = [index for index in range(reached - 1, -1, -1) if valid[index]]
    if not later and not earlier:
        return CutPoint(0)
    cut = first_kept_message = (later or earlier)[0]
    while cut > 0 and not has_message(entries[cut - 1]):
        cut -= 1
    if cut == 0 or is_turn_start(entries[first_kept_message]):
        return CutPoint(cut)
    return CutPoint(cut, next((i for i in range(cut - 1, -1, -1) if is_turn_start(entries[i])), None))


@st.composite
def tangled_entry_lists(draw: st.DrawFn):
    """Entries in any order: results before or without their call, call ids used twice,
    summaries and entries without a message anywhere."""
    ids = st.sampled_from(["a", "b", "c", "d"])
    builder = SessionBuilder()
    for kind in draw(st.lists(st.sampled_from(["user", "calls", "result", "text", "model", "summary"]), max_size=30)):
        if kind == "user":
            builder.user("u")
        elif kind == "text":
            builder.assistant("t")
        elif kind == "calls":
            calls = [ToolCall(id=call_id, name="read", arguments={}) for call_id in draw(st.lists(ids, min_size=1, max_size=3))]
            builder.append(MessageEntry, message=AssistantMessage(content=calls))
        elif kind == "result":
            builder.result(draw(ids), "read", "r")
        elif kind == "model":
            builder.model_change()
        else:
            builder.branch_summary(builder.leaf or "", "s", FileDetails())
    entries = builder.path()
    return entries, {e.id: draw(st.integers(0, 300)) for e in entries}, draw(st.integers(0, 3000))


@settings(max_examples=400, deadline=None)
@given(tangled_entry_lists())
def test_checking_the_newest_entries_alone_finds_the_cut_every_entry_checked_finds(case):
    entries, tokens, keep = case
    valid = valid_cuts(entries)
    for start in range(len(entries) + 1):
        assert valid_cuts(entries, start) == valid[start:]
    assert find_cut_point(entries, tokens, keep) == former_find_cut_point(entries, tokens, keep)
