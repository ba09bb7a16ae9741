"""Pinned instructions over real stdio: set by a client, rendered as the system prompt,
counted in the figure, and still there after any number of compactions and a handoff."""

from __future__ import annotations

from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.support import append_turns

AGENTS_MD = "# AGENTS.md\nAlways run `make check` before committing. Never touch vendor/."
ENVIRONMENT = "<environment_context><cwd>/srv/shop</cwd><shell>zsh</shell></environment_context>"


@pytest.fixture
async def daemon(make_daemon):
    return await make_daemon(settings={"compaction": {"keepRecentTokens": 3_000}, "pruning": {"enabled": False}})


async def set_instructions(daemon, session: str, text: str, source: str | None = None) -> dict[str, Any]:
    params = {"sessionId": session, "text": text}
    if source is not None:
        params["source"] = source
    return await daemon.request("contextd/session/setInstructions", params)


async def context(daemon, session: str, fmt: str = "neutral") -> dict[str, Any]:
    return await daemon.request("contextd/session/context", {"sessionId": session, "format": fmt})


async def test_instructions_are_the_system_prompt_in_every_format(daemon):
    session = (await daemon.open_session())["sessionId"]
    await set_instructions(daemon, session, AGENTS_MD, "AGENTS.md")
    await set_instructions(daemon, session, ENVIRONMENT, "environment")
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": [{"role": "user", "content": "hi"}]})
    system = f"{AGENTS_MD}\n\n{ENVIRONMENT}"

    neutral = await context(daemon, session)
    assert neutral["system"] == system
    assert neutral["messages"] == [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]
    for fmt in ("anthropic", "openai"):
        rendered = await context(daemon, session, fmt)
        assert rendered["system"] == system
        assert all(message["role"] != "system" for message in rendered["messages"]), fmt


async def test_a_source_is_replaced_or_withdrawn_and_the_figure_follows(daemon):
    session = (await daemon.open_session())["sessionId"]
    empty = (await daemon.request("contextd/session/state", {"sessionId": session}))["usage"]["tokens"]
    first = await set_instructions(daemon, session, AGENTS_MD)
    assert first["usage"]["tokens"] > empty + 10  # counted in the figure
    await set_instructions(daemon, session, "Reply in French.")
    assert (await context(daemon, session))["system"] == "Reply in French."
    withdrawn = await set_instructions(daemon, session, "")
    assert "system" not in await context(daemon, session)
    assert withdrawn["usage"]["tokens"] == empty
    tree = await daemon.request("contextd/tree", {"sessionId": session})
    previews = [node["preview"] for node in tree["nodes"] if node["type"] == "instructions"]
    assert previews == [f"instructions (client): {' '.join(AGENTS_MD.split())}", "instructions (client): Reply in French.", "instructions (client): withdrawn"]


async def test_instructions_survive_three_compactions_and_are_never_summarized(daemon):
    session = (await daemon.open_session())["sessionId"]
    await set_instructions(daemon, session, AGENTS_MD, "AGENTS.md")
    for round_ in range(3):
        await append_turns(daemon, session, range(round_ * 8, round_ * 8 + 8))
        compacted = await daemon.request("contextd/compact", {"sessionId": session})
        assert "make check" not in compacted["summary"]  # instructions are not conversation
        rendered = await context(daemon, session)
        assert rendered["system"] == AGENTS_MD, f"after compaction {round_ + 1}"
        assert rendered["messages"][0] == {"role": "system", "content": AGENTS_MD}


async def test_a_handoff_starts_with_the_same_instructions(daemon):
    session = (await daemon.open_session())["sessionId"]
    await set_instructions(daemon, session, AGENTS_MD, "AGENTS.md")
    await append_turns(daemon, session, range(4))
    handed = await daemon.request("contextd/handoff", {"sessionId": session})
    assert (await context(daemon, handed["sessionId"]))["system"] == AGENTS_MD


async def test_bad_instructions_are_refused_naming_the_field_and_store_nothing(daemon):
    session = (await daemon.open_session())["sessionId"]
    before = await daemon.request("contextd/session/state", {"sessionId": session})
    for params in ({"sessionId": session}, {"sessionId": session, "text": 3}, {"sessionId": session, "text": "x", "source": ""}):
        with pytest.raises(JsonRpcException) as raised:
            await daemon.request("contextd/session/setInstructions", params)
        assert raised.value.code == -32602
    after = await daemon.request("contextd/session/state", {"sessionId": session})
    assert after["entries"] == before["entries"]
