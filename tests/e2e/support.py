"""What the end-to-end tests share besides conftest's daemons."""

from __future__ import annotations

from typing import Any

from tests.factories import coding_turn


async def append_turns(daemon, session: str, turns: range) -> dict[str, Any]:
    appended: dict[str, Any] = {}
    for turn in turns:
        appended = await daemon.request(
            "contextd/session/append", {"sessionId": session, "messages": coding_turn(turn)}
        )
    return appended
