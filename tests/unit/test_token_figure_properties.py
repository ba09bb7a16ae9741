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
    ThinkingContent,
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
    # Odd turns reason (a thinking block, as agents keep a summary of it) and report 300 more
    # output than their answers hold: a new turn drops it.
    reasoning = [ThinkingContent(thinking="planning")] if index % 2 else []
    if ids:
        messages.append(
            AssistantMessage(
                content=[*reasoning, TextContent(text="looking"), *(ToolCall(id=i, name="read", arguments={"p": i}) for i in ids)],
                stopReason="toolUse",
                usage=Usage(input=usage, output=9 + 300 * len(reasoning)) if usage else None,
            )
        )
        messages += [ToolResultMessage(toolCallId=i, toolName="read", content="out " * 60) for i in ids]
    closing = AssistantMessage(
        content=[*reasoning, TextContent(text=f"done {index} " + "x " * index)],
        usage=Usage(input=(usage or 500) + 77, output=21 + 300 * len(reasoning), cacheRead=5) if usage or failed else None,
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
    start or after each compaction or prune on the path, and anew by a later report whose
    prompt outgrew both the previous report plus what was counted since and the counted
    context plus the unseen part known, by more than 15% of it and 2,000 tokens; the latest
    teaching standing."""
    path, calibration = session.path, session.calibration
    learned, teaching, previous, since = 0, True, None, 0
    for index, entry in enumerate(path):
        if isinstance(entry, (CompactionEntry, PruneEntry)):
            teaching, previous = True, None
        message = entry.message if isinstance(entry, MessageEntry) else None
        if not (isinstance(message, AssistantMessage) and message.usage and message.usage.context_tokens and not message.failed):
            since += count_message(message, session.model_info.encoding) if message is not None else 0
            continue
        usage = message.usage
        prompt = usage.input + usage.cacheRead + usage.cacheWrite
        sent = round(sent_tokens(session, index) * calibration)
        margin = max(0.15 * prompt, 2_000)
        grew = previous is not None and prompt - (previous + round(since * calibration)) > margin
        if teaching or (grew and prompt - (sent + learned) > margin):
            learned, teaching = max(prompt - sent, 0), False
        previous, since = usage.context_tokens, 0
    return learned


def sent_tokens(session: LiveSession, index: int) -> int:
    """The counted context the answer at `index` of the path was sent: an answer of the turn
    under way (after the last user message, compaction or prune) as at least its output."""
    path = session.path[:index]
    turn_start = max(
        (i for i, entry in enumerate(path) if isinstance(entry, (CompactionEntry, PruneEntry))
         or (isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage))),
        default=-1,
    )
    in_turn = {entry.id for entry in path[turn_start + 1 :]}
    total = 0
    for item in build_context(path, session.entry_tokens):
        counted = count_message(item.message, session.model_info.encoding)
        message = item.message
        if item.entry_id in in_turn and reasoned(message):
            counted = max(counted, round(message.usage.output / session.calibration))
        total += counted
    return total


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
    reported = anchor.usage.context_tokens
    if any(isinstance(item.message, UserMessage) for item in items[position + 1 :]):
        reported -= turn_reasoning(session, [entry.id for entry in path].index(anchor_id) + 1)
    return reported + round(after * calibration), "usage"


def reasoned(message: Any) -> bool:
    """A valid answer with usage that holds a thinking block."""
    return (
        isinstance(message, AssistantMessage)
        and message.usage is not None
        and message.usage.context_tokens > 0
        and not message.failed
        and any(isinstance(block, ThinkingContent) for block in message.content)
    )


def turn_reasoning(session: LiveSession, end: int) -> int:
    """The reasoning the turn ending at `path[end - 1]` carried, which a new turn drops: each
    valid answer's reported output beyond its counted tokens (calibrated), back to the
    turn's user message, compaction or prune."""
    total = 0
    for entry in reversed(session.path[:end]):
        if isinstance(entry, (CompactionEntry, PruneEntry)) or (
            isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)
        ):
            break
        message = entry.message if isinstance(entry, MessageEntry) else None
        if reasoned(message):
            counted = count_message(message, session.model_info.encoding)
            total += max(message.usage.output - round(counted * session.calibration), 0)
    return total


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
