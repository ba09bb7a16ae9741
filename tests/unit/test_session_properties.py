"""Properties of live sessions: navigation, compaction and forks never break the context."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextd.model import (
    AssistantMessage,
    Settings,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from contextd.session import LiveSession, NothingToCompactError, SessionManager, SilentEvents
from contextd.store import Store

SMALL = Settings.model_validate({"compaction": {"keepRecentTokens": 200}, "pruning": {"enabled": False}})


def manager(data_dir: Path) -> SessionManager:
    return SessionManager(Store(data_dir), SMALL, SilentEvents())


def turn(index: int, calls: int) -> list[Any]:
    """A user request, an answer with `calls` tool calls, their results, a closing answer."""
    ids = [f"t{index}c{n}" for n in range(calls)]
    messages: list[Any] = [UserMessage(content=f"request {index}: fix src/file_{index}.py " + "word " * 30)]
    if ids:
        messages.append(
            AssistantMessage(
                content=[TextContent(text="working"), *(ToolCall(id=i, name="read", arguments={"path": f"f{i}"}) for i in ids)],
                stopReason="toolUse",
            )
        )
        messages += [ToolResultMessage(toolCallId=i, toolName="read", content="output " * 40) for i in ids]
    messages.append(AssistantMessage(content=[TextContent(text=f"done {index}")]))
    return messages


def assert_no_orphans(session: LiveSession) -> None:
    called: set[str] = set()
    answered: set[str] = set()
    for message in session.context_messages():
        if isinstance(message, AssistantMessage):
            called.update(call.id for call in message.tool_calls)
        elif isinstance(message, ToolResultMessage):
            assert message.toolCallId in called, "a result without its call"
            answered.add(message.toolCallId)
    assert called == answered, "a call without its result"


actions = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.integers(0, 3)),
        st.tuples(st.just("navigate"), st.integers(0, 10_000)),
        st.tuples(st.just("compact"), st.just(0)),
        st.tuples(st.just("fork"), st.integers(0, 10_000)),
    ),
    min_size=1,
    max_size=14,
)


async def run(session: LiveSession, sessions: SessionManager, script: list[tuple[str, int]]) -> list[LiveSession]:
    touched = [session]
    for index, (action, value) in enumerate(script):
        nodes = [entry.id for entry in session.tree.nodes()]
        if action == "turn":
            session.append_messages(turn(index, value))
        elif action == "navigate":
            await session.navigate(nodes[value % len(nodes)], summarize=value % 2 == 0)
        elif action == "compact":
            try:
                await session.compact("manual")
            except NothingToCompactError:
                pass
        elif action == "fork":
            touched.append(sessions.fork(session, nodes[value % len(nodes)]))
        assert_no_orphans(session)
    return touched


def snapshot(session: LiveSession) -> tuple[Any, ...]:
    return (
        [entry.model_dump() for entry in session.tree.entries.values()],
        session.leaf_id,
        [m.model_dump() for m in session.context_messages()],
        session.tokens,
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=actions)
def test_any_navigation_compaction_and_fork_keeps_the_context_whole(tmp_path_factory, script):
    data_dir = tmp_path_factory.mktemp("data")
    sessions = manager(data_dir)

    async def scenario() -> list[tuple[str, tuple[Any, ...]]]:
        session = sessions.create("/ws")
        touched = await run(session, sessions, script)
        for live in touched:
            assert_no_orphans(live)
        return [(live.session_id, snapshot(live)) for live in touched]

    snapshots = asyncio.run(scenario())
    sessions.close_all()
    reloaded = manager(data_dir)
    for session_id, before in snapshots:
        assert snapshot(reloaded.get(session_id)) == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=actions, target=st.integers(0, 10_000))
def test_navigating_away_and_back_restores_the_context(tmp_path_factory, script, target):
    sessions = manager(tmp_path_factory.mktemp("data"))

    async def scenario() -> None:
        session = sessions.create("/ws")
        await run(session, sessions, [step for step in script if step[0] != "fork"])
        home = session.leaf_id
        before = [m.model_dump() for m in session.context_messages()]
        nodes = [entry.id for entry in session.tree.nodes()]
        await session.navigate(nodes[target % len(nodes)])
        await session.navigate(home)
        assert [m.model_dump() for m in session.context_messages()] == before

    asyncio.run(scenario())
    sessions.close_all()


def test_the_default_threshold_fits_any_window():
    from contextd.tokens.context_size import context_threshold

    assert context_threshold(200_000, Settings()) == 200_000 - 30_000
    assert context_threshold(100_000, Settings()) == 100_000 - 16_384
    assert context_threshold(8_000, Settings()) == 4_000  # the 16,384 reserve would go negative
