"""The hook's reads of the daemon's mirror, through a real daemon: the compaction before the
agent's newest one, the span's entries a batch at a time, contextd's summary of a span."""

from __future__ import annotations

import pytest
from contextd_client import ContextdClient
from contextd_client.agents import hooks
from contextd_client.agents.hooks import Mirror

from tests.agents.sessions import compacted_session
from tests.client.helpers import long_conversation


async def test_the_hook_finds_the_compaction_before_and_reads_the_span_a_batch_at_a_time(
    client: ContextdClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, first = await compacted_session(client)
    await client.append(session, long_conversation(8))
    second = await client.compact(session)
    mirror = Mirror(client, "codex", "/nowhere/rollout.jsonl", "/work")
    compaction, previous, agent_messages = await mirror.compactions(session, written=2)
    assert compaction is not None and compaction["id"] == second["entryId"]
    assert previous is not None and previous["id"] == first["entryId"]
    monkeypatch.setattr(hooks, "HISTORY_GET_TOKENS", 40)  # a request returns one entry or two
    rows = await mirror.entries(session, agent_messages)
    assert len(agent_messages) > 10 and [row["entryId"] for row in rows] == agent_messages
    assert {row["role"] for row in rows} == {"assistant"}
    earlier = await mirror.summary(session, previous)
    assert earlier is not None and "pytest tests/test_flaky.py" in earlier["summary"]
    assert not await mirror.holds_almost_nothing(session, previous)  # contextd's own summary says much


async def test_before_the_agents_compaction_reaches_the_mirror_the_newest_there_is_the_one_before(
    client: ContextdClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, first = await compacted_session(client)
    monkeypatch.setattr(hooks, "COMPACTION_WAIT_SECONDS", 0.0)
    compaction, previous, _ = await Mirror(client, "codex", "/nowhere/rollout.jsonl", "/work").compactions(session, written=2)
    assert compaction is None and previous is not None and previous["id"] == first["entryId"]
