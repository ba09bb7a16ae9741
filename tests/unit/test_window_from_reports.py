"""A window that is plainly wrong is corrected: when the model took a larger context than
the window contextd assumed, the window is at least that context, so a session that worked
never reads over 100% (a GLM model behind Claude Code read 150,906/128,000, 117.9%)."""

from __future__ import annotations

from pathlib import Path

from contextd.model import Message, Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from pydantic import TypeAdapter

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
