"""The store: files round-trip to the same tree, and survive being cut at any byte."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextd.model import (
    AssistantMessage,
    LabelEntry,
    LeafEntry,
    Settings,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from contextd.session import SessionManager, SilentEvents
from contextd.store import (
    EntryTree,
    InvalidSessionId,
    SessionLocked,
    Store,
    check_session_id,
    parse_session_bytes,
)



def manager(data_dir: Path) -> SessionManager:
    return SessionManager(Store(data_dir), Settings(), SilentEvents())


words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)

operations = st.lists(
    st.one_of(
        st.tuples(st.just("user"), words),
        # A tool call's arguments are free-form: a lone surrogate there (as JSON can send one:
        # a high one, never followed by a low one, with which it would read as a pair) is stored.
        st.tuples(st.just("tool_turn"), st.tuples(words, st.text(alphabet=st.sampled_from("a é😀\ud800"), max_size=6))),
        st.tuples(st.just("move_leaf"), st.integers(min_value=0, max_value=10_000)),
        st.tuples(st.just("label"), words),
    ),
    min_size=1,
    max_size=25,
)


def apply(session, operation: tuple[str, Any], counter: list[int]) -> None:
    kind, value = operation
    counter[0] += 1
    if kind == "user":
        session.append_messages([UserMessage(content=value or "hi")])
    elif kind == "tool_turn":
        call_id = f"call-{counter[0]}"
        text, argument = value
        session.append_messages(
            [
                AssistantMessage(
                    content=[TextContent(text=text), ToolCall(id=call_id, name="read", arguments={"p": argument})],
                    stopReason="toolUse",
                ),
                ToolResultMessage(toolCallId=call_id, toolName="read", content=text),
            ]
        )
    elif kind == "move_leaf":
        nodes = [entry.id for entry in session.tree.nodes()]
        session.append_annotation(LeafEntry, targetId=nodes[value % len(nodes)])
    elif kind == "label":
        session.append_annotation(LabelEntry, targetId=session.leaf_id, label=value or None)


def snapshot(session) -> tuple[Any, ...]:
    return (
        {k: v.model_dump() for k, v in session.tree.entries.items()},
        session.leaf_id,
        dict(session.tree.labels),
        [m.model_dump() for m in session.context_messages()],
        session.tokens,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_any_sequence_of_appends_round_trips_through_disk(tmp_path_factory, ops):
    data_dir = tmp_path_factory.mktemp("data")
    sessions = manager(data_dir)
    session = sessions.create("/ws")
    counter = [0]
    for operation in ops:
        apply(session, operation, counter)
    before = snapshot(session)
    session_id = session.session_id
    sessions.close_all()

    reloaded = manager(data_dir).get(session_id)
    assert snapshot(reloaded) == before


def write_sample_session(data_dir: Path) -> tuple[Path, list[str]]:
    sessions = manager(data_dir)
    session = sessions.create("/ws", name="sample")
    for index in range(6):
        session.append_messages([UserMessage(content=f"message {index} with ünïcode ✓")])
    session.append_annotation(LabelEntry, targetId=session.leaf_id, label="here")
    path = session.file.path
    ids = list(session.tree.entries)
    sessions.close_all()
    return path, ids


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(min_value=0, max_value=1))
def test_a_file_cut_at_any_byte_loads_its_valid_prefix(tmp_path_factory, fraction):
    data_dir = tmp_path_factory.mktemp("data")
    path, ids = write_sample_session(data_dir)
    data = path.read_bytes()
    cut = int(len(data) * fraction)
    path.write_bytes(data[:cut])

    complete_lines = data[:cut].count(b"\n")
    expected_entries = max(0, complete_lines - 1)  # line 1 is the header

    sessions = manager(data_dir)
    session = sessions.get(path.stem)
    loaded_ids = list(session.tree.entries)
    assert loaded_ids[: len(ids)] == ids[: len(loaded_ids)]
    assert len(loaded_ids) >= expected_entries  # a last line that lost only its newline still counts
    assert len(loaded_ids) <= expected_entries + 1

    # The session stays writable, and what it writes now reads back.
    entry_ids = session.append_messages([UserMessage(content="after the crash")])
    sessions.close_all()
    again = manager(data_dir).get(path.stem)
    assert entry_ids[0] in again.tree.entries
    assert again.leaf_id == entry_ids[0]


def test_a_torn_tail_is_set_aside_not_dropped(tmp_path):
    path, _ = write_sample_session(tmp_path)
    with open(path, "ab") as handle:
        handle.write(b'{"type":"message","id":"torn","parentId":nu')
    manager(tmp_path).get(path.stem)
    aside = path.with_name(path.name + ".torn")
    assert b'"id":"torn"' in aside.read_bytes()
    assert path.read_bytes().endswith(b"\n")


def test_a_corrupt_middle_line_is_skipped_and_kept(tmp_path):
    path, ids = write_sample_session(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, b"this is not json\n")
    path.write_bytes(b"".join(lines))
    session = manager(tmp_path).get(path.stem)
    assert list(session.tree.entries) == ids
    assert b"this is not json" in path.read_bytes()
    assert parse_session_bytes(path.read_bytes()).bad_lines == [4]


def test_the_lock_names_the_holder(tmp_path):
    path, _ = write_sample_session(tmp_path)
    store = Store(tmp_path)
    listing = store.find_session(path.stem)
    held, _ = store.open(listing)
    with pytest.raises(SessionLocked) as locked:
        # flock locks are per open file description: a second open in this process conflicts too.
        store.open(listing)
    assert locked.value.pid is not None
    held.close()
    store.open(listing)[0].close()


@pytest.mark.parametrize("bad", ["", "..", "../x", "a/b", "a\x00b", "-lead", "x" * 129, "é"])
def test_session_ids_cannot_name_paths(bad):
    with pytest.raises(InvalidSessionId):
        check_session_id(bad)


def bounded_manager(data_dir: Path, **storage: int) -> SessionManager:
    return SessionManager(Store(data_dir), Settings.model_validate({"storage": storage}), SilentEvents())


def test_eviction_reloads_transparently(tmp_path):
    sessions = bounded_manager(tmp_path, maxLoadedSessions=2)
    created = []
    for _ in range(4):
        session = sessions.create("/ws")
        session.append_messages([UserMessage(content=f"hi {session.session_id}")])
        created.append(session)
    assert len(sessions.loaded()) == 2
    first = sessions.get(created[0].session_id)
    assert first is not created[0]
    assert first.context_messages()[-1].content == f"hi {created[0].session_id}"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | words,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
    max_leaves=8,
)
ids = st.none() | words
messages = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": words | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": words}), max_size=2)}),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": st.lists(st.fixed_dictionaries({"type": st.just("toolCall"), "id": words, "name": words, "arguments": st.dictionaries(words, json_values, max_size=2)}), max_size=2)},
        optional={"usage": st.dictionaries(st.sampled_from(["input", "output", "cacheRead", "total"]), st.integers(min_value=-2, max_value=10**6)), "stopReason": st.sampled_from(["stop", "toolUse", "error", "bogus"])},
    ),
    st.fixed_dictionaries({"role": st.just("toolResult"), "toolCallId": words, "toolName": words, "content": words}, optional={"isError": json_values}),
)
valid_entries = st.one_of(
    st.fixed_dictionaries({"type": st.just("message"), "id": words, "parentId": ids, "message": messages}, optional={"timestamp": words}),
    st.fixed_dictionaries({"type": st.just("label"), "id": words, "parentId": ids, "targetId": words, "label": ids}),
    st.fixed_dictionaries({"type": st.just("leaf"), "id": words, "parentId": ids, "targetId": ids}),
    st.fixed_dictionaries({"type": st.just("prune"), "id": words, "parentId": ids, "entryIds": st.lists(words, max_size=2), "tokensSaved": st.integers()}),
)


@st.composite
def entry_like(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly entries as written, some with a field dropped, changed or added."""
    entry = dict(draw(valid_entries))
    change = draw(st.sampled_from(["none", "none", "drop", "set", "add"]))
    if change == "drop":
        del entry[draw(st.sampled_from(sorted(entry)))]
    elif change in ("set", "add"):
        key = draw(st.sampled_from(sorted(entry))) if change == "set" else draw(words)
        entry[key] = draw(json_values)
    return entry


