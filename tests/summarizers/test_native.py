"""Provider-native compaction as summarizers, through the official SDKs against the local
server: OpenAI's `/responses/compact` (an opaque item kept for replay, a readable offline
checkpoint) and Anthropic's `compact_20260112` edit (a readable compaction block), each
retried like the other providers and falling back on failure."""

from __future__ import annotations

import logging

import anthropic
import pytest
from contextd.compaction.request import build_request
from contextd.model import FileDetails, PreserveData
from contextd.summarizers.anthropic_native import whole_prompt
from contextd.summarizers.base import SummarizerError, SummaryRequest
from contextd.summarizers.chain import build_summarizer
from contextd.summarizers.offline import summarize_offline

from tests.summarizers.conftest import SECRET, settings_for
from tests.summarizers.fake_provider import (
    ANTHROPIC_COUNT_PATH,
    ANTHROPIC_PATH,
    OPENAI_COMPACT_PATH,
    OPENAI_PATH,
    DeadlinesPassingOnceHeld,
    FakeProvider,
    Reply,
    calls,
    fake_encrypted,
    spent_deadline,
)
from tests.summarizers.sessions import ratelimit_session

QUICK = {"base_delay": 0.01, "max_delay": 0.05}
BLOCK = "## Goal\n- Add rate limiting to the API\n"


def chain(name: str, provider: FakeProvider, **changes: object):
    return build_summarizer(settings_for(name, provider, **changes), **QUICK)


def compaction_request(**changes: object) -> SummaryRequest:
    return build_request(
        "compaction",
        ratelimit_session(),
        template="compaction",
        max_tokens=2048,
        files=FileDetails(),
        **changes,  # type: ignore[arg-type]
    )


async def test_openai_native_keeps_the_whole_output_and_a_readable_checkpoint(
    provider: FakeProvider, api_key: str
) -> None:
    provider.script(Reply.with_summary("latent state"))
    request = compaction_request()

    summary = await chain("openai-native", provider).summarize_with_info(request)

    model = "openai-native-test-model"
    [sent] = provider.requests
    sent_users = [item for item in sent.body["input"] if item.get("role") == "user"]
    assert summary.preserve_data is not None
    *kept, item = summary.preserve_data.openaiItems
    assert item == {"type": "compaction", "id": "cmp_fake_0001", "encrypted_content": fake_encrypted("latent state", model)}
    assert [message["content"][0]["text"] for message in kept] == [u["content"] for u in sent_users], (
        "the user messages OpenAI kept are kept too, as input items (no output-only id)"
    )
    assert kept and all(set(message) <= {"type", "role", "content", "status"} for message in kept)
    assert summary.preserve_data.model == model, "the model that made the item"
    assert summary.text == summarize_offline(request), "readers get the offline checkpoint"
    assert (summary.summarizer.provider, summary.summarizer.model) == ("openai-native", model)
    assert sent.path == OPENAI_COMPACT_PATH
    assert sent.headers["authorization"] == f"Bearer {SECRET}", "the key from the env var"
    assert sent.body["model"] == model
    items = sent.body["input"]
    assert items[0] == {"role": "user", "content": request.messages[0].content}
    calls = [item for item in items if item.get("type") == "function_call"]
    outputs = {item["call_id"] for item in items if item.get("type") == "function_call_output"}
    assert calls and {call["call_id"] for call in calls} == outputs, (
        "every call sent with its output"
    )
    assert all(isinstance(call["arguments"], str) for call in calls)


def previous_output(model: str) -> PreserveData:
    return PreserveData(
        openaiItems=[
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add rate limiting."}]},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": fake_encrypted("earlier", model)},
        ],
        model=model,
    )


async def test_openai_native_builds_on_the_previous_output_of_the_same_model(
    provider: FakeProvider, api_key: str
) -> None:
    provider.script(Reply.with_summary("second"))
    previous = previous_output("openai-native-test-model")
    request = compaction_request(
        previous_summary="## Goal\n- earlier", previous_preserve_data=previous
    )

    await chain("openai-native", provider).summarize_with_info(request)

    sent = provider.requests[0].body["input"]
    assert sent[:2] == previous.openaiItems, "OpenAI's own output leads, whole, not our text of it"


