"""The anthropic and openai summarizers through their official SDKs, against a local server
that speaks each API, wrapped in the chain that retries and falls back."""

from __future__ import annotations

import asyncio
import logging

import pytest
from contextd.summarizers.base import SummarizerError, SummaryRequest
from contextd.summarizers.chain import build_summarizer
from contextd.summarizers.offline import summarize_offline

from tests.summarizers.conftest import KEY_ENV, SECRET, settings_for
from tests.summarizers.fake_provider import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    DeadlinesPassingOnceHeld,
    FakeProvider,
    Reply,
    spent_deadline,
)

PROVIDERS = ["anthropic", "openai"]
NETWORK_PROVIDERS = [*PROVIDERS, "remote", "anthropic-native", "openai-native"]
QUICK = {"base_delay": 0.01, "max_delay": 0.05}
SUMMARY = "## Goal\n- Add rate limiting\n"


def chain(name: str, provider: FakeProvider, **changes: object):
    return build_summarizer(settings_for(name, provider, **changes), **QUICK)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_model_summary_gets_the_computed_artifact_trail(
    name: str, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.with_summary(SUMMARY))

    text = (await chain(name, provider).summarize_with_info(summary_request)).text

    trail = text[len(SUMMARY):]
    assert "## Commands (latest run)" in trail
    assert "`pytest tests/test_ratelimit.py -q` ok: ............ [100%] | 12 passed in 0.84s" in trail
    assert "## Open Errors (computed)" in trail
    assert "`mypy services` failed: services/api/ratelimit.py:42: error: Incompatible return value" in trail


@pytest.mark.parametrize("name", PROVIDERS)
async def test_success_sends_the_prompt_and_returns_the_text(
    name: str, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.with_summary(SUMMARY))

    summary = await chain(name, provider).summarize_with_info(summary_request)

    assert summary.text.startswith(SUMMARY)
    assert (summary.summarizer.provider, summary.summarizer.model) == (name, f"{name}-test-model")
    [sent] = provider.requests
    assert sent.path == {"anthropic": ANTHROPIC_PATH, "openai": OPENAI_PATH}[name]
    assert sent.body["model"] == f"{name}-test-model"
    assert any(SECRET in value for value in sent.headers.values()), "the key from the env var"
    if name == "anthropic":
        assert sent.body["system"] == summary_request.system_prompt
        assert sent.body["messages"] == [{"role": "user", "content": summary_request.prompt}]
        assert sent.body["max_tokens"] == summary_request.max_tokens
    else:
        assert sent.body["messages"] == [
            {"role": "system", "content": summary_request.system_prompt},
            {"role": "user", "content": summary_request.prompt},
        ]
        assert sent.body["max_tokens"] == summary_request.max_tokens  # a custom baseUrl


@pytest.mark.parametrize("name", PROVIDERS)
async def test_rate_limit_is_retried(
    name: str, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.error(429, "slow down"), Reply.with_summary(SUMMARY))

    assert (await chain(name, provider).summarize(summary_request)).startswith(SUMMARY)
    assert len(provider.requests) == 2


