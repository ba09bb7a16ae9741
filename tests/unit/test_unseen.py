"""The part of the prompt an agent sends that contextd never sees: learned from the first
report, kept in the figure after a compaction, carried by restarts, forks and handoffs,
relearned by the next stretch's first report."""

from __future__ import annotations

import asyncio
from pathlib import Path
from contextd.importers import IMPORTERS, save
from contextd.model import AssistantMessage, Message, Settings, ThinkingContent, Usage
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store
from contextd.tokens import count_message
from pydantic import TypeAdapter

from tests.corpus import read_text
from tests.factories import assistant, coding_turn, result, user

SYSTEM_PROMPT_TOKENS = 18_000
"""What the agent sends besides the conversation, in these tests (a Claude Code-like size)."""
SETTINGS = Settings.model_validate({"compaction": {"keepRecentTokens": 800, "enabled": False}})
messages_of = TypeAdapter(list[Message]).validate_python


def manager(data_dir: Path) -> SessionManager:
    return SessionManager(Store(data_dir), SETTINGS, SilentEvents())


def reporting(session: LiveSession, turns: range, unseen: int) -> None:
    """Coding turns whose every answer reports the context it was sent plus `unseen`, as a
    provider would (an OpenAI model: counting is exact, so the report is known exactly)."""
    encoding = session.model_info.encoding
    for index in turns:
        for message in messages_of(coding_turn(index)):
            if isinstance(message, AssistantMessage):
                sent = sum(count_message(item.message, encoding) for item in session.context_items())
                message.usage = Usage(input=sent + unseen, output=50)
            session.append_messages([message])


def new_session(data_dir: Path) -> tuple[SessionManager, LiveSession]:
    sessions = manager(data_dir)
    session = sessions.create("/ws", model="gpt-4.1")
    return sessions, session


def test_the_first_report_teaches_the_unseen_part_and_the_figure_keeps_it_after_a_compaction(tmp_path):
    sessions, session = new_session(tmp_path)
    reporting(session, range(6), SYSTEM_PROMPT_TOKENS)
    assert session.unseen_tokens == SYSTEM_PROMPT_TOKENS

    before = session.tokens
    entry = asyncio.run(session.compact("manual"))

    body = session.usage_body()
    assert body["source"] == "counted"
    assert body["breakdown"]["unseen"] == SYSTEM_PROMPT_TOKENS
    assert body["breakdown"]["summary"] > 0
    assert sum(body["breakdown"].values()) == session.tokens == entry.tokensAfter
    counted = body["breakdown"]["instructions"] + body["breakdown"]["summary"] + body["breakdown"]["messages"]
    assert session.tokens == counted + SYSTEM_PROMPT_TOKENS
    assert before - entry.tokensAfter < before - counted  # tokensSaved no longer overstates


def test_restarts_and_forks_keep_the_unseen_part(tmp_path):
    sessions, session = new_session(tmp_path)
    reporting(session, range(4), SYSTEM_PROMPT_TOKENS)
    asyncio.run(session.compact("manual"))
    figure = session.tokens

    sessions.close_all()
    reopened = sessions.get(session.session_id)
    assert reopened.tokens == figure and reopened.unseen_tokens == SYSTEM_PROMPT_TOKENS

    fork = sessions.fork(reopened, reopened.leaf_id)
    assert fork.unseen_tokens == SYSTEM_PROMPT_TOKENS and fork.tokens == figure


def test_a_handoff_carries_the_unseen_part_until_the_new_sessions_first_report(tmp_path):
    sessions, session = new_session(tmp_path)
    reporting(session, range(4), SYSTEM_PROMPT_TOKENS)

    fresh, entry = asyncio.run(sessions.handoff(session, "go on"))

    assert entry.unseenTokens == SYSTEM_PROMPT_TOKENS
    assert fresh.usage_body()["breakdown"]["unseen"] == SYSTEM_PROMPT_TOKENS
    sessions.close_all()
    fresh = sessions.get(fresh.session_id)
    assert fresh.unseen_tokens == SYSTEM_PROMPT_TOKENS
    reporting(fresh, range(10, 11), 9_000)  # the new session's own agent sends less
    assert fresh.unseen_tokens == 9_000


def test_a_new_stretch_relearns_the_unseen_part(tmp_path):
    """Another model, other tools: the first report after a compaction teaches anew."""
    sessions, session = new_session(tmp_path)
    reporting(session, range(4), SYSTEM_PROMPT_TOKENS)
    asyncio.run(session.compact("manual"))
    reporting(session, range(4, 6), 30_000)
    assert session.unseen_tokens == 30_000
    sessions.close_all()
    assert sessions.get(session.session_id).unseen_tokens == 30_000


