"""Every real transcript of tests/fixtures/real imports faithfully.

The checks read the source files with their own small rules, not the importers' code: what
each line holds (texts, tool call and result ids, entry ids), which commands failed, what
usage the agent last reported. An importer passes when every line's content is in the
imported session or the line is in its problem report, nothing is left unpaired, and the
daemon's figure starts from the usage the source reported last.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from contextd.compaction.files import collect_files, modified_paths
from contextd.importers import IMPORTERS, ImportedSession, save
from contextd.importers.common import MISSING_RESULT_TEXT
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    Entry,
    ImageContent,
    InstructionsEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    Settings,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.offline import summarize_offline
from contextd_client import ContextdClient

from tests.corpus import MANIFEST, NAMES, REAL, agent_of
from tests.factories import coding_turn
from tests.importers.support import assert_tool_calls_paired, imported, records, source_lines

INJECTED_OPENINGS = ("# AGENTS.md instructions for ", "<environment_context>", "<user_instructions>")


def by_agent(wanted: str) -> list[str]:
    return [name for name in NAMES if agent_of(name) == wanted]


def test_the_corpus_holds_at_least_three_transcripts_of_each_agent() -> None:
    assert {wanted: len(by_agent(wanted)) >= 3 for wanted in ("claude-code", "codex", "pi")} == {
        "claude-code": True, "codex": True, "pi": True,
    }
    for name, item in MANIFEST.items():
        assert (REAL / name).exists() and item["repository"] and item["commit"] and item["path"], name


# --- what the source holds, by its own rules ------------------------------------------------


Fingerprint = tuple[str, str]


def _text(kind: str, value: Any) -> list[Fingerprint]:
    return [(kind, value.strip())] if isinstance(value, str) and value.strip() else []


def claude_code_fingerprints(raw: dict[str, Any]) -> list[Fingerprint] | None:
    """None for a record with nothing to import (it must then be reported)."""
    message = raw.get("message")
    if raw.get("type") == "system" and raw.get("subtype") == "compact_boundary":
        return [("id", raw["uuid"])]
    if raw.get("type") == "summary":  # a title: this session's, or reported as another's
        return [("title", raw["summary"].strip())]
    if raw.get("type") not in ("user", "assistant") or not isinstance(message, dict) or raw.get("isSidechain"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return _text("text", content)
    found: list[Fingerprint] = []
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            found += _text("text", block.get("text"))
        elif kind == "thinking":
            found += _text("text", block.get("thinking"))
        elif kind == "tool_use":
            found.append(("call", block["id"]))
        elif kind == "tool_result":
            found.append(("result", block["tool_use_id"]))
        elif kind == "image":
            found.append(("image", block["source"]["data"][:64]))
    return found


def codex_fingerprints(raw: dict[str, Any]) -> list[Fingerprint] | None:
    kind, payload = raw.get("type"), raw.get("payload") or {}
    if kind == "session_meta":
        return _text("text", payload.get("instructions"))
    if kind == "turn_context":  # the model is imported; the other settings must be reported
        return [("model", payload["model"]), ("settings", json.dumps(payload, sort_keys=True))]
    if kind == "event_msg" and payload.get("type") == "token_count":
        last = (payload.get("info") or {}).get("last_token_usage") or {}
        return [] if last.get("input_tokens") else None  # usage goes onto its answer
    if kind == "compacted":
        return [
            fingerprint
            for item in payload.get("replacement_history") or []
            if item.get("type") == "message"
            for part in item.get("content") or []
            for fingerprint in _text("text", part.get("text"))
        ]
    if kind != "response_item":
        return None
    item_type = payload.get("type")
    if item_type == "message":
        return [fingerprint for part in payload.get("content") or [] for fingerprint in _text("text", part.get("text"))]
    if item_type == "reasoning":
        found = [fingerprint for part in payload.get("summary") or [] for fingerprint in _text("text", part.get("text"))]
        return found or None
    if item_type in ("function_call", "custom_tool_call"):
        return [("call", payload["call_id"])]
    if item_type in ("function_call_output", "custom_tool_call_output"):
        return [("result", payload["call_id"])]
    return None


def pi_fingerprints(raw: dict[str, Any]) -> list[Fingerprint] | None:
    if raw.get("type") == "session":
        return []
    return [("id", raw["id"])] if raw.get("type") in ("message", "model_change", "compaction", "branch_summary", "session_info", "label", "custom_message") else None


FINGERPRINTS = {"claude-code": claude_code_fingerprints, "codex": codex_fingerprints, "pi": pi_fingerprints}


def import_fingerprints(session: ImportedSession) -> tuple[set[Fingerprint], str]:
    """What the import holds, and all its text joined (a text may have been joined to others)."""
    found: set[Fingerprint] = set()
    texts: list[str] = []

    def add_text(value: str) -> None:
        texts.append(value)
        found.add(("text", value.strip()))

    for entry in session.entries:
        found.add(("id", entry.id))
        if isinstance(entry, (CompactionEntry,)):
            add_text(entry.summary)
        elif isinstance(entry, InstructionsEntry):
            add_text(entry.text)
        elif isinstance(entry, ModelChangeEntry):
            found.add(("model", entry.model))
        elif isinstance(entry, SessionInfoEntry):
            found.add(("title", entry.name))
        elif isinstance(entry, MessageEntry):
            message = entry.message
            if isinstance(message, ToolResultMessage):
                if message.content != MISSING_RESULT_TEXT:
                    found.add(("result", message.toolCallId))
                continue
            content = message.content
            for block in [TextContent(text=content)] if isinstance(content, str) else content:
                if isinstance(block, TextContent):
                    add_text(block.text)
                elif isinstance(block, ThinkingContent):
                    add_text(block.thinking)
                elif isinstance(block, ImageContent):
                    found.add(("image", block.data[:64]))
                else:
                    found.add(("call", block.id))
    return found, "\n".join(texts)


@pytest.mark.parametrize("name", NAMES)
def test_every_source_line_is_imported_or_reported(name: str) -> None:
    session = imported(name)
    assert session.refusal() is None and session.message_count > 10
    held, all_text = import_fingerprints(session)
    reported = {problem.line for problem in session.problems}
    unaccounted = []
    for number, raw in records(name):
        fingerprints = FINGERPRINTS[agent_of(name)](raw)
        if fingerprints is None:
            missing = ["nothing imported"]
        else:
            missing = [f for f in fingerprints if f not in held and not (f[0] == "text" and f[1] in all_text)]
        if missing and number not in reported:
            unaccounted.append((number, missing[:2]))
    assert not unaccounted, f"{len(unaccounted)} lines neither imported nor reported, e.g. {unaccounted[:3]}"
    objects = {number for number, _ in records(name)}
    unreadable = {n for n, line in enumerate(source_lines(name), start=1) if line.strip() and n not in objects}
    assert unreadable <= reported


# --- Codex --------------------------------------------------------------------------------


def user_texts(session: ImportedSession) -> list[str]:
    texts = []
    for entry in session.entries:
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            content = entry.message.content
            texts += [content] if isinstance(content, str) else [b.text for b in content if isinstance(b, TextContent)]
    return texts


@pytest.mark.parametrize("name", by_agent("codex"))
def test_codex_instructions_never_become_user_messages(name: str) -> None:
    session = imported(name)
    developer = {
        part.get("text") for _, raw in records(name) if raw.get("type") == "response_item"
        and (raw["payload"].get("role") in ("developer", "system")) for part in raw["payload"].get("content") or []
    }
    for text in user_texts(session):
        assert not text.lstrip().startswith(INJECTED_OPENINGS), text[:80]
        assert text not in developer
    sources = {entry.source for entry in session.entries if isinstance(entry, InstructionsEntry)}
    assert {"AGENTS.md", "environment_context"} <= sources


EXIT_CODE = re.compile(r"\s*Exit code: (-?\d+)")


def source_failed(output: Any) -> bool:
    text = output if isinstance(output, str) else ""
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        return (decoded.get("metadata") or {}).get("exit_code") not in (None, 0)
    exit_code = EXIT_CODE.match(text)
    return int(exit_code.group(1)) != 0 if exit_code else text.startswith("apply_patch verification failed")


@pytest.mark.parametrize("name", by_agent("codex"))
def test_codex_failed_commands_and_patches_are_errors(name: str) -> None:
    expected = {
        raw["payload"]["call_id"]: source_failed(raw["payload"].get("output"))
        for _, raw in records(name)
        if raw.get("type") == "response_item" and raw["payload"].get("type") in ("function_call_output", "custom_tool_call_output")
    }
    results = {
        entry.message.toolCallId: entry.message.isError
        for entry in imported(name).entries
        if isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage) and entry.message.content != MISSING_RESULT_TEXT
    }
    assert results == expected
    assert any(expected.values())  # each rollout holds failures, so the check is not vacuous


@pytest.mark.parametrize("name", [n for n in by_agent("codex") if any(r.get("type") == "compacted" for _, r in records(n))])
def test_codex_compaction_keeps_the_replacement_history_requests_whole(name: str) -> None:
    session = imported(name)
    compactions = [(number, raw["payload"]) for number, raw in records(name) if raw.get("type") == "compacted"]
    imported_compactions = [index for index, entry in enumerate(session.entries) if isinstance(entry, CompactionEntry)]
    assert len(imported_compactions) == len(compactions) >= 1
    for (number, payload), index in zip(compactions, imported_compactions):
        kept_requests = [
            "".join(part.get("text", "") for part in item["content"])
            for item in payload["replacement_history"]
            if item.get("type") == "message" and item.get("role") == "user"
        ]
        kept_requests = [text for text in kept_requests if not text.lstrip().startswith(INJECTED_OPENINGS)]
        following: list[str] = []
        for entry in session.entries[index + 1 :]:
            if isinstance(entry, InstructionsEntry):
                continue
            if not (isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)):
                break
            following.append(user_texts(ImportedSession("codex", None, None, None, None, [entry], None))[0])
        # The kept requests come first, whole; the user's next request may follow them.
        assert following[: len(kept_requests)] == kept_requests, f"compaction on line {number}"
        compaction = session.entries[index]
        assert isinstance(compaction, CompactionEntry) and compaction.summary
        assert compaction.tokensBefore > 50_000  # the last real usage, not a placeholder


# --- Claude Code --------------------------------------------------------------------------


def path_to_leaf(session: ImportedSession) -> list[Entry]:
    entries = {entry.id: entry for entry in session.entries}
    path, current = [], session.leaf_id
    while current is not None:
        path.append(entries[current])
        current = entries[current].parentId
    return path[::-1]


@pytest.mark.parametrize("name", by_agent("claude-code"))
def test_claude_code_keeps_the_branch_across_corrupt_lines(name: str) -> None:
    lines = list(source_lines(name))
    clean = IMPORTERS["claude-code"](lines)
    chain = [n for n, raw in records(name) if raw.get("type") in ("user", "assistant") and not raw.get("isSidechain")]
    broken = {chain[len(chain) // 3], chain[2 * len(chain) // 3]}
    for number in broken:
        lines[number - 1] = lines[number - 1][: len(lines[number - 1]) // 2]  # a half-written line
    damaged = IMPORTERS["claude-code"](lines)
    assert {problem.line for problem in damaged.problems if problem.kind == "corrupt"} == broken
    assert not [p for p in damaged.problems if "not on the branch" in p.message and p.line not in broken]
    assert len(path_to_leaf(damaged)) >= len(path_to_leaf(clean)) - 2 * len(broken) - 2
    assert path_to_leaf(damaged)[1].id == path_to_leaf(clean)[1].id  # the same start


@pytest.mark.parametrize("name", by_agent("claude-code"))
def test_claude_code_records_of_one_answer_stay_one_message_with_their_results(name: str) -> None:
    """Records sharing a `message.id` are one answer whatever Claude Code wrote between
    them (file snapshots, progress, queue operations): each call keeps its own result, none
    gets a stand-in. Found on claude-code-atlas-sonnet45 around line 196; the follower
    reads through the same path (tests/follow checks pieces import as the whole file)."""
    calls_of_answer: dict[str, set[str]] = {}
    answered: set[str] = set()
    for _, raw in records(name):
        message = raw.get("message")
        if not isinstance(message, dict) or raw.get("isSidechain") or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_use" and raw.get("type") == "assistant":
                calls_of_answer.setdefault(str(message.get("id")), set()).add(str(block.get("id")))
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                answered.add(str(block.get("tool_use_id")))
    session = imported(name)
    messages = [e.message for e in session.entries if isinstance(e, MessageEntry)]
    answers = [{call.id for call in m.tool_calls} for m in messages if isinstance(m, AssistantMessage)]
    for calls in calls_of_answer.values():
        assert any(calls <= imported_calls for imported_calls in answers), calls
    stand_ins = {
        m.toolCallId for m in messages if isinstance(m, ToolResultMessage) and message_text(m.content) == MISSING_RESULT_TEXT
    }
    assert not stand_ins & answered


KILLED_BACKGROUND = "claude-code-flow-killed-background.jsonl.gz"


def test_claude_code_killed_background_tasks_are_kept_as_the_notes_claude_code_never_sent() -> None:
    """claude-code-flow-killed-background ends with two background commands killed (lines
    85-86): Claude Code drops their notifications from its queue, so the queue-operation
    records are the only trace. Each becomes a user message at the end of the conversation,
    in order, reported as repaired; the queue's other records stay left out."""
    killed = [
        (number, raw["content"])
        for number, raw in records(KILLED_BACKGROUND)
        if raw.get("type") == "queue-operation" and "<status>killed</status>" in str(raw.get("content"))
    ]
    assert [number for number, _ in killed] == [85, 86]
    session = imported(KILLED_BACKGROUND)
    messages = [e.message for e in path_to_leaf(session) if isinstance(e, MessageEntry)]
    assert [(m.role, message_text(m.content)) for m in messages[-2:]] == [("user", text) for _, text in killed]
    assert isinstance(messages[-3], AssistantMessage)  # after the last answer
    reported = {p.line: p.kind for p in session.problems if p.message.startswith("queue-operation")}
    assert reported == {1: "skipped", 85: "repaired", 86: "repaired"}
    # The summary sees them: each killed task's own summary line is in its critical context.
    request = SummaryRequest(kind="compaction", messages=messages, system_prompt="", prompt="", max_tokens=6000)
    summary = summarize_offline(request)
    for _, text in killed:
        stopped = re.search(r"<summary>(.*?)</summary>", text)
        assert stopped is not None and f"- {stopped.group(1)}" in summary.split("## Critical Context")[1]