async def test_openai_native_gives_another_models_output_as_text(
    provider: FakeProvider, api_key: str
) -> None:
    provider.script(Reply.with_summary("second"))
    request = compaction_request(
        previous_summary="## Goal\n- earlier", previous_preserve_data=previous_output("gpt-5.2-codex")
    )

    summary = await chain("openai-native", provider).summarize_with_info(request)

    first = provider.requests[0].body["input"][0]
    assert first["role"] == "user" and first["content"].endswith("## Goal\n- earlier")
    assert summary.summarizer.provider == "openai-native"


async def test_the_test_server_refuses_an_item_replayed_to_another_model(
    provider: FakeProvider, api_key: str
) -> None:
    provider.script(Reply.with_summary("second"))
    mislabelled = previous_output("gpt-5.2-codex").model_copy(update={"model": "openai-native-test-model"})
    request = compaction_request(previous_summary="## Goal\n- earlier", previous_preserve_data=mislabelled)

    with pytest.raises(SummarizerError, match="HTTP 400: invalid_encrypted_content"):
        await chain("openai-native", provider).summarize(request)
    assert provider.pending == 1


async def test_openai_native_without_a_previous_item_sends_the_previous_summary(
    provider: FakeProvider, api_key: str
) -> None:
    provider.script(Reply.with_summary("second"))

    await chain("openai-native", provider).summarize_with_info(
        compaction_request(previous_summary="## Goal\n- earlier")
    )

    first = provider.requests[0].body["input"][0]
    assert first["role"] == "user" and first["content"].endswith("## Goal\n- earlier")


async def test_openai_native_writes_other_documents_offline_without_a_call(
    provider: FakeProvider, api_key: str
) -> None:
    request = build_request(
        "handoff", ratelimit_session(), template="handoff", max_tokens=2048, files=FileDetails()
    )

    # A deadline run out does not matter: no answer is waited for.
    settings = settings_for("openai-native", provider)
    summary = await build_summarizer(settings, deadline=spent_deadline, **QUICK).summarize_with_info(request)

    assert summary.text == summarize_offline(request) and summary.preserve_data is None
    assert provider.requests == []


@pytest.mark.parametrize("whole_history", [True, False])
async def test_openai_native_compacts_a_turns_beginning_only_when_it_is_the_whole_history(
    provider: FakeProvider, api_key: str, whole_history: bool
) -> None:
    provider.script(Reply.with_summary("the turn"))
    request = build_request(
        "turn_prefix",
        ratelimit_session(),
        template="turn_prefix",
        max_tokens=2048,
        files=FileDetails(),
        whole_history=whole_history,
    )

    summary = await chain("openai-native", provider).summarize_with_info(request)

    assert summary.text == summarize_offline(request)
    assert (summary.preserve_data is not None) is whole_history
    assert len(provider.requests) == (1 if whole_history else 0)


async def test_anthropic_native_asks_for_server_side_compaction_and_reads_the_block(
    provider: FakeProvider, api_key: str
) -> None:
    provider.script(Reply.with_summary(BLOCK))
    request = compaction_request()

    summary = await chain("anthropic-native", provider).summarize_with_info(request)

    assert summary.text.startswith(BLOCK)
    assert "## Commands (latest run)" in summary.text[len(BLOCK) :], (
        "the computed trail is appended"
    )
    assert summary.preserve_data is None
    described, counted, sent = provider.requests
    assert (described.method, described.path) == ("GET", "/v1/models/anthropic-native-test-model")
    assert counted.path == ANTHROPIC_COUNT_PATH, (
        "counted first: the API compacts from 50,000 tokens"
    )
    whole = {"role": "user", "content": whole_prompt(request)}
    assert counted.body == {"model": "anthropic-native-test-model", "messages": [whole]}
    assert sent.path == ANTHROPIC_PATH
    assert sent.headers["authorization"] == f"Bearer {SECRET}", "the key from the env var"
    assert "compact-2026-01-12" in sent.headers["anthropic-beta"]
    assert sent.body["context_management"] == {
        "edits": [
            {
                "type": "compact_20260112",
                "trigger": {"type": "input_tokens", "value": 50_000},
                "pause_after_compaction": True,
                "instructions": request.system_prompt,
            }
        ]
    }
    assert sent.body["messages"] == [whole]
    # The API reads all it compacts: tool outputs go whole, where other summarizers shorten them.
    longest = max((m.content for m in request.messages if m.role == "toolResult"), key=len)
    assert isinstance(longest, str) and len(longest) > 2_000
    assert longest in whole["content"] and longest not in request.prompt
    assert (
        whole["content"].endswith(request.task)
        and "more characters truncated" not in whole["content"]
    )


