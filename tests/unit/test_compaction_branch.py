"""prepare_branch_summary: the summary of a branch that navigation leaves."""

from __future__ import annotations

from contextd.compaction.branch import branch_being_left, prepare_branch_summary
from contextd.model import FileDetails, Settings, ToolResultMessage, UserMessage

from tests.unit.compaction_sessions import SessionBuilder, settings_with


def forked_session() -> tuple[SessionBuilder, str, str, str]:
    """root chain u1 a1, then a branch (explored, the old leaf) and a sibling (the target)."""
    builder = SessionBuilder()
    builder.user("u1")
    ancestor, _ = builder.assistant("a1")
    builder.user("try approach A")
    builder.tool_step("read", {"path": "src/a.py"}, "A" * 4000)
    builder.tool_step("edit", {"path": "src/b.py"}, "ok")
    old_leaf, _ = builder.assistant("approach A fails on empty input")
    builder.leaf = ancestor
    target = builder.user("try approach B")
    return builder, ancestor, old_leaf, target


def test_the_branch_is_everything_after_the_common_ancestor():
    builder, ancestor, old_leaf, target = forked_session()
    entries, common = branch_being_left(builder.path(old_leaf), builder.path(target))
    assert common == ancestor
    assert entries == builder.path(old_leaf)[2:]


def test_request_reads_the_branch_and_lists_its_files():
    builder, ancestor, old_leaf, target = forked_session()
    settings = Settings.model_validate({"branchSummary": {"reserveTokens": 5000}})

    preparation = prepare_branch_summary(
        builder.path(old_leaf),
        builder.path(target),
        builder.tokens,
        None,
        settings,
        instructions="note the failure",
    )

    assert preparation is not None
    assert preparation.from_id == old_leaf and preparation.common_ancestor_id == ancestor
    request = preparation.request
    assert request.kind == "branch" and request.max_tokens == 4000
    assert request.messages[0] == UserMessage(content="try approach A")
    assert "approach A fails on empty input" in request.prompt
    assert "u1" not in request.prompt  # shared history is not part of the branch
    assert request.prompt.endswith("Additional instructions from the user: note the failure")
    assert preparation.files == FileDetails(readFiles=["src/a.py"], modifiedFiles=["src/b.py"])


def test_budget_keeps_the_newest_messages_but_files_cover_the_whole_branch():
    builder, _, old_leaf, target = forked_session()
    last_two = sum(builder.tokens[e.id] for e in builder.path(old_leaf)[-2:])

    preparation = prepare_branch_summary(
        builder.path(old_leaf), builder.path(target), builder.tokens, last_two, Settings()
    )

    assert preparation is not None
    # The budget reaches the edit's result; a result without its call is left out.
    assert len(preparation.entry_ids) == 1
    assert not isinstance(preparation.request.messages[0], ToolResultMessage)
    assert "src/a.py" in preparation.files.readFiles


def test_moving_forward_or_staying_leaves_nothing_to_summarize():
    builder, ancestor, old_leaf, _ = forked_session()
    path = builder.path(old_leaf)
    assert (
        prepare_branch_summary(builder.path(ancestor), path, builder.tokens, None, Settings())
        is None
    )
    assert prepare_branch_summary(path, path, builder.tokens, None, Settings()) is None


def test_a_compaction_in_the_branch_is_read_as_its_summary_and_carries_its_files():
    builder = SessionBuilder()
    ancestor = builder.user("start")
    for n in range(4):
        builder.user(f"request {n} " + "r" * 400)
        builder.tool_step("write", {"path": f"gen/{n}.py"}, "ok " * 100)
        builder.assistant(f"answer {n} " + "a" * 400)
    builder.compact(settings_with(keep_recent=300), "## Goal\nthe compacted goal")
    builder.user("more")
    old_leaf, _ = builder.assistant("latest")

    preparation = prepare_branch_summary(
        builder.path(old_leaf), builder.path(ancestor), builder.tokens, None, Settings()
    )

    assert preparation is not None
    assert "the compacted goal" in preparation.request.prompt
    assert "request 0 " not in preparation.request.prompt  # folded into the summary
    assert "gen/0.py" in preparation.files.modifiedFiles