def test_a_session_that_opens_mid_conversation_learns_nothing(tmp_path):
    """Its first reports hold history contextd never saw: not the agent's own prompt."""
    sessions, session = new_session(tmp_path)
    session.append_messages(messages_of([assistant("carrying on", usage={"input": 90_000, "output": 10})]))
    session.append_messages(messages_of([user("next"), assistant("done", usage={"input": 90_100, "output": 10})]))
    assert session.unseen_tokens == 0


def test_another_model_relearns_the_unseen_part(tmp_path):
    """Another model may come with another system prompt: its first report teaches."""
    sessions, session = new_session(tmp_path)
    reporting(session, range(3), SYSTEM_PROMPT_TOKENS)
    session.set_model("gpt-4o")
    reporting(session, range(3, 5), 25_000)
    assert session.unseen_tokens == 25_000
    sessions.close_all()
    assert sessions.get(session.session_id).unseen_tokens == 25_000


MCP_TOOLS_TOKENS = 12_000
"""Tool schemas an MCP server adds once it has started, mid-session."""


def test_tools_connected_mid_session_are_learned_from_the_report_that_shows_them(tmp_path):
    """The prompt outgrew what contextd saw by the new tools: the unseen part is relearned
    there, not at the next compaction, and the figure after one holds them; a restart
    derives the same."""
    sessions, session = new_session(tmp_path)
    reporting(session, range(3), SYSTEM_PROMPT_TOKENS)
    reporting(session, range(3, 6), SYSTEM_PROMPT_TOKENS + MCP_TOOLS_TOKENS)
    assert session.unseen_tokens == SYSTEM_PROMPT_TOKENS + MCP_TOOLS_TOKENS

    entry = asyncio.run(session.compact("manual"))
    assert session.usage_body()["breakdown"]["unseen"] == SYSTEM_PROMPT_TOKENS + MCP_TOOLS_TOKENS
    sessions.close_all()
    reopened = sessions.get(session.session_id)
    assert reopened.unseen_tokens == SYSTEM_PROMPT_TOKENS + MCP_TOOLS_TOKENS
    assert reopened.tokens == entry.tokensAfter


def test_drift_within_a_stretch_is_not_taken_for_new_tools(tmp_path):
    """Reminders an agent adds to its history and counting's own drift grow the prompt a
    little past the count: a compaction drops them, so they must not enter the unseen part."""
    sessions, session = new_session(tmp_path)
    reporting(session, range(3), SYSTEM_PROMPT_TOKENS)
    reporting(session, range(3, 6), SYSTEM_PROMPT_TOKENS + 1_500)
    assert session.unseen_tokens == SYSTEM_PROMPT_TOKENS


def test_a_report_of_another_conversation_is_not_taken_for_new_tools(tmp_path):
    """Codex's review mode writes the reports of its own, smaller conversation into the
    rollout: the next report of the session's own steps back up past the previous report,
    yet matches the counted context plus the unseen part known (give or take drift, which a
    relearning there would take in)."""
    sessions, session = new_session(tmp_path)
    reporting(session, range(4), SYSTEM_PROMPT_TOKENS)
    session.append_messages(messages_of([user("review this"), assistant("reviewed", usage={"input": 3_000, "output": 10})]))
    reporting(session, range(4, 6), SYSTEM_PROMPT_TOKENS + 1_500)
    assert session.unseen_tokens == SYSTEM_PROMPT_TOKENS


REASONING_TOKENS = 10_000
"""Reasoning a model wrote in a turn and sends back in its later requests (encrypted: the
transcript holds none of it); the provider drops it at the next user message."""


def reasoning_turn(session: LiveSession) -> tuple[int, int]:
    """A request and an answer that reasons (`REASONING_TOKENS` reported as its output, none
    of it in the transcript) and calls a tool, with the result; returns the counted context
    the next request is sent (the answer as the model wrote it) and the reasoning the
    transcript lacks."""
    encoding = session.model_info.encoding

    def sent() -> int:
        return sum(count_message(item.message, encoding) for item in session.context_items())

    session.append_messages(messages_of([user("fix the failing test")]))
    thinking = messages_of([assistant(calls=[("c1", "bash", {"command": "pytest -x"})])])[0]
    assert isinstance(thinking, AssistantMessage)
    thinking.content.insert(0, ThinkingContent(thinking="**Running the tests**"))  # all an agent keeps of it
    thinking.usage = Usage(input=sent() + SYSTEM_PROMPT_TOKENS, output=REASONING_TOKENS)
    session.append_messages([thinking, *messages_of([result("c1", "bash", "1 failed")])])
    lacking = REASONING_TOKENS - count_message(thinking, encoding)
    return sent() + lacking, lacking


