"""Importing Claude Code, Codex and pi sessions: the mapping, the problem report, and the
imported session as the real daemon rebuilds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextd.compaction.context import COMPACTION_PREAMBLE, HANDOFF_PREAMBLE
from contextd.importers import IMPORTERS, ImportedSession, save
from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from contextd_client import ContextdClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def test_claude_code_reports_every_line_it_leaves_out() -> None:
    imported = load("claude-code")
    assert problems_at(imported, 1)[0].startswith("skipped: summary")
    assert problems_at(imported, 2)[0].startswith("skipped: file-history-snapshot")
    assert problems_at(imported, 8)[0].startswith("corrupt: not valid JSON")
    assert problems_at(imported, 13) == ["skipped: assistant: not on the branch the session ended on"]
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
    assert problems_at(imported, 4)[0].startswith("skipped: developer instructions")
    assert problems_at(imported, 23)[0].startswith("corrupt")
    assert problems_at(imported, 28)[0].startswith("skipped: web_search_call")


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
    assert path[-1].message.isError and path[-1].message.toolCallId == "t3"


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


# --- through the daemon -------------------------------------------------------------------


RECORDED_FINAL_USAGE = {
    "claude-code": 5 + 31 + 3300 + 120,
    "codex": 2150 + 48,
    "pi": 60 + 25 + 2500 + 90,
}


def assert_tool_calls_paired(messages: list[dict[str, Any]]) -> None:
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            assert not open_calls, f"calls {open_calls} left without results"
            open_calls = {block["id"] for block in message["content"] if block["type"] == "toolCall"}
        elif message["role"] == "toolResult":
            assert message["toolCallId"] in open_calls, f"orphaned result {message['toolCallId']}"
            open_calls.remove(message["toolCallId"])
        else:
            assert not open_calls, f"calls {open_calls} left without results"
    assert not open_calls


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
            first = context["messages"][0]
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
