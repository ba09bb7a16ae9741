"""The remote summarizer's protocol, and the chain's retry and fallback policy."""

from __future__ import annotations

import email.utils

import pytest
from contextd.model import SummarizerSettings
from contextd.summarizers.base import SummarizerError, SummaryRequest
from contextd.summarizers.chain import SummarizerChain, build_summarizer
from contextd.summarizers.errors import ProviderError, SummarizerFailed, retry_after_seconds

from tests.summarizers.conftest import SECRET, settings_for
from tests.summarizers.fake_provider import FakeProvider, Reply

QUICK = {"base_delay": 0.01, "max_delay": 0.05}


async def test_remote_posts_the_prompt_and_reads_the_summary(
    provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.with_summary("## Goal\n- remote summary\n"))

    summary = await build_summarizer(settings_for("remote", provider), **QUICK).summarize_with_info(
        summary_request
    )

    assert summary.text.startswith("## Goal\n- remote summary\n")
    assert "## Open Errors (computed)" in summary.text, "the remote summary gets the trail too"
    assert summary.summarizer.provider == "remote"
    [sent] = provider.requests
    assert sent.path == "/summarize"
    assert sent.body == {
        "systemPrompt": summary_request.system_prompt,
        "prompt": summary_request.prompt,
        "maxTokens": summary_request.max_tokens,
    }
    assert sent.headers["authorization"] == f"Bearer {SECRET}"


async def test_remote_without_a_key_variable_sends_no_authorization(
    provider: FakeProvider, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.with_summary("ok summary"))

    await build_summarizer(settings_for("remote", provider, apiKeyEnv=None)).summarize(summary_request)

    assert "authorization" not in provider.requests[0].headers


async def test_remote_failure_is_retried_then_reported(
    provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.error(502, f"bad gateway for {SECRET}"), Reply.error(502, "bad gateway"))

    with pytest.raises(SummarizerError) as failure:
        await build_summarizer(settings_for("remote", provider, maxRetries=1), **QUICK).summarize(
            summary_request
        )

    assert str(failure.value) == "summarizer failed: remote: HTTP 502: bad gateway (after 2 attempts)"
    assert len(provider.requests) == 2


@pytest.mark.parametrize(
    "reply",
    [Reply.raw("{}"), Reply.raw('{"summary": ""}'), Reply.raw("[1, 2]"), Reply.raw("summary: no json")],
)
async def test_remote_malformed_answer_is_not_retried(
    reply: Reply, provider: FakeProvider, summary_request: SummaryRequest
) -> None:
    provider.script(reply)

    with pytest.raises(SummarizerError, match="remote: malformed reply"):
        await build_summarizer(settings_for("remote", provider, apiKeyEnv=None), **QUICK).summarize(
            summary_request
        )
    assert len(provider.requests) == 1


async def test_remote_without_an_endpoint_says_which_setting(summary_request: SummaryRequest) -> None:
    settings = SummarizerSettings(provider="remote")

    with pytest.raises(SummarizerError, match="summarizer.remoteEndpoint is not set"):
        await build_summarizer(settings).summarize(summary_request)


async def test_fallbacks_are_tried_in_order_and_the_error_lists_each(
    provider: FakeProvider, api_key: str, summary_request: SummaryRequest
) -> None:
    provider.script(Reply.error(500, "primary down"), Reply.error(404, "no such route"))
    settings = settings_for("openai", provider, maxRetries=0, fallback=["remote"])

    with pytest.raises(SummarizerFailed) as failure:
        await build_summarizer(settings, **QUICK).summarize(summary_request)

    assert [request.path for request in provider.requests] == ["/v1/chat/completions", "/summarize"]
    assert str(failure.value) == (
        "summarizer failed: openai: HTTP 500: primary down; then remote: HTTP 404: no such route"
    )
    assert failure.value.provider == "openai"


async def test_a_fallback_provider_gets_its_own_defaults(provider: FakeProvider) -> None:
    settings = settings_for("openai", provider, fallback=["anthropic", "openai", "offline"])

    chain = build_summarizer(settings)

    assert [s.provider for s in chain.summarizers] == ["openai", "anthropic", "offline"]
    assert chain.summarizers[0].model == "openai-test-model"
    assert chain.summarizers[1].model == "claude-sonnet-4-6", "not the OpenAI model name"
    assert (chain.provider, chain.model) == ("openai", "openai-test-model")


def test_the_default_is_offline_alone() -> None:
    chain = build_summarizer(SummarizerSettings())

    assert [s.provider for s in chain.summarizers] == ["offline"]


def test_backoff_doubles_up_to_the_cap_less_a_random_quarter() -> None:
    chain = SummarizerChain(
        build_summarizer(SummarizerSettings()).summarizers,
        max_retries=6,
        timeout_seconds=1,
        base_delay=0.5,
        max_delay=3,
    )

    for attempt, full in zip(range(1, 7), [0.5, 1, 2, 3, 3, 3]):
        delays = [chain.backoff(attempt) for _ in range(200)]
        assert all(0.75 * full <= delay <= full for delay in delays)
        assert len(set(delays)) > 100, "clients that failed together do not retry together"


def test_a_providers_wait_is_used_as_asked() -> None:
    chain = build_summarizer(SummarizerSettings())
    asked = ProviderError("openai", "slow down", retryable=True, status=429, retry_after=2.5)

    assert chain.delay_after(asked, 1) == 2.5
    assert chain.delay_after(ProviderError("openai", "no", retryable=False, retry_after=1), 1) is None
    assert chain.delay_after(ProviderError("openai", "later", retryable=True, retry_after=3600), 1) is None


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Wed, 25 Nov 2026 18:00:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 25 Nov 2026 17:00:00 GMT"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({}, None),
    ],
)
def test_retry_after_in_every_form(headers: dict[str, str], seconds: float | None) -> None:
    now = email.utils.parsedate_to_datetime("Wed, 25 Nov 2026 18:00:00 GMT").timestamp()

    assert retry_after_seconds(headers, now) == seconds


class Broken:
    provider = "broken"
    model = None

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        raise self.error


async def test_an_unexpected_exception_fails_that_provider_only(
    summary_request: SummaryRequest,
) -> None:
    broken = Broken(KeyError("choices"))
    offline = build_summarizer(SummarizerSettings()).summarizers[0]
    chain = SummarizerChain([broken, offline], max_retries=3, timeout_seconds=5, base_delay=0)

    summary = await chain.summarize_with_info(summary_request)

    assert summary.summarizer.provider == "offline"
    assert broken.calls == 1, "a bug is not worth retrying"


async def test_an_empty_summary_is_malformed(summary_request: SummaryRequest) -> None:
    class Empty(Broken):
        async def summarize(self, request: SummaryRequest) -> str:
            self.calls += 1
            return "  \n"

    empty = Empty(RuntimeError())
    chain = SummarizerChain([empty], max_retries=3, timeout_seconds=5, base_delay=0)

    with pytest.raises(SummarizerFailed, match="broken: malformed reply: empty summary"):
        await chain.summarize(summary_request)
    assert empty.calls == 1
