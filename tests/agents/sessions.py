"""Sessions the history tests build through a real daemon."""

from __future__ import annotations

from typing import Any

from contextd_client import ContextdClient

from tests.client.helpers import long_conversation, tool_turn, user


async def compacted_session(client: ContextdClient) -> tuple[str, dict[str, Any]]:
    """A session whose early tool output (the word `quokkaline`) a compaction folded away."""
    session = (await client.session_open(name="history"))["sessionId"]
    early = [user("Run the flaky test please."), *tool_turn(
        "call_t", "bash", {"command": "pytest tests/test_flaky.py"},
        "FAILED tests/test_flaky.py::test_quokkaline - AssertionError: 41 != 42",
    )]
    await client.append(session, [*early, *long_conversation(8)])
    compaction = await client.compact(session)
    await client.append(session, [user("Now look at the harbour migration.")])
    return session, compaction
