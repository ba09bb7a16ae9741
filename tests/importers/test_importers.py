"""Importing Claude Code, Codex and pi sessions: the mapping, the problem report, and the
imported session as the real daemon rebuilds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextd.compaction.context import COMPACTION_PREAMBLE, HANDOFF_PREAMBLE
from contextd.importers import IMPORTERS, STREAMING_IMPORTERS, ImportedSession, save
from contextd.follow.mirror import follower_importer
from contextd.importers.common import restore_importer
from contextd.importers.feed import LineFeed
from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    InstructionsEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from contextd_client import ContextdClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.importers.support import assert_tool_calls_paired

FIXTURES = Path(__file__).parent / "fixtures"
CASES = {
    "claude-code": "claude_code.jsonl",
    "codex": "codex.jsonl",
    "pi": "pi_v3.jsonl",
    "pi-v1": "pi_v1.jsonl",
}


def load(case: str) -> ImportedSession:
    source = "pi" if case.startswith("pi") else case
    return IMPORTERS[source](fixture_lines(case))


def fixture_lines(case: str) -> list[str]:
    return (FIXTURES / CASES[case]).read_text().splitlines()


def by_id(imported: ImportedSession) -> dict[str, Any]:
    return {entry.id: entry for entry in imported.entries}


def problems_at(imported: ImportedSession, line: int) -> list[str]:
    return [f"{p.kind}: {p.message}" for p in imported.problems if p.line == line]


def path_to_leaf(imported: ImportedSession) -> list[Any]:
    entries = by_id(imported)
    path, current = [], imported.leaf_id
    while current is not None:
        path.append(entries[current])
        current = entries[current].parentId
    return list(reversed(path))


# --- Claude Code --------------------------------------------------------------------------


def test_claude_code_answers_split_over_records_become_one_message() -> None:
    imported = load("claude-code")
    answer = by_id(imported)["a1"].message
    assert isinstance(answer, AssistantMessage)
    assert [type(block) for block in answer.content] == [ThinkingContent, type(answer.content[1]), ToolCall]
    assert answer.content[2].name == "Read" and answer.content[2].arguments == {"file_path": "/home/dev/shop/cart.py"}
    assert answer.usage is not None and answer.usage.output == 87  # the last record's usage
    assert answer.usage.cacheRead == 14000 and answer.usage.cacheWrite == 1200
    assert answer.stopReason == "toolUse" and answer.model == "claude-sonnet-4-5-20250929"
    assert "a2" not in by_id(imported) and "a3" not in by_id(imported)


def test_claude_code_follows_the_final_branch_through_the_compaction() -> None:
    imported = load("claude-code")
    path = path_to_leaf(imported)
    assert isinstance(path[0], ModelChangeEntry)
    ids = [entry.id for entry in path]
    assert "a6x" not in ids and "a6" in ids
    compaction = by_id(imported)["cb1"]
    assert isinstance(compaction, CompactionEntry)
    assert compaction.reason == "manual" and compaction.tokensBefore == 16256
    assert compaction.summary.startswith("This session is being continued")
    assert compaction.firstKeptEntryId is None
    assert compaction.tokensAfter == 3 + 2400 + 900  # the prompt of the first answer after it
    error_result = by_id(imported)["u3-0"].message
    assert isinstance(error_result, ToolResultMessage) and error_result.isError and error_result.toolName == "Bash"


def test_claude_code_keeps_a_rewound_answer_as_an_abandoned_branch() -> None:
    imported = load("claude-code")
    entries = by_id(imported)
    assert entries["a6x"].parentId == entries["a6"].parentId  # both answer the same request
    assert "a6x" not in [entry.id for entry in path_to_leaf(imported)]


def test_claude_code_reports_every_line_it_leaves_out() -> None:
    imported = load("claude-code")
    assert problems_at(imported, 1)[0].startswith("skipped: summary")
    assert problems_at(imported, 2)[0].startswith("skipped: file-history-snapshot")
    assert problems_at(imported, 8)[0].startswith("corrupt: not valid JSON")
    assert problems_at(imported, 13) == []  # the rewound answer is imported as a branch
    assert "sidechain" in problems_at(imported, 14)[0]
    assert problems_at(imported, 25) == ["unknown: unknown record type 'mystery-record'"]


# --- Codex --------------------------------------------------------------------------------


def test_codex_usage_keeps_cached_input_apart_and_totals_match() -> None:
    imported = load("codex")
    answers = [e.message for e in imported.entries if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)]
    first = answers[0]
    assert [block.type for block in first.content] == ["thinking", "toolCall"]
    assert first.usage is not None
    assert (first.usage.input, first.usage.cacheRead, first.usage.output) == (5210 - 4096, 4096, 180)
    assert first.usage.context_tokens == 5210 + 180
    assert first.model == "gpt-5-codex"
    patch = next(block for answer in answers for block in answer.content if isinstance(block, ToolCall) and block.name == "apply_patch")
    assert patch.arguments["input"].startswith("*** Begin Patch")


def test_codex_maps_failures_compaction_and_skips() -> None:
    imported = load("codex")
    results = [e.message for e in imported.entries if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)]
    failed = [result.toolCallId for result in results if result.isError]
    assert failed == ["call_t1"]  # exit_code 1 in the shell metadata
    compaction = next(e for e in imported.entries if isinstance(e, CompactionEntry))
    assert compaction.tokensBefore == 6300 + 40  # the context size last reported before it
    assert compaction.summary.startswith("The user wants /health")
    assert problems_at(imported, 23)[0].startswith("corrupt")
    assert problems_at(imported, 28)[0].startswith("skipped: web_search_call")


def codex_lines_with(replacements: dict[int, dict[str, Any]], inserted: dict[int, dict[str, Any]] | None = None) -> list[str]:
    lines = fixture_lines("codex")
    for number, payload in replacements.items():
        record = json.loads(lines[number - 1])
        record["payload"] = {**record["payload"], **payload}
        lines[number - 1] = json.dumps(record)
    for number, record in sorted((inserted or {}).items(), reverse=True):
        lines.insert(number - 1, json.dumps(record))
    return lines


def test_codex_environment_and_developer_text_are_instructions_not_user_messages() -> None:
    imported = load("codex")
    instructions = [e for e in imported.entries if isinstance(e, InstructionsEntry)]
    assert [(e.source, e.text[:21]) for e in instructions] == [
        ("environment_context", "<environment_context>"),
        ("developer", "You are Codex, a codi"),
    ]
    users = [e.message for e in imported.entries if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)]
    assert users[0].content[0].text.startswith("The /health endpoint returns 500")
    assert not problems_at(imported, 2) and not problems_at(imported, 4)


def test_codex_plain_text_exit_codes_and_rejected_patches_are_errors() -> None:
    lines = codex_lines_with({
        21: {"output": "Exit code: 1\nWall time: 0.4 seconds\nOutput:\nE   NameError: name 'JSONResponse' is not defined"},
        18: {"output": "apply_patch verification failed: Failed to find expected lines in app/routes.py"},
        27: {"output": "Exit code: 0\nWall time: 2.1 seconds\nOutput:\n3 passed in 0.52s"},
    })
    imported = IMPORTERS["codex"](lines)
    results = {e.message.toolCallId: e.message.isError for e in imported.entries if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)}
    assert results["call_t1"] is True and results["call_p1"] is True and results["call_t2"] is False


def test_codex_placeholder_usage_is_neither_a_figure_nor_tokens_before() -> None:
    placeholder = {"timestamp": "2025-10-03T14:00:19.000Z", "type": "event_msg", "payload": {"type": "token_count", "info": {
        "last_token_usage": {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "total_tokens": 10000}}}}
    imported = IMPORTERS["codex"](codex_lines_with({}, {24: placeholder}))
    compaction = next(e for e in imported.entries if isinstance(e, CompactionEntry))
    assert compaction.tokensBefore == 6300 + 40
    assert problems_at(imported, 24) == ["skipped: token_count with no prompt tokens, a placeholder"]
    usages = [e.message.usage for e in imported.entries if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)]
    assert all(usage is None or usage.total != 10000 for usage in usages)


def test_codex_compacted_replacement_history_is_the_kept_part_whole() -> None:
    request = "The /health endpoint returns 500 when the DB is down. " * 40  # long: never cut
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/home/dev/api</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": request}]},
        {"type": "compaction", "encrypted_content": "gAAAA..."},
    ]
    imported = IMPORTERS["codex"](codex_lines_with({24: {"message": "", "replacement_history": history}}))
    index = next(i for i, e in enumerate(imported.entries) if isinstance(e, CompactionEntry))
    compaction, kept = imported.entries[index], imported.entries[index + 1]
    assert isinstance(compaction, CompactionEntry) and "encrypted" in compaction.summary
    assert isinstance(kept, MessageEntry) and kept.message.content[0].text == request
    assert sum(isinstance(e, InstructionsEntry) for e in imported.entries) == 2  # the environment is not repeated
    assert "skipped: environment_context instructions repeated unchanged" in problems_at(imported, 24)


# --- pi -----------------------------------------------------------------------------------


def test_pi_tree_with_branches_labels_and_a_prior_compaction() -> None:
    imported = load("pi")
    entries = by_id(imported)
    assert imported.name == "CSV quoted newlines" and imported.leaf_id == "e0000022"
    assert entries["e0000003"].parentId == "e0000001"  # through the skipped thinking level change
    compaction = entries["e0000011"]
    assert isinstance(compaction, CompactionEntry)
    assert compaction.firstKeptEntryId == "e0000009" and compaction.tokensBefore == 7000
    assert compaction.details.modifiedFiles == ["src/csv.ts"]
    assert entries["e0000013"].parentId == "e0000011"  # through the skipped custom entry
    label = next(e for e in imported.entries if isinstance(e, LabelEntry))
    assert (label.targetId, label.label) == ("e0000006", "first fix")
    assert entries["e0000009"].parentId == "e0000007"  # children of a label hang on its parent
    assert isinstance(entries["e0000017"], BranchSummaryEntry) and entries["e0000016"].parentId == "e0000015"
    bash = entries["e0000018"].message
    assert isinstance(bash, UserMessage) and bash.content.startswith("Ran `npm test`")
    assert isinstance(entries["e0000021"], SessionInfoEntry)
    assert entries["e0000004"].message.usage.total == 3200 + 90 + 3100
    assert problems_at(imported, 21)[0].startswith("corrupt")
    assert problems_at(imported, 24) == ["unknown: unknown entry type 'whatever_new'"]


def test_pi_v1_gets_ids_and_its_compaction_index_becomes_an_id() -> None:
    imported = load("pi-v1")
    compaction = next(e for e in imported.entries if isinstance(e, CompactionEntry))
    kept = by_id(imported)[compaction.firstKeptEntryId]
    assert kept.message.content[0].text == "Now wire it into the router."
    path = path_to_leaf(imported)
    assert [entry.parentId for entry in path[1:]] == [entry.id for entry in path[:-1]]
    assert path[0].model == "claude-sonnet-4-0"
    repaired = [p for p in imported.problems if p.kind == "repaired"]
    assert len(repaired) == 1 and "'t3'" in repaired[0].message
    assert repaired[0].line == 9  # the line of the call, not of what came after it
    assert path[-1].message.isError and path[-1].message.toolCallId == "t3"


def test_pi_compaction_takes_tokens_after_from_the_next_valid_answer() -> None:
    lines = fixture_lines("pi-v1")
    aborted = {"type": "message", "timestamp": "2025-06-01T10:00:10.000Z", "message": {
        "role": "assistant", "content": [], "stopReason": "aborted",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}}}
    lines.insert(8, json.dumps(aborted))  # right after the compaction
    imported = IMPORTERS["pi"](lines)
    compaction = next(e for e in imported.entries if isinstance(e, CompactionEntry))
    assert compaction.tokensAfter == 700  # the prompt of the t3 answer, not the aborted one's 0


def test_pi_fields_contextd_does_not_keep_are_reported() -> None:
    lines = fixture_lines("pi-v1")
    header = json.loads(lines[0])
    lines[0] = json.dumps({**header, "branchedFrom": "/home/dev/.pi/agent/sessions/old.jsonl"})
    imported = IMPORTERS["pi"](lines)
    assert any("branchedFrom" in p for p in problems_at(imported, 1))
    assert any("message.details" in p for p in problems_at(imported, 4))
    assert any("message.api" in p and "message.provider" in p and "message.usage.cost" in p for p in problems_at(imported, 3))


# --- Claude Code: older summaries, parallel calls, other files ------------------------------


def claude_record(uuid: str, parent: str | None, kind: str, content: Any, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=extra.pop("message_id", f"msg-{uuid}"), model="claude-opus-4-1", stop_reason=extra.pop("stop_reason", None),
                       usage={"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0})
    return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "cwd": "/w",
                       "timestamp": "2025-08-01T10:00:00.000Z", "message": message, **extra})


def test_claude_code_older_summary_without_a_boundary_is_a_compaction_over_the_history() -> None:
    summary = "This session is being continued from a previous conversation that ran out of context. " + "Stack: Next.js and Supabase. " * 50
    lines = [
        claude_record("u1", None, "user", "Add a welcome email."),
        claude_record("a1", "u1", "assistant", [{"type": "text", "text": "Done."}], stop_reason="end_turn"),
        claude_record("s1", None, "user", summary, isCompactSummary=True),
        claude_record("a2", "s1", "assistant", [{"type": "text", "text": "Continuing."}], stop_reason="end_turn"),
    ]
    imported = IMPORTERS["claude-code"](lines)
    path = path_to_leaf(imported)
    assert [e.id for e in path][1:] == ["u1", "a1", "s1", "a2"]
    compaction = by_id(imported)["s1"]
    assert isinstance(compaction, CompactionEntry) and compaction.summary == summary
    assert compaction.tokensBefore == 1015  # the last answer's context before it
    assert not imported.problems


def test_claude_code_results_of_parallel_calls_stay_on_the_branch() -> None:
    def call(n: int) -> list[dict[str, Any]]:
        return [{"type": "tool_use", "id": f"call{n}", "name": "Read", "input": {"file_path": f"/w/{n}.py"}}]

    def result(n: int) -> list[dict[str, Any]]:
        return [{"type": "tool_result", "tool_use_id": f"call{n}", "content": f"file {n}"}]

    lines = [
        claude_record("u1", None, "user", "Read both files."),
        claude_record("a1", "u1", "assistant", call(1), message_id="m1"),
        claude_record("a2", "a1", "assistant", call(2), message_id="m1", stop_reason="tool_use"),
        claude_record("r1", "a1", "user", result(1)),  # hangs off its own call's record
        claude_record("r2", "a2", "user", result(2)),
        claude_record("a3", "r2", "assistant", [{"type": "text", "text": "Both read."}], stop_reason="end_turn"),
    ]
    imported = IMPORTERS["claude-code"](lines)
    results = [e.message for e in path_to_leaf(imported) if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)]
    assert [(r.toolCallId, r.content) for r in results] == [("call1", "file 1"), ("call2", "file 2")]
    assert not imported.problems


def test_claude_code_keeps_a_killed_background_agents_notification_as_a_note() -> None:
    """Claude Code drops the notification of a killed background agent from its queue: the
    queue-operation record is the only trace. It becomes the user message Claude Code would
    have sent, before the next request (the answer in flight keeps its results), the same
    whether the file is read whole or line by line with a snapshot in between."""
    killed = (
        "<task-notification>\n<task-id>b7x2</task-id>\n<status>killed</status>\n"
        "<summary>Agent \"Load test the API\" was stopped</summary>\n</task-notification>"
    )
    call = [{"type": "tool_use", "id": "call1", "name": "Bash", "input": {"command": "npm test"}}]
    lines = [
        claude_record("u1", None, "user", "Run the tests while the load test runs."),
        claude_record("a1", "u1", "assistant", call, message_id="m1", stop_reason="tool_use"),
        json.dumps({"type": "queue-operation", "operation": "enqueue", "timestamp": "2025-08-01T10:00:01.000Z",
                    "sessionId": "s", "content": killed}),
        claude_record("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "call1", "content": "12 passed"}]),
        claude_record("a2", "r1", "assistant", [{"type": "text", "text": "Tests pass."}], stop_reason="end_turn"),
        claude_record("u2", "a2", "user", "Why did the load test stop?"),
        claude_record("a3", "u2", "assistant", [{"type": "text", "text": "It was killed."}], stop_reason="end_turn"),
    ]
    imported = IMPORTERS["claude-code"](lines)
    messages = [e.message for e in path_to_leaf(imported) if isinstance(e, MessageEntry)]
    assert [(m.role, message_text(m.content)) for m in messages] == [
        ("user", "Run the tests while the load test runs."),
        ("assistant", ""),
        ("toolResult", "12 passed"),
        ("assistant", "Tests pass."),
        ("user", killed),
        ("user", "Why did the load test stop?"),
        ("assistant", "It was killed."),
    ]
    assert [(p.line, p.kind) for p in imported.problems] == [(3, "repaired")]
    streaming = STREAMING_IMPORTERS["claude-code"]()
    for number, line in enumerate(lines[:3], start=1):
        streaming.feed(number, line)
    taken = streaming.take_settled()  # a restart after the queue record: the note is in the saved state
    resumed = restore_importer(STREAMING_IMPORTERS["claude-code"], json.loads(json.dumps(streaming.snapshot())))
    for number, line in enumerate(lines[3:], start=4):
        resumed.feed(number, line)
    taken += resumed.take_settled()
    assert [e.model_dump() for e in taken + resumed.finish().entries] == [e.model_dump() for e in imported.entries]
    unfinished = IMPORTERS["claude-code"](lines[:5])  # no later request: kept at the end
    assert message_text(unfinished.entries[-1].message.content) == killed  # type: ignore[union-attr]


def test_claude_code_md_context_is_instructions_and_the_request_stays_a_user_message() -> None:
    claude_md = (
        "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\n"
        "Contents of /w/CLAUDE.md (project instructions, checked into the codebase):\n\nUse pnpm, never npm.\n</system-reminder>\n"
    )
    lines = [
        claude_record("u1", None, "user", [{"type": "text", "text": claude_md}, {"type": "text", "text": "Add a login page."}]),
        claude_record("a1", "u1", "assistant", [{"type": "text", "text": "On it."}], stop_reason="end_turn"),
    ]
    imported = IMPORTERS["claude-code"](lines)
    instructions = [e for e in imported.entries if isinstance(e, InstructionsEntry)]
    assert [(e.source, "Use pnpm, never npm." in e.text) for e in instructions] == [("CLAUDE.md", True)]
    assert by_id(imported)["u1"].message.content == [TextContent(text="Add a login page.")]


def test_claude_code_refuses_other_files_instead_of_crashing() -> None:
    imported = IMPORTERS["claude-code"](fixture_lines("pi"))
    assert imported.entries == [] and imported.refusal() is not None
    assert "holds no claude-code conversation" in imported.refusal()


# --- robustness ---------------------------------------------------------------------------

JUNK = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), min_size=1, max_size=40).filter(lambda s: s.strip() and not s.strip().startswith("{")),
    st.just("[1, 2, 3]"),
    st.just('{"type": "martian", "id": "zz", "parentId": null}'),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(sorted(CASES)), junk=st.lists(st.tuples(st.integers(min_value=1), JUNK), min_size=1, max_size=5))
def test_junk_lines_are_reported_with_their_line_number_never_fatal(case: str, junk: list[tuple[int, str]]) -> None:
    lines = fixture_lines(case)
    junk_lines: set[int] = set()
    for position, text in junk:
        index = 1 + position % len(lines)  # never before the header
        lines.insert(index, text)
        junk_lines = {n + 1 if n > index else n for n in junk_lines} | {index + 1}
    source = "pi" if case.startswith("pi") else case
    imported = IMPORTERS[source](lines)
    reported = {problem.line for problem in imported.problems}
    assert junk_lines <= reported
    assert imported.entries


def with_field(line: str, path: list[str], value: Any) -> str:
    """`line`'s record with the field at `path` set to `value`."""
    record = json.loads(line)
    holder = record
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return json.dumps(record)


