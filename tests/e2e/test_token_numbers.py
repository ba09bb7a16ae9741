"""The numbers a user sees, over real stdio: the calibrated figure of models whose tokenizer
does not ship, across a compaction and a restart, and an overflow that always makes room."""

from __future__ import annotations

from typing import Any

import pytest
from contextd.model import Message
from contextd.tokens import count_message
from pydantic import TypeAdapter

from tests.factories import assistant, coding_turn, user

PROVIDER_RATIO = 1.25
"""The scripted provider's tokenizer gives 1.25x the o200k count (what pi's sessions showed
for Claude)."""

messages_adapter = TypeAdapter(list[Message])


async def provider_prompt(daemon: Any, session: str) -> int:
    """What the scripted provider reports as the prompt: 1.25x the o200k count of the context
    contextd would send it."""
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    messages = messages_adapter.validate_python(context["messages"])
    return round(PROVIDER_RATIO * sum(count_message(m, "o200k_base") for m in messages))


async def play_turn(daemon: Any, session: str, turn: int) -> dict[str, Any]:
    """One coding turn where every answer carries the scripted provider's usage."""
    appended: dict[str, Any] = {}
    for message in coding_turn(turn, body_words=400):
        if message["role"] == "assistant":
            answer = messages_adapter.validate_python([message])[0]
            output = round(PROVIDER_RATIO * count_message(answer, "o200k_base"))
            message = {**message, "usage": {"input": await provider_prompt(daemon, session), "output": output}}
        appended = await daemon.request(
            "contextd/session/append", {"sessionId": session, "messages": [message]}
        )
    return appended


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-4-5-20250929",  # the prior already says 1.25
        "gemini-2.5-pro",  # the prior says 1.0: the factor must be learned
    ],
)
async def test_after_a_compaction_the_figure_is_within_7_percent_of_the_provider(make_daemon, tmp_path, model):
    settings = {"compaction": {"keepRecentTokens": 4_000}, "pruning": {"enabled": False}}
    daemon = await make_daemon(settings=settings)
    session = (await daemon.open_session(model=model))["sessionId"]
    for turn in range(8):
        await play_turn(daemon, session, turn)

    compacted = await daemon.request("contextd/compact", {"sessionId": session})

    provider_says = await provider_prompt(daemon, session)
    assert abs(compacted["tokensAfter"] - provider_says) <= 0.07 * provider_says
    usage = await daemon.wait_for("contextd/tokenUsage", sessionId=session, tokens=compacted["tokensAfter"])
    assert usage["source"] == "estimated"
    assert usage["calibration"] == pytest.approx(PROVIDER_RATIO, abs=0.07)
    uncalibrated = await daemon.request("contextd/session/context", {"sessionId": session})
    assert abs(uncalibrated["tokens"] - provider_says) <= 0.07 * provider_says

    await daemon.stop()
    restarted = await make_daemon(data_dir=tmp_path / "data", settings=settings)
    reopened = await restarted.request("contextd/session/open", {"sessionId": session})
    assert reopened["usage"]["tokens"] == compacted["tokensAfter"]
    assert reopened["usage"]["calibration"] == usage["calibration"]


async def test_openai_models_are_counted_exactly_and_never_calibrated(daemon):
    session = (await daemon.open_session(model="gpt-4o"))["sessionId"]
    appended = await daemon.request(
        "contextd/session/append", {"sessionId": session, "messages": coding_turn(0)[:3]}
    )
    assert appended["usage"]["source"] == "counted"
    assert appended["usage"]["calibration"] == 1.0


async def test_an_overflow_always_makes_room(make_daemon):
    """A 40k window; after a manual compaction the context fits in keepRecentTokens (8000) by
    our count, yet the provider says it overflows: the overflow compaction keeps less."""
    settings = {
        "defaultModel": "tiny-model",
        "models": {"tiny-model": {"contextWindow": 40_000, "maxOutputTokens": 4_000}},
        "compaction": {"keepRecentTokens": 8_000, "reserveTokens": 4_000},
        "pruning": {"enabled": False},
    }
    daemon = await make_daemon(settings=settings)
    session = (await daemon.open_session())["sessionId"]
    for turn in range(10):
        await daemon.request(
            "contextd/session/append", {"sessionId": session, "messages": coding_turn(turn)}
        )
    manual = await daemon.request("contextd/compact", {"sessionId": session})
    await daemon.request("contextd/session/append", {"sessionId": session, "messages": [user("go on")]})
    fits = await daemon.error_of("contextd/compact", {"sessionId": session, "dryRun": True})
    assert fits.code == -32005  # by our count, a compaction would change nothing

    await daemon.request(
        "contextd/session/append",
        {
            "sessionId": session,
            "messages": [
                assistant(
                    "",
                    stop="error",
                    errorKind="context_overflow",
                    errorMessage="prompt is too long: 41000 tokens > 40000 maximum",
                )
            ],
        },
    )

    finished = await daemon.wait_for("contextd/compactionFinished", sessionId=session, reason="overflow")
    assert finished["outcome"] == "compacted"
    assert finished["willRetry"] is True
    assert finished["tokensAfter"] < manual["tokensAfter"]
    context = await daemon.request("contextd/session/context", {"sessionId": session})
    assert context["messages"][-1]["content"] == "go on"  # the failed answer left the context