NATIVE = ["openai-native", "anthropic-native"]


@pytest.mark.parametrize("name", NATIVE)
async def test_a_rate_limit_is_retried(name: str, provider: FakeProvider, api_key: str) -> None:
    provider.script(Reply.error(429, "slow down"), Reply.with_summary(BLOCK))

    summary = await chain(name, provider).summarize_with_info(compaction_request())

    assert summary.summarizer.provider == name
    assert len(calls(provider)) == 2


NO_COMPACTION = {
    "openai-native": [
        Reply.without_compaction("x"),
        Reply.raw(
            '{"object": "response.compaction", "output": [{"type": "compaction", "id": "c"}]}'
        ),
        Reply.raw("{}"),
    ],
    "anthropic-native": [
        Reply.without_compaction("A plain answer, no compaction block."),
        Reply.raw('{"type": "message", "content": [{"type": "compaction", "content": null}]}'),
        Reply.raw("<html>gateway</html>", content_type="text/html"),
    ],
}


@pytest.mark.parametrize(
    ("name", "reply"),
    [(name, reply) for name, replies in NO_COMPACTION.items() for reply in replies],
)
async def test_a_reply_without_a_compaction_falls_back_at_once(
    name: str, reply: Reply, provider: FakeProvider, api_key: str
) -> None:
    provider.script(reply)
    request = compaction_request()

    summary = await chain(name, provider, fallback=["offline"]).summarize_with_info(request)

    assert summary.summarizer.provider == "offline"
    assert summary.text == summarize_offline(request) and summary.preserve_data is None
    assert len(calls(provider)) == 1, "a reply without a compaction is not retried"


@pytest.mark.parametrize("name", NATIVE)
async def test_an_outage_falls_back_to_the_same_vendors_summarizer(
    name: str, provider: FakeProvider, api_key: str
) -> None:
    vendor = name.removesuffix("-native")
    provider.script(
        *[Reply.error(500, "internal trouble")] * 2,
        Reply.with_summary("## Goal\n- from the fallback"),
    )

    summary = await chain(name, provider, maxRetries=1, fallback=[vendor]).summarize_with_info(
        compaction_request()
    )

    assert summary.summarizer.provider == vendor
    assert summary.text.startswith("## Goal\n- from the fallback")
    fallback_request = provider.requests[-1]
    assert fallback_request.path == {"anthropic": ANTHROPIC_PATH, "openai": OPENAI_PATH}[vendor]
    assert "context_management" not in fallback_request.body
    assert SECRET in " ".join(fallback_request.headers.values()), (
        "the same key variable serves the vendor"
    )


@pytest.mark.parametrize("name", NATIVE)
async def test_a_timeout_is_retried_then_falls_back(
    name: str, provider: FakeProvider, api_key: str
) -> None:
    provider.script(Reply.hang(), Reply.hang())  # held until the provider stops
    deadline = DeadlinesPassingOnceHeld(provider)
    request = compaction_request()
    settings = settings_for(name, provider, timeoutSeconds=0.3, maxRetries=1, fallback=["offline"])

    summary = await build_summarizer(settings, **QUICK, deadline=deadline).summarize_with_info(request)

    assert summary.summarizer.provider == "offline"
    assert summary.text == summarize_offline(request)
    assert len(calls(provider)) == 2, "the timed-out attempt was retried once"
    assert deadline.given[:2] == [0.3, 0.6], "the retry had twice the time"