BAD_FIELDS = {
    # agent: the marker of the lines whose field is set, and where the field is
    "codex": ('"last_token_usage"', ["payload", "info", "last_token_usage", "input_tokens"]),
    "claude-code": ('"input_tokens"', ["message", "usage", "input_tokens"]),
    "pi": ('"type": "compaction"', ["tokensBefore"]),
}


@pytest.mark.parametrize("bad", ["many", [1]])
@pytest.mark.parametrize("agent", sorted(BAD_FIELDS))
def test_a_count_no_agent_writes_is_said_by_name_and_the_import_goes_on(agent: str, bad: Any) -> None:
    """A count of another type is said, naming it, at its line (a Codex or pi record is
    skipped; a Claude Code answer stays, without its usage); every line after it is imported,
    whole and followed (a follower that raised there would read the same line again at
    every round, and nothing after it)."""
    marker, path = BAD_FIELDS[agent]
    lines = [with_field(line, path, bad) if marker in line else line for line in fixture_lines(agent)]
    changed = {number for number, line in enumerate(fixture_lines(agent), start=1) if marker in line}
    whole = IMPORTERS[agent](lines)
    followed = follower_importer(agent)  # type: ignore[arg-type]
    LineFeed(followed).feed("".join(line + "\n" for line in lines).encode())
    for problems in (whole.problems, followed.problems):
        said = [problem for problem in problems if path[-1] in problem.message]
        assert said and {problem.line for problem in said} <= changed
    assert load(agent).entries[-1].id in by_id(whole)
    reference = follower_importer(agent)  # type: ignore[arg-type]
    LineFeed(reference).feed("".join(line + "\n" for line in fixture_lines(agent)).encode())
    assert followed.leaf_id == reference.leaf_id is not None


