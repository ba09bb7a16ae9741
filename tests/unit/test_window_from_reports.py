"""A window that is plainly wrong is corrected: when the model took a larger context than
the window contextd assumed, the window is at least that context, so a session that worked
never reads over 100% (a GLM model behind Claude Code read 150,906/128,000, 117.9%)."""

from __future__ import annotations

from pathlib import Path

import pytest
from contextd.importers import IMPORTERS, save
from contextd.model import AssistantMessage, Message, MessageEntry, Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from contextd.tokens.calibration import stated_window
from pydantic import TypeAdapter

from tests.corpus import NAMES, agent_of, read_text
from tests.factories import assistant, user

messages_of = TypeAdapter(list[Message]).validate_python
MANUAL = Settings.model_validate({"compaction": {"enabled": False}})


def test_a_report_larger_than_the_window_raises_it_for_that_model_only(tmp_path: Path) -> None:
    sessions = SessionManager(Store(tmp_path), MANUAL, SilentEvents())
    session = sessions.create("/ws", model="glm-4.7")
    assumed = session.model_info.context_window
    took = assumed + 22_906
    session.append_messages(messages_of([user("go"), assistant("done", usage={"input": took - 100, "output": 100})]))

    body = session.usage_body()
    assert body["contextWindow"] == took and body["percent"] == 100.0
    assert session.threshold_tokens < took  # compaction still starts before the window is full

    sessions.close_all()
    reopened = sessions.get(session.session_id)
    assert reopened.usage_body()["contextWindow"] == took  # derived again from the file

    reopened.set_model("gpt-4.1")  # another model's window is its own
    assert reopened.usage_body()["contextWindow"] != took
    reopened.set_model("glm-4.7")
    assert reopened.usage_body()["contextWindow"] == took


def test_reports_within_the_window_leave_it_alone(tmp_path: Path) -> None:
    session = SessionManager(Store(tmp_path), MANUAL, SilentEvents()).create("/ws", model="glm-4.7")
    assumed = session.model_info.context_window
    session.append_messages(messages_of([user("go"), assistant("done", usage={"input": 5_000, "output": 10})]))
    assert session.usage_body()["contextWindow"] == assumed


def test_a_context_the_model_answered_without_reporting_it_fits_the_window(tmp_path: Path) -> None:
    """A provider that reports zeros (GLM behind Claude Code): the counted context of an
    answer that came back is one the model took."""
    session = SessionManager(Store(tmp_path), MANUAL, SilentEvents()).create("/ws", model="glm-4.7")
    assumed = session.model_info.context_window
    session.append_messages(messages_of([user("word " * (assumed + 5_000)), assistant("read it", usage={})]))
    assert session.tokens > assumed and session.usage_body()["percent"] == 100.0


@pytest.mark.parametrize(
    ("error", "window"),
    [
        ("prompt is too long: 212000 tokens > 200000 maximum", 200_000),
        ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens", 128_000),
        ("Request 182867 input tokens exceeds the model's maximum context length 202750", 202_750),
        ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", 1_048_576),
        ("rate limited, try again", None),
    ],
)
def test_an_overflow_error_states_the_window(error: str, window: int | None) -> None:
    assert stated_window(error) == window


@pytest.mark.parametrize("name", NAMES)
def test_no_corpus_session_that_worked_reads_over_100_percent(tmp_path: Path, name: str) -> None:
    """Every transcript whose last answer came back reads at most 100%; one that ended in an
    overflow has the window its provider stated (claude-code-flow-lock-scheduler: GLM-4.7's
    202,750, where the registry assumed 128,000)."""
    lines = read_text(name).splitlines()
    session_id, _ = save(IMPORTERS[agent_of(name)](lines), tmp_path, workspace="/ws", name=None)
    session = SessionManager(Store(tmp_path), Settings(), SilentEvents()).get(session_id)
    answers = [e.message for e in session.path if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)]
    stated = [stated_window(answer.errorMessage) for answer in answers if answer.failed]
    if answers and not answers[-1].failed:
        assert session.usage_body()["percent"] <= 100.0
    if any(stated):
        assert session.usage_body()["contextWindow"] >= max(window or 0 for window in stated)


def test_a_window_the_user_set_is_their_budget_and_stands(tmp_path: Path) -> None:
    budget = Settings.model_validate(
        {"compaction": {"enabled": False}, "models": {"glm-4.7": {"contextWindow": 20_000}}}
    )
    session = SessionManager(Store(tmp_path), budget, SilentEvents()).create("/ws", model="glm-4.7")
    session.append_messages(messages_of([user("go"), assistant("done", usage={"input": 30_000, "output": 10})]))
    assert session.usage_body()["contextWindow"] == 20_000 and session.usage_body()["percent"] > 100