def reference_parse(raw: bytes) -> Any:
    """How lines were read before the store parsed them with pydantic's JSON reader."""
    import json

    from pydantic import ValidationError

    from contextd.store import ENTRY_ADAPTER

    try:
        return ENTRY_ADAPTER.validate_python(json.loads(raw))
    except (ValueError, ValidationError, RecursionError):
        return None


@settings(max_examples=300, deadline=None)
@given(entry=entry_like(), cut=st.integers(min_value=0, max_value=400), padded=st.booleans())
def test_a_line_reads_as_json_loads_then_validation_would_read_it(entry, cut, padded):
    """Whole, cut short or padded with blanks, a line gives the entry (or nothing) that
    json.loads and validating its dicts gave."""
    import json

    line = json.dumps(entry).encode()
    for raw in (line, line[:cut], b"  " + line + b" \r\n" if padded else line + b"\n"):
        parsed = parse_session_bytes(b'{"type":"session","version":1,"id":"s","workspace":"/w"}\n' + raw)
        expected = reference_parse(raw) if raw.strip() else None
        assert [dumped(line) for line in parsed.entries] == ([dumped(expected)] if expected is not None else [])


def dumped(entry: Any) -> dict[str, Any]:
    """An entry's fields but a timestamp the line lacked (each read stamps it anew)."""
    return entry.model_dump(exclude={"timestamp"})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    appends=st.lists(st.tuples(st.integers(min_value=0, max_value=3), st.integers(min_value=1, max_value=5)), max_size=20),
    max_entries=st.integers(min_value=1, max_value=16),
)
def test_memory_holds_at_most_max_loaded_entries_and_unloaded_sessions_come_back_whole(tmp_path_factory, appends, max_entries):
    """Whatever is appended where, the sessions in memory hold at most `maxLoadedEntries`
    entries (or only the session in use is left), and a session unloaded reads back as it was."""
    sessions = bounded_manager(tmp_path_factory.mktemp("data"), maxLoadedEntries=max_entries)
    ids = [sessions.create("/ws").session_id for _ in range(4)]
    written: dict[str, list[str]] = {session_id: [] for session_id in ids}
    for number, (which, count) in enumerate(appends):
        session = sessions.get(ids[which])
        texts = [f"message {number}.{index}" for index in range(count)]
        session.append_messages([UserMessage(content=text) for text in texts])
        written[ids[which]] += texts
        sessions.get(ids[which])  # the next request notices the growth
        loaded = sessions.loaded()
        assert sum(len(live.tree.entries) for live in loaded) <= max_entries or [live.session_id for live in loaded] == [ids[which]]
    for session_id, texts in written.items():
        assert [message.content for message in sessions.get(session_id).context_messages()] == texts
    sessions.close_all()