@pytest.mark.parametrize("name", NAMES)
def test_a_file_whose_every_write_failed_is_not_a_modified_file(name: str) -> None:
    """claude-code-atlas-short's orchestrator.ts and codex-knearme-two-compactions'
    reader.ts were only ever written by edits that failed: nothing of them changed."""
    settings = Settings().compaction
    messages = [entry.message for entry in imported(name).entries if isinstance(entry, MessageEntry)]
    failed = {m.toolCallId for m in messages if isinstance(m, ToolResultMessage) and m.isError}
    written: dict[bool, set[str]] = {True: set(), False: set()}
    for message in messages:
        for call in message.tool_calls if isinstance(message, AssistantMessage) else []:
            if call.name in settings.modifyTools:
                written[call.id not in failed].update(modified_paths(call))
    modified = set(collect_files(messages, settings).modifiedFiles)
    assert modified == written[True]
    assert not modified & (written[False] - written[True])


# --- through the daemon: pairing and the figure -------------------------------------------


def last_reported_usage(name: str) -> int | None:
    """The context size the agent itself reported on its last valid answer; None if it never
    reported one (a report of all zeros is none)."""
    last: int | None = None
    for _, raw in records(name):
        if agent_of(name) == "claude-code":
            message = raw.get("message")
            if raw.get("type") == "assistant" and isinstance(message, dict) and not raw.get("isSidechain") \
                    and message.get("model") != "<synthetic>" and not raw.get("isApiErrorMessage") and message.get("usage"):
                usage = message["usage"]
                total = sum(int(usage.get(key) or 0) for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
                last = total or last  # all zeros is no report (GLM behind Claude Code writes them)
        elif agent_of(name) == "codex":
            payload = raw.get("payload") or {}
            usage = (payload.get("info") or {}).get("last_token_usage") if payload.get("type") == "token_count" else None
            if usage and usage.get("input_tokens"):
                last = int(usage["total_tokens"])
        else:
            message = raw.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant" and message.get("stopReason") not in ("error", "aborted"):
                usage = message.get("usage") or {}
                total = usage.get("totalTokens") or sum(int(usage.get(k) or 0) for k in ("input", "output", "cacheRead", "cacheWrite"))
                last = total or last
    return last


async def test_every_transcript_rebuilds_paired_with_the_reported_figure(tmp_path: Path) -> None:
    saved = {name: save(imported(name), tmp_path, workspace=str(tmp_path / name), name=name)[0] for name in NAMES}
    async with await ContextdClient.spawn(data_dir=tmp_path) as client:
        for name, session_id in saved.items():
            opened = await client.session_open(session_id=session_id)
            context = await client.context(session_id)
            assert_tool_calls_paired([m for m in context["messages"] if m["role"] != "system"])
            tree = await client.tree(session_id)
            nodes = {node["id"]: node for node in tree["nodes"]}
            path, current = [], tree["leafId"]
            while current is not None:
                path.append(current)
                current = nodes[current]["parentId"]
            path.reverse()
            entries = {entry.id: entry for entry in imported(name).entries}
            answers = [
                index for index, entry_id in enumerate(path)
                if isinstance(entries.get(entry_id), MessageEntry)
                and isinstance(entries[entry_id].message, AssistantMessage)  # type: ignore[union-attr]
                and entries[entry_id].message.usage is not None  # type: ignore[union-attr]
                and not entries[entry_id].message.failed  # type: ignore[union-attr]
                and entries[entry_id].message.usage.context_tokens > 0  # type: ignore[union-attr]
            ]
            reported = last_reported_usage(name)
            if reported is None:  # nothing to anchor on: the whole context is counted
                assert opened["usage"]["source"] != "usage", name
                continue
            assert answers, name
            anchor = entries[path[answers[-1]]].message  # type: ignore[union-attr]
            assert anchor.usage.context_tokens == reported, name
            counted_after = sum(nodes[entry_id]["tokens"] for entry_id in path[answers[-1] + 1 :])
            usage = opened["usage"]
            assert usage["source"] == "usage", name
            if counted_after == 0:
                assert usage["tokens"] == reported, name
            else:  # what came after the last answer is counted (and calibrated, for some models)
                assert reported < usage["tokens"] <= reported + 2 * counted_after, name
            if "system" in context:
                assert context["messages"][0] == {"role": "system", "content": context["system"]}


# --- the command line: exit 0 on every transcript, exit 2 on anything else --------------


def run_import(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "import", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )


def test_the_command_imports_a_real_transcript_and_reports_one_line_per_kind_of_problem(tmp_path: Path) -> None:
    """A Codex rollout has hundreds of lines that are not conversation: a user reads one
    line per kind, with its count and first lines, the real repairs first; `--verbose`
    (and `--json`) list every line."""
    name = "codex-voice-assistant.jsonl.gz"
    source = tmp_path / "rollout.jsonl"
    source.write_text("\n".join(source_lines(name)) + "\n")
    done = run_import("--from", "codex", str(source), data_dir=tmp_path / "data")
    assert done.returncode == 0, done.stderr
    assert "Imported" in done.stdout and "Traceback" not in done.stderr
    problems = imported(name).problems
    kinds = {(p.kind, re.sub(r"'[^']*\d[^']*'", "…", p.message)) for p in problems}
    reported = done.stderr.splitlines()
    assert len(problems) > 300 and len(reported) == len(kinds) < 20
    assert reported[0].startswith(f"{source}: repaired: tool call … (")  # the real problem first
    for kind, message in kinds:
        lines = sorted(p.line for p in problems if (p.kind, re.sub(r"'[^']*\d[^']*'", "…", p.message)) == (kind, message))
        shown = f"{len(lines)} lines {', '.join(map(str, lines[:5]))}" if len(lines) > 1 else f"line {lines[0]}"
        assert any(line.startswith(f"{source}: {kind}: {message} ({shown}") for line in reported), (kind, message)
    verbose = run_import("--from", "codex", str(source), "--verbose", data_dir=tmp_path / "data")
    assert len(verbose.stderr.splitlines()) == len(problems)


BAD_FILES = {
    "empty": b"",
    "garbage": b"hello\nthis is not json at all\n",
    "binary": bytes(range(256)) * 8,
    "json-but-nothing": b'{"a": 1}\n[1, 2]\n"text"\n',
}


@pytest.mark.parametrize("source", ["claude-code", "codex", "pi"])
@pytest.mark.parametrize("bad", [*BAD_FILES, "another agent"])
def test_files_that_are_not_the_format_exit_2_with_one_line(tmp_path: Path, source: str, bad: str) -> None:
    path = tmp_path / "input.jsonl"
    if bad == "another agent":
        other = next(name for name in NAMES if agent_of(name) != source)
        path.write_text("\n".join(source_lines(other)) + "\n")
    else:
        path.write_bytes(BAD_FILES[bad])
    done = run_import("--from", source, str(path), data_dir=tmp_path / "data")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"contextd: error: {path}"), done.stderr
    why = "is not a UTF-8 text file" if bad == "binary" else f"holds no {source} conversation"
    assert why in done.stderr, done.stderr
    assert not (tmp_path / "data").exists() or not list((tmp_path / "data").rglob("*.jsonl"))