def test_reasoning_a_turn_carries_is_not_taken_for_the_unseen_part(tmp_path):
    """A model change in the middle of a turn: the new model's first report holds the turn's
    reasoning, which the answer's reported output tells; it is not part of what the agent
    sends on every request, so the figure after a compaction leaves it out."""
    sessions, session = new_session(tmp_path)
    reporting(session, range(2), SYSTEM_PROMPT_TOKENS)
    carried, _ = reasoning_turn(session)
    session.set_model("gpt-4o")
    session.append_messages(messages_of([assistant("found it", usage={"input": carried + SYSTEM_PROMPT_TOKENS, "output": 40})]))
    assert session.unseen_tokens == SYSTEM_PROMPT_TOKENS

    asyncio.run(session.compact("manual"))
    assert session.usage_body()["breakdown"]["unseen"] == SYSTEM_PROMPT_TOKENS


def test_a_new_turn_drops_the_reasoning_the_last_report_held(tmp_path):
    """The last report of a turn holds the turn's reasoning; the user's next message starts a
    turn without it, so the figure falls by it at once (not only at the next report), the
    same after a restart."""
    sessions, session = new_session(tmp_path)
    reporting(session, range(2), SYSTEM_PROMPT_TOKENS)
    encoding = session.model_info.encoding
    carried, reasoning = reasoning_turn(session)
    done = messages_of([assistant("fixed")])[0]
    done.usage = Usage(input=carried + SYSTEM_PROMPT_TOKENS, output=count_message(done, encoding))
    session.append_messages([done])
    held = session.tokens

    request = messages_of([user("now the docs")])
    session.append_messages(request)
    assert session.tokens == held - reasoning + count_message(request[0], encoding)
    sessions.close_all()
    assert sessions.get(session.session_id).tokens == held - reasoning + count_message(request[0], encoding)


def overflow(prompt: int) -> AssistantMessage:
    """The provider's refusal of a prompt too long, stating its size (GLM's wording)."""
    message = f"Request {prompt} input tokens exceeds the model's maximum context length 202750"
    return AssistantMessage(stopReason="error", errorKind="context_overflow", errorMessage=message)


def sent_tokens(session: LiveSession) -> int:
    return sum(count_message(item.message, session.model_info.encoding) for item in session.context_items())


def test_an_overflow_that_states_the_prompt_teaches_what_reports_of_zeros_could_not(tmp_path):
    # Claude Code in front of GLM writes usage of all zeros: no report teaches the unseen part.
    sessions, session = new_session(tmp_path)
    for index in range(4):
        for message in messages_of(coding_turn(index)):
            if isinstance(message, AssistantMessage):
                message.usage = Usage(input=0, output=0)
            session.append_messages([message])
    assert session.unseen_tokens == 0
    session.append_messages([overflow(sent_tokens(session) + SYSTEM_PROMPT_TOKENS)])
    assert session.unseen_tokens == SYSTEM_PROMPT_TOKENS
    shown = session.tokens
    sessions.close_all()
    # A restart derives the same from the file.
    reloaded = manager(tmp_path).get(session.session_id)
    assert (reloaded.unseen_tokens, reloaded.tokens) == (SYSTEM_PROMPT_TOKENS, shown)


def test_an_overflow_within_drift_of_the_known_unseen_part_changes_nothing(tmp_path):
    _, session = new_session(tmp_path)
    reporting(session, range(4), SYSTEM_PROMPT_TOKENS)
    session.append_messages([overflow(sent_tokens(session) + SYSTEM_PROMPT_TOKENS + 500)])
    assert session.unseen_tokens == SYSTEM_PROMPT_TOKENS


def test_a_real_glm_session_learns_its_unseen_part_from_the_overflow_that_states_it(tmp_path):
    # claude-code-vps-glm47: Claude Code in front of GLM 4.7, whose every report is zeros.
    imported = IMPORTERS["claude-code"](read_text("claude-code-vps-glm47.jsonl.gz").splitlines())
    session_id, _ = save(imported, tmp_path, workspace="/ws", name=None)
    session = manager(tmp_path).get(session_id)
    assert session.unseen_tokens == 0
    counted = session.tokens
    session.append_messages([overflow(counted + 30_000)])
    assert session.unseen_tokens == 30_000
    assert counted + 30_000 <= session.tokens <= counted + 30_000 + 50  # the refusal's own framing