@pytest.mark.parametrize("name", PROVIDERS)
async def test_server_errors_exhaust_the_retries(
    name: str, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(*[Reply.error(500, "internal trouble")] * 3, Reply.with_summary("too late"))

    with pytest.raises(SummarizerError) as failure:
        await chain(name, provider, maxRetries=2).summarize(summary_request)

    assert len(provider.requests) == 3, "one attempt and two retries"
    message = str(failure.value)
    assert f"{name}: HTTP 500" in message and "after 3 attempts" in message
    assert "internal trouble" in message
    assert failure.value.provider == name


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize("status", [400, 401, 403])
async def test_client_errors_are_not_retried(
    name: str, status: int, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.error(status, "no"), Reply.with_summary(SUMMARY))

    with pytest.raises(SummarizerError, match=f"HTTP {status}"):
        await chain(name, provider).summarize(summary_request)
    assert len(provider.requests) == 1


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_slow_answer_times_out_and_is_retried(
    name: str,
    provider: FakeProvider,
    api_key: str,
    summary_request: SummaryRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server holds the first answer past a small deadline: the client gives that request
    up and the retry gets the summary. Each retry has twice the time, so a loaded machine
    still gets its answer (the deadline covers the HTTP exchange alone, not the SDK's setup)."""
    provider.script(Reply.hang(30), *[Reply.with_summary(SUMMARY)] * 3)

    summarizer = chain(name, provider, timeoutSeconds=0.2, maxRetries=3)

    assert (await summarizer.summarize(summary_request)).startswith(SUMMARY)
    assert f"{name}: no answer within 0.2s; retry 1 of 3" in caplog.text
    await provider.wait_for_hang_ups(1)


@pytest.mark.parametrize("name", NETWORK_PROVIDERS)
async def test_an_attempt_out_of_time_cancels_its_request(
    name: str, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    """When the deadline passes, the provider's HTTP request is cancelled and its connection
    closed (the server sees the client hang up), not left running behind the chain."""
    provider.script(Reply.hang(30))
    settings = settings_for(name, provider, maxRetries=0)

    with pytest.raises(SummarizerError, match="no answer within"):
        await build_summarizer(settings, deadline=DeadlinesPassingOnceHeld(provider), **QUICK).summarize(summary_request)
    await provider.wait_for_hang_ups(1)


@pytest.mark.parametrize(("name", "fallback"), [("offline", []), ("anthropic", ["offline"]), ("openai", ["offline"])])
async def test_a_spent_deadline_never_fails_the_offline_summarizer(
    name: str, fallback: list[str], provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    """The offline summarizer needs no network: no deadline covers it, so a small
    timeoutSeconds on a loaded machine cannot fail the fallback that is always there."""
    provider.script(Reply.hang(30))
    settings = settings_for(name, provider, maxRetries=0, fallback=fallback)

    summary = await build_summarizer(settings, deadline=spent_deadline, **QUICK).summarize_with_info(summary_request)

    assert summary.summarizer.provider == "offline"
    assert summary.text == summarize_offline(summary_request)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_timed_out_paid_call_is_retried_with_twice_the_time(
    name: str,
    provider: FakeProvider,
    api_key: str,
    summary_request: SummaryRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider.script(Reply.hang(10), Reply.hang(10))

    with pytest.raises(SummarizerError, match=r"no answer within 0.6s \(after 2 attempts\)"):
        await chain(name, provider, timeoutSeconds=0.3, maxRetries=1).summarize(summary_request)
    assert f"{name}: no answer within 0.3s; retry 1 of 1" in caplog.text, (
        "the same deadline would lose the answer again"
    )


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_summary_cut_at_the_output_limit_falls_back(
    name: str, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.cut_short("## Goal\n- Add rate limiting\n## Next St"), Reply.with_summary(SUMMARY))

    summary = await chain(name, provider, fallback=["offline"]).summarize_with_info(summary_request)

    assert summary.summarizer.provider == "offline"
    assert len(provider.requests) == 1, "the same request would be cut again"


@pytest.mark.parametrize("name", [*PROVIDERS, "remote"])
@pytest.mark.parametrize(
    ("reply", "tries"),
    [
        (Reply.error(429, "slow down", **{"retry-after-ms": "10"}), 2),
        (Reply.error(429, "slow down", **{"retry-after": "3600"}), 1),  # longer than held: fall back
        (Reply.error(503, "overloaded", **{"x-should-retry": "false"}), 1),
        (Reply.error(409, "conflict", **{"x-should-retry": "false"}), 1),
        (Reply.error(400, "try again", **{"x-should-retry": "true"}), 2),
    ],
    ids=["retry-after-ms", "retry-after-too-long", "should-retry-false-5xx", "should-retry-false-409", "should-retry-true-400"],
)
async def test_the_providers_retry_headers_are_honoured(
    name: str, reply: Reply, tries: int, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(reply, Reply.with_summary(SUMMARY))

    summary = await chain(name, provider, fallback=["offline"]).summarize_with_info(summary_request)

    assert len(provider.requests) == tries
    assert summary.summarizer.provider == (name if tries == 2 else "offline")


MALFORMED = {
    "anthropic": [
        Reply.raw("<html>gateway</html>", content_type="text/html"),
        Reply.raw('{"type": "message", "content": []}'),
        Reply.raw('{"content": [{"type": "text", "text": "   "}]}'),
        Reply.raw("{}"),
    ],
    "openai": [
        Reply.raw("not json at all"),
        Reply.raw('{"object": "chat.completion", "choices": []}'),
        Reply.raw('{"choices": [{"index": 0, "message": {"role": "assistant", "content": null}}]}'),
        Reply.raw("{}"),
    ],
}


@pytest.mark.parametrize(
    ("name", "reply"),
    [(name, reply) for name, replies in MALFORMED.items() for reply in replies],
)
async def test_a_malformed_reply_fails_without_retry(
    name: str, reply: Reply, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(reply, Reply.with_summary(SUMMARY))

    with pytest.raises(SummarizerError, match=f"{name}: malformed reply"):
        await chain(name, provider).summarize(summary_request)
    assert len(provider.requests) == 1


@pytest.mark.parametrize("name", PROVIDERS)
async def test_cancellation_propagates_at_once_without_retry_or_fallback(
    name: str, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.hang(30), Reply.with_summary(SUMMARY))
    summarizer = chain(name, provider, fallback=["offline"], timeoutSeconds=60)

    task = asyncio.create_task(summarizer.summarize(summary_request))
    await provider.wait_for_requests(1)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        # The bound only keeps a broken cancellation from hanging the suite for 30 s.
        await asyncio.wait_for(task, timeout=5)
    assert task.cancelled()
    await asyncio.sleep(0.1)
    assert len(provider.requests) == 1, "a cancelled request is not retried"


@pytest.mark.parametrize("name", PROVIDERS)
async def test_falls_back_to_offline_after_failing(
    name: str, provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.error(503, "overloaded"), Reply.error(503, "overloaded"))

    summary = await chain(name, provider, maxRetries=1, fallback=["offline"]).summarize_with_info(
        summary_request
    )

    assert summary.summarizer.provider == "offline"
    assert summary.summarizer.model is None
    assert summary.text.startswith("## Goal")
    assert "services/api/ratelimit.py" in summary.text
    assert len(provider.requests) == 2


@pytest.mark.parametrize("name", PROVIDERS)
async def test_the_key_never_reaches_errors_or_logs(
    name: str,
    provider: FakeProvider,
    api_key: str,
    summary_request: SummaryRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    # A server that echoes the refused key back, as some do.
    provider.script(
        Reply.error(429, f"rate limited for key {SECRET}"),
        Reply.error(401, f"invalid x-api-key {SECRET}"),
    )

    with pytest.raises(SummarizerError) as failure:
        await chain(name, provider).summarize(summary_request)

    assert SECRET not in str(failure.value)
    assert "[redacted]" in str(failure.value)
    assert "HTTP 401" in str(failure.value)
    assert caplog.records, "the retry was logged"
    assert SECRET not in caplog.text


@pytest.mark.parametrize("name", ["anthropic", "openai", "remote"])
async def test_a_missing_key_variable_is_named_not_guessed(
    name: str,
    provider: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
    summary_request: SummaryRequest,
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)

    with pytest.raises(SummarizerError, match=f"environment variable {KEY_ENV} is not set"):
        await chain(name, provider).summarize(summary_request)
    assert provider.requests == []


async def test_openai_compatible_local_server_needs_no_key(
    provider: FakeProvider, monkeypatch: pytest.MonkeyPatch, summary_request: SummaryRequest
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider.key = None  # a local server
    provider.script(Reply.with_summary(SUMMARY))

    summarizer = chain("openai", provider, apiKeyEnv=None, model="llama3.1:8b")
    assert (await summarizer.summarize(summary_request)).startswith(SUMMARY)
    assert provider.requests[0].body["model"] == "llama3.1:8b"


async def test_unreachable_server_is_a_retried_connection_error(
    api_key: str, summary_request: SummaryRequest
) -> None:
    closed = FakeProvider().start()
    closed.stop()  # its port now refuses connections

    with pytest.raises(SummarizerError, match=r"anthropic: cannot reach the API.*after 2 attempts"):
        await chain("anthropic", closed, maxRetries=1).summarize(summary_request)


async def test_openai_itself_gets_max_completion_tokens(
    provider: FakeProvider,
    api_key: str,
    monkeypatch: pytest.MonkeyPatch,
    summary_request: SummaryRequest,
) -> None:
    # No baseUrl means OpenAI itself; the SDK's own variable points it at the fake server.
    monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_url)
    provider.script(Reply.with_summary(SUMMARY))

    await chain("openai", provider, baseUrl=None).summarize(summary_request)

    body = provider.requests[0].body
    assert body["max_completion_tokens"] == summary_request.max_tokens
    assert "max_tokens" not in body


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_custom_server_gets_no_vendor_key_unless_apikeyenv_names_one(
    name: str, provider: FakeProvider, monkeypatch: pytest.MonkeyPatch, summary_request: SummaryRequest
) -> None:
    vendor_keys = {"ANTHROPIC_API_KEY": "sk-ant-vendor-key-0123456789", "OPENAI_API_KEY": "sk-openai-vendor-key-0123456789"}
    for variable, value in vendor_keys.items():
        monkeypatch.setenv(variable, value)
    provider.key = None  # a third party's server behind summarizer.baseUrl
    provider.script(Reply.with_summary(SUMMARY))

    await chain(name, provider, apiKeyEnv=None).summarize(summary_request)

    sent = " ".join(provider.requests[0].headers.values())
    assert all(value not in sent for value in vendor_keys.values())
    if name == "anthropic":
        assert "authorization" not in provider.requests[0].headers
        assert "x-api-key" not in provider.requests[0].headers


async def test_the_test_server_refuses_a_request_without_the_key(
    provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.key = "sk-another-key-entirely-0000"
    provider.script(Reply.with_summary(SUMMARY))

    with pytest.raises(SummarizerError, match="anthropic: HTTP 401"):
        await chain("anthropic", provider).summarize(summary_request)
    assert provider.pending == 1, "refused before any scripted reply"
