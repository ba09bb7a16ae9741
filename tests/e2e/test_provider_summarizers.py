"""The daemon compacting through the official Anthropic and OpenAI SDKs, pointed at a local
server that speaks their APIs: successes, rate limits, outages, timeouts, garbage, cancels."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.factories import coding_turn
from tests.summarizers.fake_provider import FakeProvider, Reply

SECRET = "sk-test-0123456789abcdef-never-show-me"

PROVIDERS = ["anthropic", "openai"]


@pytest.fixture
def provider():
    fake = FakeProvider(key=SECRET)  # refuses a request without the key, as the APIs do
    fake.start()
    yield fake
    fake.stop()


def settings_for(name: str, fake: FakeProvider, **summarizer: Any) -> dict[str, Any]:
    base = fake.url if name == "anthropic" else fake.openai_url
    return {
        "compaction": {"keepRecentTokens": 3_000},
        "summarizer": {
            "provider": name,
            "model": "test-model",
            "baseUrl": base,
            "apiKeyEnv": "CONTEXTD_TEST_KEY",
            "maxRetries": 2,
            "timeoutSeconds": 5,
            **summarizer,
        },
    }


async def session_with_history(make_daemon, settings: dict[str, Any]):
    daemon = await make_daemon(settings=settings, env={"CONTEXTD_TEST_KEY": SECRET, "PATH": "/usr/bin:/bin"})
    opened = await daemon.open_session()
    for turn in range(8):
        await daemon.request("contextd/session/append", {"sessionId": opened["sessionId"], "messages": coding_turn(turn)})
    return daemon, opened["sessionId"], Path(opened["path"])


def assert_secret_never_shown(daemon, path: Path, *texts: str) -> None:
    shown = json.dumps(daemon.notifications) + path.read_text() + "".join(texts)
    assert SECRET not in shown


@pytest.mark.parametrize("name", PROVIDERS)
async def test_success_after_a_rate_limit(make_daemon, provider, name):
    provider.default = Reply.with_summary("## Goal\nShip the parser.")
    provider.script(Reply.error(429, "slow down"))
    daemon, session, path = await session_with_history(make_daemon, settings_for(name, provider))
    compacted = await daemon.request("contextd/compact", {"sessionId": session})
    assert compacted["summary"].startswith("## Goal\nShip the parser.")
    assert compacted["summarizer"] == {"provider": name, "model": "test-model"}
    sent = provider.requests[-1]
    assert sent.path.endswith("/messages" if name == "anthropic" else "/chat/completions")
    assert any(value.endswith(SECRET) for value in sent.headers.values())  # the key from the env var
    assert len(provider.requests) >= 2  # the 429 was retried
    assert_secret_never_shown(daemon, path)


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize(
    "reply, words",
    [
        (Reply.error(500, f"upstream exploded for key {SECRET}"), "500"),
        (Reply.raw(b"{this is not json"), "malformed"),
        (Reply.hang(30), "5s"),
    ],
    ids=["500-until-exhausted", "malformed-body", "timeout"],
)
async def test_failures_leave_the_session_untouched(make_daemon, provider, name, reply, words):
    provider.default = reply
    daemon, session, path = await session_with_history(
        make_daemon, settings_for(name, provider, maxRetries=1, timeoutSeconds=1 if words == "5s" else 5)
    )
    size = path.stat().st_size
    error = await daemon.error_of("contextd/compact", {"sessionId": session})
    assert error.code == -32006
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, timeout=30)
    assert finished["outcome"] == "failed"
    assert name in finished["error"]
    assert path.stat().st_size == size
    assert_secret_never_shown(daemon, path, error.message, finished["error"])


@pytest.mark.parametrize("name", PROVIDERS)
async def test_cancellation_mid_request(make_daemon, provider, name):
    provider.default = Reply.hang(30)
    daemon, session, path = await session_with_history(make_daemon, settings_for(name, provider))
    size = path.stat().st_size
    running = asyncio.ensure_future(
        daemon.client.protocol.send_request_async("contextd/compact", {"sessionId": session}, msg_id="slow")
    )
    await provider.wait_for_requests(1)
    daemon.notify("$/cancelRequest", lsp.CancelParams(id="slow"))
    with pytest.raises(JsonRpcException) as raised:
        await asyncio.wait_for(running, 10)
    assert raised.value.code == -32800
    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session)
    assert finished["outcome"] == "cancelled"
    assert path.stat().st_size == size


async def test_a_missing_key_names_the_variable(make_daemon, provider):
    daemon = await make_daemon(settings=settings_for("anthropic", provider, apiKeyEnv="CONTEXTD_NO_SUCH_KEY"))
    opened = await daemon.open_session()
    for turn in range(8):
        await daemon.request("contextd/session/append", {"sessionId": opened["sessionId"], "messages": coding_turn(turn)})
    error = await daemon.error_of("contextd/compact", {"sessionId": opened["sessionId"]})
    assert error.code == -32006 and "CONTEXTD_NO_SUCH_KEY" in error.message
    assert provider.requests == []


async def test_fallback_to_offline_when_the_provider_is_down(make_daemon, provider):
    provider.default = Reply.error(503, "overloaded")
    daemon, session, _ = await session_with_history(
        make_daemon, settings_for("openai", provider, maxRetries=0, fallback=["offline"])
    )
    compacted = await daemon.request("contextd/compact", {"sessionId": session})
    assert compacted["summarizer"]["provider"] == "offline"
    assert "## Goal" in compacted["summary"]


async def test_a_free_text_summary_reaches_the_model_again_with_the_order_to_carry_it(make_daemon, provider):
    # A model that answers in free text (as Claude Code's and Codex's own summaries are): the
    # next compaction and a handoff both hand that text to the model, never drop it.
    free_text = "The user is moving the cache to Redis and asked never to drop the old keys."
    provider.default = Reply.with_summary(free_text)
    daemon, session, _ = await session_with_history(make_daemon, settings_for("anthropic", provider))
    first = await daemon.request("contextd/compact", {"sessionId": session})
    assert first["summary"].startswith(free_text)

    asked = len(provider.requests)
    await daemon.request("contextd/handoff", {"sessionId": session})
    handoff = provider.requests[asked].body
    assert free_text in handoff["messages"][0]["content"], "the summary in the context handed off"
    assert "carry its facts forward" in " ".join(handoff["system"].split())

    for turn in range(8, 12):
        await daemon.request("contextd/session/append", {"sessionId": session, "messages": coding_turn(turn)})
    asked = len(provider.requests)
    await daemon.request("contextd/compact", {"sessionId": session})
    # A split turn's beginning is asked for alongside, in either order: the update is the one
    # with the previous summary.
    [update] = [
        prompt for request in provider.requests[asked:]
        if "<previous-summary>" in (prompt := request.body["messages"][0]["content"])
    ]
    assert f"<previous-summary>\n{free_text}" in update
    assert "carry its facts forward" in " ".join(update.split())