# --- Claude Code's own summary through contextd's compactions -------------------------------

CLAUDE_SUMMARY_FACTS = ("Gym Lead Hub", "account_claim_tokens", "Resend")
"""The product, a table and the mail service, as Claude Code's last summary of this session states them."""


async def test_an_imported_claude_code_summary_outlives_two_contextd_compactions(tmp_path: Path) -> None:
    name = "claude-code-atlas-opus41.jsonl.gz"
    session = imported(name)
    last_summary = [e for e in path_to_leaf(session) if isinstance(e, CompactionEntry)][-1].summary
    assert last_summary.startswith("This session is being continued") and all(f in last_summary for f in CLAUDE_SUMMARY_FACTS)
    session_id = save(session, tmp_path, workspace=str(tmp_path), name=name)[0]
    settings = {"compaction": {"keepRecentTokens": 2_000}, "pruning": {"enabled": False}}
    async with await ContextdClient.spawn(data_dir=tmp_path, settings=settings) as client:
        await client.session_open(session_id=session_id)
        summaries = []
        for round_ in range(2):
            await client.append(session_id, [message for turn in range(round_ * 4, round_ * 4 + 4) for message in coding_turn(turn)])
            summaries.append((await client.compact(session_id))["summary"])
    for fact in CLAUDE_SUMMARY_FACTS:
        assert fact in summaries[-1], fact