def test_sessions_reloaded_in_turn_beyond_max_loaded_entries_are_freed_each_time(tmp_path):
    """More sessions in use than maxLoadedEntries holds: every request reloads one and
    unloads another. What leaves memory is freed, however often: a session refers to itself
    and a load's objects skip the collector's young passes, so without contextd's own pass
    every reload stayed in memory (a shared daemon grew to 10 GB). Automatic collection is
    off here, so only contextd's own passes count."""
    sessions = bounded_manager(tmp_path, maxLoadedEntries=20)
    ids = []
    for _ in range(4):
        session = sessions.create("/ws")
        session.append_messages([UserMessage(content=f"message {index}") for index in range(9)])
        ids.append(session.session_id)
    collecting = gc.isenabled()
    gc.disable()
    try:
        for _ in range(10):
            for session_id in ids:
                sessions.get(session_id).append_messages([UserMessage(content="one more")])
        trees = sum(isinstance(thing, EntryTree) for thing in gc.get_objects())
    finally:
        if collecting:
            gc.enable()
    assert trees <= len(ids)
    sessions.close_all()


def test_a_session_leaving_memory_is_freed_at_once_without_a_pass_of_the_collector(tmp_path):
    """Unloaded or closed, a reloaded session (its calibration learned, its hand-off set)
    is freed as its last reference goes: nothing of it waits for the cyclic collector."""
    sessions = manager(tmp_path)
    session = sessions.create("/ws")
    session.append_messages([UserMessage(content=f"message {index}") for index in range(5)])
    session_id = session.session_id
    del session
    collecting = gc.isenabled()
    gc.disable()
    try:
        for leave in (sessions.unload, sessions.close):
            reloaded = sessions.get(session_id)
            reloaded.append_messages([AssistantMessage(content=[TextContent(text="done")], usage=Usage(input=9, output=2))])
            assert reloaded.hand_off is not None
            session_left, tree_left = weakref.ref(reloaded), weakref.ref(reloaded.tree)
            del reloaded
            assert leave(session_id)
            assert session_left() is None and tree_left() is None
    finally:
        if collecting:
            gc.enable()


