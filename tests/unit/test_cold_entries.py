"""Cold entries: a loaded session keeps the message entries outside its live context as their
file lines (`ColdMessageEntry`), and answers every request exactly as if it had parsed them all."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextd.importers import IMPORTERS, save
from contextd.model import (
    MISSING_RESULT_TEXT,
    AssistantMessage,
    ColdMessageEntry,
    ImageContent,
    MessageEntry,
    Settings,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from contextd.session import LiveSession, NothingToCompactError, SessionManager, SilentEvents, tree_of
from contextd.session.counts import counts_path
from contextd.session.history import get_entries
from contextd import store
from contextd.store import Store, encode_line
from contextd.tokens.context_size import largest_report
from contextd.tokens.unseen import learn_unseen
from tests.corpus import read_text

SMALL = Settings.model_validate(
    {"defaultModel": "claude-sonnet-4-6", "compaction": {"keepRecentTokens": 150}, "pruning": {"enabled": False}}
)


MODELS = ("claude-sonnet-4-6", "gpt-5.1")


def manager(data_dir: Path) -> SessionManager:
    return SessionManager(Store(data_dir), SMALL, SilentEvents())


@contextmanager
def parsed_whole() -> Iterator[None]:
    """Loads parse every line and keep every entry parsed, as before cold entries: the reference."""
    with (
        mock.patch("contextd.session.manager.loaded_tree", lambda loaded: tree_of(loaded.entries)),
        mock.patch("contextd.session.manager.read_kept", lambda path: None),
        mock.patch.object(store.EntryTree, "keep_cold", lambda tree, path, live_from: None),
    ):
        yield


@contextmanager
def parsed_then_cold() -> Iterator[None]:
    """Loads parse every line (nothing kept beside the file fits), then keep cold entries as lines."""
    with mock.patch("contextd.session.manager.read_kept", lambda path: None):
        yield


@contextmanager
def predictable_ids() -> Iterator[None]:
    """New entries get the same ids in both loads, so their answers compare whole."""
    counter = itertools.count()
    with mock.patch("secrets.token_hex", lambda size: f"{next(counter):0{2 * size}x}"):
        yield


def turn(index: int, shape: int, prompt: int) -> list[Any]:
    """A request, an answer (usage reported or not, reasoning, a failed overflow), a tool
    call and its result, a closing answer: what calibration and the unseen part read."""
    call = f"c{index}"
    request: Any = UserMessage(content=f"request {index}: fix src/f{index}.py " + "word " * 20)
    if shape == 3:
        request = UserMessage(content=[TextContent(text=f"see {index}"), ImageContent(data="aGk=", mimeType="image/png")])
    thinking = [ThinkingContent(thinking="pondering " * 5)] if shape == 1 else []
    # A lone surrogate in free-form arguments is written as an escape pydantic's reader refuses.
    arguments = {"path": f"f{index}", **({"pattern": "\ud800"} if shape == 1 else {})}
    answer = AssistantMessage(
        content=[*thinking, TextContent(text="reading"), ToolCall(id=call, name="read", arguments=arguments)],
        stopReason="toolUse",
        usage=Usage(input=prompt, output=2_000 if thinking else 40, cacheRead=shape * 10) if shape != 2 else None,
        model="claude-opus-4-1" if shape == 4 else None,
    )
    messages: list[Any] = [request, answer, ToolResultMessage(toolCallId=call, toolName="read", content="out " * 30)]
    if shape == 2:
        messages.append(
            AssistantMessage(stopReason="error", errorKind="context_overflow", errorMessage=f"prompt is too long: {prompt + 900} tokens > {1_000_000 + index} maximum")
        )
    messages.append(AssistantMessage(content=[TextContent(text=f"done {index}")], usage=Usage(input=prompt + 80, output=20)))
    return messages


actions = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.integers(0, 4)),
        st.tuples(st.just("compact"), st.just(0)),
        st.tuples(st.just("navigate"), st.integers(0, 10_000)),
        st.tuples(st.just("model"), st.integers(0, 1)),
    ),
    min_size=1,
    max_size=16,
)


async def run(session: LiveSession, script: list[tuple[str, int]]) -> None:
    for index, (action, value) in enumerate(script):
        if action == "turn":
            session.append_messages(turn(index, value, 1_000 + 150 * index))
        elif action == "compact":
            try:
                await session.compact("manual")
            except NothingToCompactError:
                pass
        elif action == "navigate":
            nodes = [entry.id for entry in session.tree.nodes()]
            try:
                await session.navigate(nodes[value % len(nodes)], summarize=value % 3 == 0)
            except NothingToCompactError:
                pass  # a branch with nothing to summarize
        else:
            session.set_model(MODELS[value])


def without_timestamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_timestamps(item) for key, item in value.items() if key not in ("timestamp", "path")}
    if isinstance(value, list):
        return [without_timestamps(item) for item in value]
    return value


def answers(session: LiveSession) -> Any:
    """What a client can ask a session: its context, tree, history entries, stats, state."""
    nodes = [entry.id for entry in session.tree.nodes()]
    return without_timestamps(
        {
            "context": [message.model_dump() for message in session.context_messages()],
            "instructions": session.instructions_text(),
            "tree": session.tree_nodes(),
            "history": get_entries(session, nodes, None, 10**9).model_dump(),
            "stats": session.stats(),
            "state": session.state().model_dump(),
            "name": session.name,
            "pending": session._pending_calls,
            # The walks over every entry, run again over the entries as they are now (a load
            # runs them before its entries go cold).
            "calibration": session._learn().evidence,
            "largest report": {model: largest_report(session.tree.nodes(), model) for model in MODELS},
            "unseen": learn_unseen(session.path, session.entry_tokens, session._pruned_tokens, calibration=1.2),
            "answered": session._answered_context(),
        }
    )


async def navigated(session: LiveSession, target: int, summarize: bool) -> Any:
    nodes = [entry.id for entry in session.tree.nodes()]
    with predictable_ids():
        try:
            result: Any = await session.navigate(nodes[target % len(nodes)], summarize=summarize)
        except NothingToCompactError as error:
            result = str(error)
        session.append_messages(turn(99, 0, 5_000))
    # The calibration states of the nodes left behind were let go after the load, and worked
    # out again from the path for the new nodes: as learned from the whole tree.
    assert session._ledger.evidence == session._learn().evidence
    return without_timestamps(result), answers(session)


def cold_count(session: LiveSession) -> int:
    return sum(1 for entry in session.tree.entries.values() if type(entry) is ColdMessageEntry)


def loads(data_dir: Path, session_id: str, scratch: Path) -> dict[str, LiveSession]:
    """The session loaded as a daemon loads it (cold entries from the records kept beside the
    file when it was closed), loaded with every line parsed and then cold entries kept as
    lines, and loaded fully parsed; each from its own copy of the data directory."""
    loaded = {}
    for way, patched in (("kept records", nullcontext()), ("parsed, then cold", parsed_then_cold()), ("whole", parsed_whole())):
        copy = scratch / way
        shutil.copytree(data_dir, copy)
        with patched:
            loaded[way] = manager(copy).get(session_id)
    assert cold_count(loaded["whole"]) == 0
    return loaded


def same_answers(loaded: dict[str, LiveSession], ask: Callable[[LiveSession], Any]) -> None:
    expected = ask(loaded["whole"])
    for way in ("kept records", "parsed, then cold"):
        assert ask(loaded[way]) == expected, way


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=actions, target=st.integers(0, 10_000), summarize=st.booleans())
def test_a_session_with_cold_entries_answers_as_one_parsed_whole(tmp_path_factory, script, target, summarize):
    data_dir = tmp_path_factory.mktemp("data")
    sessions = manager(data_dir)

    async def written() -> LiveSession:
        session = sessions.create("/ws", model="claude-sonnet-4-6")
        await run(session, script)
        return session

    session = asyncio.run(written())
    went_cold = cold_lines(session)
    sessions.close_all()
    loaded = loads(data_dir, session.session_id, tmp_path_factory.mktemp("scratch"))
    # What went cold in the running daemon (compacted, navigated away from) is what a load
    # keeps cold, each as the very line of the file.
    assert went_cold == cold_lines(loaded["parsed, then cold"]) == cold_lines(loaded["kept records"])
    same_answers(loaded, answers)
    same_answers(loaded, lambda session: asyncio.run(navigated(session, target, summarize)))


def cold_lines(session: LiveSession) -> dict[str, bytes]:
    """Each cold entry's line, checked against the session file's line of that entry."""
    in_file = {json.loads(line)["id"]: line for line in session.file.path.read_bytes().splitlines()[1:]}
    cold = {entry.id: entry.line for entry in session.tree.entries.values() if type(entry) is ColdMessageEntry}
    assert all(line == in_file[entry_id] for entry_id, line in cold.items())
    return cold


def branched_and_compacted(data_dir: Path) -> str:
    """A closed session with a branch left behind and a compaction on its path."""
    sessions = manager(data_dir)

    async def written() -> str:
        session = sessions.create("/ws", model="claude-sonnet-4-6")
        session.append_messages(turn(0, 0, 1_000))
        branch_point = session.leaf_id
        session.append_messages(turn(1, 1, 1_150))
        assert branch_point is not None
        await session.navigate(branch_point)
        for index in range(2, 8):
            session.append_messages(turn(index, index % 5, 1_000 + 150 * index))
        await session.compact("manual")
        session.append_messages(turn(8, 0, 2_300))
        return session.session_id

    session_id = asyncio.run(written())
    sessions.close_all()
    return session_id


def test_entries_before_a_compaction_and_on_other_branches_are_kept_cold(tmp_path):
    session_id = branched_and_compacted(tmp_path / "data")
    loaded = loads(tmp_path / "data", session_id, tmp_path)
    same_answers(loaded, answers)
    cold = loaded["kept records"]
    path_ids = {entry.id for entry in cold.path}
    kept = {item.entry_id for item in cold.context_items()}
    for entry in cold.tree.entries.values():
        if type(entry) is MessageEntry:
            assert entry.id in kept, "a parsed entry outside the live context"
        if entry.id in kept:
            assert type(entry) is not ColdMessageEntry
    off_branch = [entry for entry in cold.tree.entries.values() if entry.id not in path_ids and entry.type == "message"]
    assert off_branch and all(type(entry) is ColdMessageEntry for entry in off_branch)
    assert cold_count(cold) > len(off_branch)  # and the history before the compaction
    assert cold_count(loaded["parsed, then cold"]) == cold_count(cold)


def test_a_real_transcript_with_compactions_loads_cold_and_answers_the_same(tmp_path):
    lines = read_text("codex-knearme-two-compactions.jsonl.gz").splitlines(keepends=True)
    session_id, _ = save(IMPORTERS["codex"](iter(lines)), tmp_path / "data", workspace="/ws", name=None)
    opened = manager(tmp_path / "data")
    opened.get(session_id)
    opened.close_all()  # as a daemon leaves it: the records of its cold entries are kept
    loaded = loads(tmp_path / "data", session_id, tmp_path)
    cold = loaded["kept records"]
    messages = sum(1 for entry in cold.tree.entries.values() if entry.type == "message")
    assert cold_count(cold) > messages / 2  # most of a compacted session is history
    same_answers(loaded, answers)
    same_answers(loaded, lambda session: (session.tokens, session.calibration, session.unseen_tokens))
    entries = len(cold.tree.entries)
    assert lines_parsed(tmp_path / "data", session_id) == entries - cold_count(cold)  # the cold ones are not parsed
    with parsed_then_cold():
        assert lines_parsed(tmp_path / "data", session_id) == entries


def session_file(data_dir: Path, session_id: str) -> Path:
    return next(data_dir.glob(f"workspaces/*/sessions/{session_id}.jsonl"))


def appended_by_another_load(data_dir: Path, session_id: str) -> None:
    """Another daemon appended to the file and was killed before it kept its counts."""
    kept = counts_path(session_file(data_dir, session_id)).read_bytes()
    sessions = manager(data_dir)
    sessions.get(session_id).append_messages(turn(20, 1, 3_000))
    sessions.close_all()
    counts_path(session_file(data_dir, session_id)).write_bytes(kept)


def truncated(data_dir: Path, session_id: str) -> None:
    path = session_file(data_dir, session_id)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-3]))


def torn(data_dir: Path, session_id: str) -> None:
    path = session_file(data_dir, session_id)
    last = path.read_bytes().splitlines(keepends=True)[-1]
    with open(path, "ab") as file:
        file.write(last[: len(last) // 2])


def damaged(text: bytes) -> Callable[[Path, str], None]:
    def damage(data_dir: Path, session_id: str) -> None:
        counts_path(session_file(data_dir, session_id)).write_bytes(text)

    return damage


def shifted(data_dir: Path, session_id: str) -> None:
    """Records kept for the very file, at the wrong positions (a counts file from a bug)."""
    path = counts_path(session_file(data_dir, session_id))
    kept = json.loads(path.read_bytes())
    kept["cold"] = [[position + 1, record] for position, record in kept["cold"]]
    path.write_text(json.dumps(kept))


def foreign_records(data_dir: Path, session_id: str) -> None:
    path = counts_path(session_file(data_dir, session_id))
    kept = json.loads(path.read_bytes())
    kept["cold"] = [[position, [*record[:2], "robot", *record[3:]]] for position, record in kept["cold"]]
    path.write_text(json.dumps(kept))


@pytest.mark.parametrize(
    "change",
    [appended_by_another_load, truncated, torn, damaged(b"{not json"), damaged(b'{"cold": 3}'), shifted, foreign_records],
)
def test_records_kept_for_another_file_or_damaged_are_not_taken(tmp_path, change):
    session_id = branched_and_compacted(tmp_path / "data")
    assert json.loads(counts_path(session_file(tmp_path / "data", session_id)).read_bytes())["cold"]
    change(tmp_path / "data", session_id)
    loaded = loads(tmp_path / "data", session_id, tmp_path)
    same_answers(loaded, answers)
    assert cold_count(loaded["kept records"]) == cold_count(loaded["parsed, then cold"]) > 0
    assert lines_parsed(tmp_path / "data", session_id) >= len(loaded["whole"].tree.entries)  # each line parsed


def lines_parsed(data_dir: Path, session_id: str) -> int:
    """How many entry lines a load of the session parses."""
    parsed = []
    real = store._parse_line
    with mock.patch.object(store, "_parse_line", lambda raw, want_header: parsed.append(not want_header) or real(raw, want_header)):
        sessions = manager(data_dir)
        sessions.get(session_id)
        sessions.close_all()
    return sum(parsed)


BRIEF = ("role", "holds_image", "lost_result")
ANSWER_BRIEF = ("model", "failed", "errorKind", "reasoned")

usages = st.one_of(st.none(), st.builds(Usage, input=st.integers(0, 9), output=st.integers(0, 9), cacheRead=st.integers(0, 9), total=st.one_of(st.none(), st.integers(0, 99))))
user_content = st.one_of(st.text(max_size=5), st.lists(st.sampled_from([TextContent(text="t"), ImageContent(data="aGk=", mimeType="image/png")]), max_size=2))
messages = st.one_of(
    st.builds(UserMessage, content=user_content),
    st.builds(ToolResultMessage, toolCallId=st.just("c"), toolName=st.just("read"), content=st.one_of(user_content, st.just(MISSING_RESULT_TEXT))),
    st.builds(
        AssistantMessage,
        content=st.lists(st.sampled_from([TextContent(text="t"), ThinkingContent(thinking="hm")]), max_size=2),
        usage=usages,
        stopReason=st.sampled_from(["stop", "toolUse", "length", "error", "aborted"]),
        errorKind=st.sampled_from([None, "context_overflow", "rate_limit"]),
        errorMessage=st.sampled_from([None, "prompt is too long: 5 tokens > 9 maximum"]),
        model=st.sampled_from([None, "gpt-5.1"]),
    ),
)


@given(message=messages)
def test_a_cold_entry_reads_as_its_message_where_the_walks_look(message):
    entry = MessageEntry(id="e", parentId="p", message=message)
    cold = ColdMessageEntry(entry, encode_line(entry).rstrip(b"\n"))
    assert isinstance(cold, MessageEntry) and cold == entry and cold.message == message
    assert encode_line(cold) == encode_line(entry)
    assert (cold.id, cold.parentId, cold.type) == (entry.id, entry.parentId, entry.type)
    assert [getattr(cold.brief, name) for name in BRIEF] == [getattr(entry.brief, name) for name in BRIEF]
    if message.role == "assistant":
        assert [getattr(cold.brief, name) for name in ANSWER_BRIEF] == [getattr(message, name) for name in ANSWER_BRIEF]
        usage = cold.brief.usage
        assert (usage and (usage.input, usage.output, usage.cacheRead, usage.cacheWrite, usage.total, usage.context_tokens)) == (
            message.usage and (message.usage.input, message.usage.output, message.usage.cacheRead, message.usage.cacheWrite, message.usage.total, message.usage.context_tokens)
        )
        if message.failed or message.errorKind is not None:
            assert cold.brief.errorMessage == message.errorMessage
