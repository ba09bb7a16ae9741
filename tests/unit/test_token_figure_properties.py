"""The token figure of a live session, whatever happened to it.

After any sequence of appends (answers carrying usage, failed answers), compactions, prunes,
navigations and restarts: with no valid answer after the latest compaction/prune on the path,
the figure is the calibrated count of the context the model would be sent plus the part of
the prompt contextd never sees (the first valid report of the latest stretch that had one,
minus the calibrated count of the context that answer was sent); otherwise it is the latest
such answer's usage plus the calibrated count of the context after it. Its breakdown adds up
to it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from contextd.compaction.context import build_context
from contextd.compaction.prune import plan_prune
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    MessageEntry,
    PruneEntry,
    PruningSettings,
    Settings,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from contextd.session import (
    LiveSession,
    NothingToCompactError,
    SessionManager,
    SilentEvents,
)
from contextd.store import Store
from contextd.tokens import count_message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SMALL = Settings.model_validate(
    {"compaction": {"keepRecentTokens": 150, "enabled": False}, "pruning": {"enabled": False}}
)
EAGER_PRUNING = PruningSettings(protectTokens=40, minimumSavings=1)


def manager(data_dir: Path) -> SessionManager:
    return SessionManager(Store(data_dir), SMALL, SilentEvents())


def turn(index: int, calls: int, usage: int | None, failed: bool) -> list[Any]:
    """A request, tool calls with their results, and an answer that may carry usage."""
    ids = [f"t{index}c{n}" for n in range(calls)]
    messages: list[Any] = [UserMessage(content=f"request {index} " + "word " * (10 + 7 * index))]
    if ids:
        messages.append(
            AssistantMessage(
                content=[TextContent(text="looking"), *(ToolCall(id=i, name="read", arguments={"p": i}) for i in ids)],
                stopReason="toolUse",
                usage=Usage(input=usage, output=9) if usage else None,
            )
        )
        messages += [ToolResultMessage(toolCallId=i, toolName="read", content="out " * 60) for i in ids]
    closing = AssistantMessage(
        content=[TextContent(text=f"done {index} " + "x " * index)],
        usage=Usage(input=(usage or 500) + 77, output=21, cacheRead=5) if usage or failed else None,
        stopReason="aborted" if failed else "stop",
    )
    return [*messages, closing]


actions = st.lists(
    st.one_of(
        st.tuples(
            st.just("turn"),
            st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(100, 90_000)), st.booleans()),
        ),
        st.tuples(st.just("navigate"), st.integers(0, 10_000)),
        st.tuples(st.just("compact"), st.just(0)),
        st.tuples(st.just("prune"), st.just(0)),
        st.tuples(st.just("restart"), st.just(0)),
    ),
    min_size=1,
    max_size=16,
)


def expected_unseen(session: LiveSession) -> int:
    """The unseen part by the rule: taught by the first valid report after the session's
    start or after each compaction or prune on the path, the latest teaching standing."""
    path = session.path
    learned, teaching = 0, True
    for index, entry in enumerate(path):
        if isinstance(entry, (CompactionEntry, PruneEntry)):
            teaching = True
        message = entry.message if isinstance(entry, MessageEntry) else None
        if teaching and isinstance(message, AssistantMessage) and message.usage and not message.failed:
            usage = message.usage
            sent = build_context(path[:index], session.entry_tokens)
            counted = sum(count_message(item.message, session.model_info.encoding) for item in sent)
            learned = max(usage.input + usage.cacheRead + usage.cacheWrite - round(counted * session.calibration), 0)
            teaching = False
    return learned


def expected_figure(session: LiveSession) -> tuple[int, str]:
    """The figure by the rule, from the context messages themselves."""
    path = session.path
    anchor_id = None
    for entry in reversed(path):
        if isinstance(entry, (CompactionEntry, PruneEntry)):
            break
        message = entry.message if isinstance(entry, MessageEntry) else None
        if (
            isinstance(message, AssistantMessage)
            and message.usage is not None
            and message.usage.context_tokens > 0
            and not message.failed
        ):
            anchor_id = entry.id
            break
    items = session.context_items()
    encoding = session.model_info.encoding
    calibration = session.calibration
    if anchor_id is None:
        counted = sum(count_message(item.message, encoding) for item in items)
        source = "counted" if session.model_info.exact else "estimated"
        return round(counted * calibration) + expected_unseen(session), source
    position = next(index for index, item in enumerate(items) if item.entry_id == anchor_id)
    anchor = items[position].message
    assert isinstance(anchor, AssistantMessage) and anchor.usage is not None
    after = sum(count_message(item.message, encoding) for item in items[position + 1 :])
    return anchor.usage.context_tokens + round(after * calibration), "usage"


async def play(sessions: SessionManager, session: LiveSession, script: list[tuple[str, Any]]) -> LiveSession:
    for index, (action, value) in enumerate(script):
        if action == "turn":
            calls, usage, failed = value
            session.append_messages(turn(index, calls, usage, failed))
        elif action == "navigate":
            nodes = [entry.id for entry in session.tree.nodes()]
            await session.navigate(nodes[value % len(nodes)])
        elif action == "compact":
            try:
                await session.compact("manual")
            except NothingToCompactError:
                pass
        elif action == "prune":
            plan = plan_prune(session.path, session.entry_tokens, EAGER_PRUNING)
            if plan is not None:
                session.append_node(PruneEntry, entryIds=list(plan.entry_ids), tokensSaved=plan.tokens_saved)
        elif action == "restart":
            session_id = session.session_id
            sessions.close_all()
            session = sessions.get(session_id)
        tokens, source = expected_figure(session)
        assert (session.tokens, session.usage_body()["source"]) == (tokens, source), action
        assert sum(session.usage_body()["breakdown"].values()) == session.tokens
    return session


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=actions, model=st.sampled_from(["claude-sonnet-4-5", "gpt-4o", "my-local-model"]))
def test_the_figure_follows_the_rule_after_anything(tmp_path_factory, script, model):
    data_dir = tmp_path_factory.mktemp("data")
    sessions = manager(data_dir)

    async def scenario() -> tuple[str, int, float]:
        session = sessions.create("/ws", model=model)
        session = await play(sessions, session, script)
        return session.session_id, session.tokens, session.calibration

    session_id, tokens, calibration = asyncio.run(scenario())
    sessions.close_all()
    again = manager(data_dir)
    reloaded = again.get(session_id)
    assert (reloaded.tokens, reloaded.calibration) == (tokens, calibration)
    again.close_all()