def test_loaded_entries_share_their_field_names_and_dump_copy_and_compare_as_freshly_read(tmp_path):
    """A session's parsed entries share pydantic's sets of given field names (most of a
    parsed entry's memory beyond its text): every reading of them is as before."""
    from contextd.model import MessageEntry, SharedFieldNames
    from contextd.store import ENTRY_ADAPTER, encode_line

    sessions = manager(tmp_path)
    session = sessions.create("/ws")
    for index in range(3):
        apply(session, ("user", f"request {index}"), [index])
        apply(session, ("tool_turn", (f"reading {index}", "a")), [index])
        session.append_messages([AssistantMessage(content=[TextContent(text="done")], usage=Usage(input=9, output=2))])
    appended = [entry for entry in session.tree.entries.values() if isinstance(entry, MessageEntry)]
    session_id = session.session_id
    sessions.close_all()
    lines = {line.split(b'"id":"')[1][:8].decode(): line for line in session.file.path.read_bytes().splitlines()[1:]}
    loaded = [entry for entry in manager(tmp_path).get(session_id).tree.entries.values() if isinstance(entry, MessageEntry)]
    for entry, was_read in [(entry, False) for entry in appended] + [(entry, True) for entry in loaded]:
        fresh = ENTRY_ADAPTER.validate_json(lines[entry.id])
        models = [entry, entry.message, *([] if isinstance(entry.message.content, str) else entry.message.content)]
        assert all(type(model.__pydantic_fields_set__) is SharedFieldNames for model in models)
        assert entry == fresh
        if was_read:  # those appended were given fewer fields than a line holds
            assert entry.model_dump(exclude_unset=True) == fresh.model_dump(exclude_unset=True)
        assert encode_line(entry) == lines[entry.id] + b"\n"
        copied = entry.model_copy(update={"parentId": "other"})
        assert copied.parentId == "other" and entry.parentId != "other" and "parentId" in entry.model_fields_set
    shapes = {(type(entry.message), frozenset(entry.message.model_fields_set)) for entry in loaded}
    assert len({id(entry.message.__pydantic_fields_set__) for entry in loaded}) == len(shapes)  # one set per shape


def test_a_listing_looks_at_a_file_without_keeping_its_entries_and_shows_the_loaded_row(tmp_path):
    """A listing reads a file for its row and lets it go: its entries are neither kept cold
    nor made to share their field names (work that pays only for a session kept)."""
    import asyncio

    from contextd.model import ColdMessageEntry, MessageEntry, Usage
    from contextd.session.manager import summary_of

    small = Settings.model_validate({"compaction": {"keepRecentTokens": 150}, "pruning": {"enabled": False}})
    sessions = SessionManager(Store(tmp_path), small, SilentEvents())

    async def compacted() -> str:
        session = sessions.create("/ws")
        for index in range(6):
            answer = AssistantMessage(content=[TextContent(text="done " * 40)], usage=Usage(input=120 * index + 60, output=45))
            session.append_messages([UserMessage(content=f"request {index} " * 40), answer])
        await session.compact("manual")
        return session.session_id

    session_id = asyncio.run(compacted())
    sessions.close_all()
    listing = sessions.store.find_session(session_id)
    glanced = [entry for entry in sessions.peek(listing).tree.entries.values() if entry.type == "message"]
    assert glanced and all(type(entry) is MessageEntry and type(entry.__pydantic_fields_set__) is set for entry in glanced)
    loaded = sessions.get(session_id)
    assert any(type(entry) is ColdMessageEntry for entry in loaded.tree.entries.values())
    assert sessions.summarize_file(listing) == summary_of(loaded)
    sessions.close_all()
