"""Idle timers are loop callbacks owned by their session: none outlives it."""

from __future__ import annotations

import asyncio

from contextd.model import Settings, UserMessage
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store

IDLE = Settings.model_validate({"idle": {"enabled": True, "timeoutSeconds": 60, "thresholdTokens": 1}})


def test_closing_every_session_leaves_no_timer_behind(tmp_path):
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        sessions = SessionManager(Store(tmp_path), IDLE, SilentEvents())
        created = []
        for index in range(50):
            session = sessions.create("/ws")
            session.append_messages([UserMessage(content=f"hello {index}")])
            session.touch()
            created.append(session)
        armed = [s._idle_handle for s in created if s._idle_handle is not None]
        assert len(armed) == len(created) and not any(handle.cancelled() for handle in armed)
        sessions.close_all()
        assert all(handle.cancelled() for handle in armed)
        assert all(s._idle_handle is None for s in created)
        live = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        assert live == []

    asyncio.run(scenario())