# --- through the daemon -------------------------------------------------------------------


RECORDED_FINAL_USAGE = {
    "claude-code": 5 + 31 + 3300 + 120,
    "codex": 2150 + 48,
    "pi": 60 + 25 + 2500 + 90,
}


async def test_imported_sessions_rebuild_in_the_daemon(tmp_path: Path) -> None:
    saved = {}
    for case in CASES:
        imported = load(case)
        name = None if imported.name else case
        saved[case] = (imported, save(imported, tmp_path, workspace=str(tmp_path / case), name=name)[0])
    async with await ContextdClient.spawn(data_dir=tmp_path) as client:
        for case, (imported, session_id) in saved.items():
            opened = await client.session_open(session_id=session_id)
            assert opened["leafId"] == imported.leaf_id
            context = await client.context(session_id)
            assert_tool_calls_paired(context["messages"])
            usage = opened["usage"]
            assert usage["source"] == "usage"
            if case in RECORDED_FINAL_USAGE:
                assert usage["tokens"] == RECORDED_FINAL_USAGE[case], case
            else:
                assert usage["tokens"] > 700 + 90  # the last recorded answer plus the added result
            first = next(message for message in context["messages"] if message["role"] != "system")
            if any(isinstance(e, CompactionEntry) for e in path_to_leaf(imported)):
                assert first["content"].startswith(COMPACTION_PREAMBLE)
            assert not first["content"].startswith(HANDOFF_PREAMBLE)
            state = await client.state(session_id)
            assert state["name"] == (imported.name or case)


async def test_an_explicit_name_renames_without_changing_the_context(tmp_path: Path) -> None:
    imported = load("pi")
    session_id, _ = save(imported, tmp_path, workspace=str(tmp_path), name="my name")
    async with await ContextdClient.spawn(data_dir=tmp_path) as client:
        opened = await client.session_open(session_id=session_id)
        state = await client.state(session_id)
        context = await client.context(session_id)
    assert state["name"] == "my name"
    assert opened["usage"]["tokens"] == RECORDED_FINAL_USAGE["pi"]
    assert context["messages"][-1]["content"][0]["text"].startswith("Done: splitRows")