@pytest.mark.parametrize("tokens", [1_234, 52_000])
async def test_anthropic_native_does_not_ask_under_the_trigger_and_its_margin(
    provider: FakeProvider, api_key: str, caplog: pytest.LogCaptureFixture, tokens: int
) -> None:
    provider.input_tokens = tokens  # 52,000: over the trigger by the estimate, not surely by the API's count
    provider.script(Reply.with_summary("would have been a paid answer"))

    summary = await chain("anthropic-native", provider, fallback=["offline"]).summarize_with_info(
        compaction_request()
    )

    assert summary.summarizer.provider == "offline"
    assert calls(provider) == [] and provider.pending == 1, "described and counted, never asked"
    assert f"{tokens:,} input tokens, under the 55,000 from which the API surely compacts" in caplog.text


ON_DEMAND = {"max_input_tokens": 1_000_000, "summarize": True}


@pytest.mark.parametrize("tokens", [1_234, 600_000])
async def test_anthropic_native_compacts_on_demand_when_the_model_takes_it(
    provider: FakeProvider, api_key: str, tokens: int
) -> None:
    provider.models["anthropic-native-test-model"] = ON_DEMAND
    provider.input_tokens = tokens  # on demand, any size compacts: no trigger to clear
    provider.script(Reply.with_summary(BLOCK))
    request = compaction_request()

    summary = await chain("anthropic-native", provider).summarize_with_info(request)

    assert summary.text.startswith(BLOCK)
    [sent] = calls(provider)
    assert sent.body["compaction"] == {"type": "summarize", "instructions": request.system_prompt}
    assert "context_management" not in sent.body
    assert "compact-2026-09-04" in sent.headers["anthropic-beta"]


async def test_anthropic_native_refuses_a_history_over_the_models_input_limit(
    provider: FakeProvider, api_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    provider.models["anthropic-native-test-model"] = {"max_input_tokens": 200_000, "summarize": True}
    provider.input_tokens = 250_000
    provider.script(Reply.with_summary("would have been a 400"))

    summary = await chain("anthropic-native", provider, fallback=["offline"]).summarize_with_info(
        compaction_request()
    )

    assert summary.summarizer.provider == "offline"
    assert calls(provider) == [], "no paid request the API would refuse"
    assert "250,000 input tokens, over the model's limit of 200,000" in caplog.text


async def test_the_test_server_refuses_compaction_without_its_beta_or_beside_the_edit(
    provider: FakeProvider, api_key: str
) -> None:
    client = anthropic.AsyncAnthropic(api_key=api_key, base_url=provider.url, max_retries=0)
    user = [{"role": "user", "content": "Summarize this."}]
    edit = {"edits": [{"type": "compact_20260112"}]}
    async with client:
        with pytest.raises(anthropic.BadRequestError, match="requires the beta header compact-2026-09-04"):
            await client.beta.messages.create(model="m", max_tokens=10, messages=user, compaction={"type": "summarize"})
        with pytest.raises(anthropic.BadRequestError, match="cannot be combined with context_management"):
            await client.beta.messages.create(
                model="m", max_tokens=10, messages=user, compaction={"type": "summarize"},
                context_management=edit, betas=["compact-2026-09-04", "compact-2026-01-12"],
            )


async def test_anthropic_compaction_usage_is_reported_under_iterations(
    provider: FakeProvider, api_key: str
) -> None:
    provider.script(Reply.with_summary(BLOCK))
    client = anthropic.AsyncAnthropic(api_key=api_key, base_url=provider.url, max_retries=0)
    async with client:
        message = await client.beta.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "Summarize this."}],
            compaction={"type": "summarize"}, betas=["compact-2026-09-04"],
        )

    assert message.stop_reason == "compaction"
    assert message.usage.iterations is not None
    [compaction] = message.usage.iterations
    assert (compaction.type, compaction.input_tokens) == ("compaction", 60_000)
    assert message.usage.input_tokens == 0, "a compaction's tokens are not in the top-level fields"


@pytest.mark.parametrize("name", NATIVE)
async def test_the_key_never_shows_in_errors_or_logs(
    name: str, provider: FakeProvider, api_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    provider.script(*[Reply.error(401, f"invalid x-api-key {SECRET}")] * 2)

    with pytest.raises(SummarizerError) as failure:
        await chain(name, provider).summarize(compaction_request())

    assert "HTTP 401" in str(failure.value)
    assert SECRET not in str(failure.value)
    assert SECRET[:12] not in caplog.text and SECRET not in caplog.text
