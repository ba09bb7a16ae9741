"""prepare_handoff: the request for the document that starts a fresh session."""

from __future__ import annotations

from contextd.compaction.handoff import prepare_handoff
from contextd.model import CompactionEntry, Settings

from tests.unit.compaction_sessions import SessionBuilder, settings_with


def test_handoff_reads_the_whole_context_and_focuses_on_the_goal():
    builder = SessionBuilder()
    for n in range(4):
        builder.user(f"request {n} " + "r" * 400)
        builder.tool_step("edit", {"path": f"src/{n}.py"}, "ok")
        builder.assistant(f"answer {n} " + "a" * 400)
    builder.compact(settings_with(keep_recent=300), "## Goal\nport the parser")
    builder.user("now the lexer")
    builder.tool_step("read", {"path": "src/lexer.py"}, "tokens")
    settings = Settings.model_validate({"compaction": {"reserveTokens": 10000}})

    request = prepare_handoff(builder.path(), builder.tokens, settings, goal="finish the lexer").request

    assert request.kind == "handoff" and request.goal == "finish the lexer"
    assert request.max_tokens == 8000
    assert "port the parser" in request.prompt and "now the lexer" in request.prompt
    assert "Focus the document on this goal for the new session: finish the lexer" in request.prompt
    assert "## Next Steps" in request.prompt and "## Files" in request.prompt
    compaction = next(e for e in builder.path() if isinstance(e, CompactionEntry))
    assert set(compaction.details.modifiedFiles) <= set(request.files.modifiedFiles)
    assert request.files.readFiles == ["src/lexer.py"]


def test_handoff_without_a_goal_has_no_focus_line():
    builder = SessionBuilder()
    builder.user("hi")
    request = prepare_handoff(builder.path(), builder.tokens, Settings()).request
    assert request.goal is None and "Focus the document" not in request.prompt
