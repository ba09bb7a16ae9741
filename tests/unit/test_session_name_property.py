"""A session's name, kept as the path grows instead of derived on every append, is the
name its path gives after anything: appends, renames, navigation, forks and restarts.

The rule: the latest `session_info` on the path (after a fork's point, for a fork),
else the header's name.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from contextd.model import AssistantMessage, SessionInfoEntry, Settings, TextContent, UserMessage
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

actions = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.integers(1, 3)),
        st.tuples(st.just("rename"), st.sampled_from(["alpha", "beta", "gamma"])),
        st.tuples(st.just("navigate"), st.integers(0, 10_000)),
        st.tuples(st.just("fork"), st.integers(0, 10_000)),
        st.tuples(st.just("restart"), st.just(0)),
    ),
    min_size=1,
    max_size=14,
)


def name_by_rule(session: LiveSession) -> str | None:
    parent = session.header.parentSession
    path_ids = [entry.id for entry in session.path]
    start = path_ids.index(parent.entryId) + 1 if parent and parent.entryId in path_ids else 0
    names = [entry.name for entry in session.path[start:] if isinstance(entry, SessionInfoEntry)]
    return names[-1] if names else session.header.name


async def play(sessions: SessionManager, session: LiveSession, script: list[tuple[str, Any]]) -> None:
    for index, (action, value) in enumerate(script):
        nodes = [entry.id for entry in session.tree.nodes()]
        if action == "turn":
            messages: list[Any] = [UserMessage(content=f"request {index}"), AssistantMessage(content=[TextContent(text="ok")])]
            session.append_messages(messages[:value])
        elif action == "rename":
            session.append_node(SessionInfoEntry, name=value)
        elif action == "navigate":
            await session.navigate(nodes[value % len(nodes)])
        elif action == "fork":
            session = sessions.fork(session, nodes[value % len(nodes)])
        elif action == "restart":
            session_id = session.session_id
            sessions.close_all()
            session = sessions.get(session_id)
        assert session.name == name_by_rule(session), action


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=actions, first_name=st.sampled_from([None, "named"]))
def test_the_name_is_the_paths_after_anything(tmp_path_factory, script, first_name):
    data_dir: Path = tmp_path_factory.mktemp("data")
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    asyncio.run(play(sessions, sessions.create("/ws", name=first_name), script))
    sessions.close_all()
