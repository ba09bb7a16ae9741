"""Anthropic's server-side compaction as a summarizer, through the official SDK: on demand
(the Messages API's `compaction: {type: "summarize"}`, beta `compact-2026-09-04`) when the
model takes it, else the `compact_20260112` context-management edit (beta
`compact-2026-01-12`), which compacts only past its input-token trigger.

The conversation is sent as one user turn, the serialized transcript and the checkpoint
task, as the anthropic summarizer sends it but with tool outputs whole: the API reads all
of what it compacts. Our system prompt is the compaction's instructions, and the API stops
right after compacting: its readable `compaction` block is the summary. A reply without the
block (a compaction that produced nothing) is a failure.

Before any paid request, two free ones: the model's description (its input limit, and
whether it takes on-demand compaction; a server without it, a proxy, gets neither) and the
conversation's token count. A conversation over the model's input limit fails at once (the
API would refuse it, 400). With the edit, the count is an estimate and the API decides by
its own: near the 50,000-token trigger it may answer the prompt in full instead of
compacting, so a conversation without a margin above the trigger fails at once too. Either
failure is not retried: the chain's fallbacks take over.
"""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic.types.beta import BetaCompact20260112EditParam, BetaCompactionConfigParam

from contextd.compaction.request import with_conversation
from contextd.compaction.serialize import serialize_conversation
from contextd.model import SummarizerSettings
from contextd.summarizers.anthropic import AnthropicSummarizer
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.errors import ProviderError, malformed_reply, sdk_failures

DEFAULT_MODEL = "claude-sonnet-4-6"
"""Compaction needs a model that supports it (Sonnet 4.6, Opus 4.6 and later)."""
COMPACT_BETA = "compact-2026-01-12"
ON_DEMAND_BETA = "compact-2026-09-04"
MIN_TRIGGER_TOKENS = 50_000
"""The lowest trigger the API accepts: compact whenever it allows."""
TRIGGER_MARGIN = 1.1
"""How far over the trigger the estimated count must be for the edit to be asked: the
count endpoint estimates, the API compacts by its own count."""


class AnthropicNativeSummarizer(AnthropicSummarizer):
    provider = "anthropic-native"

    def __init__(self, settings: SummarizerSettings) -> None:
        super().__init__(settings)
        self.model = settings.model or DEFAULT_MODEL

    async def summarize(self, request: SummaryRequest) -> str:
        key = self._key()
        model = self.model or DEFAULT_MODEL
        messages: list[Any] = [{"role": "user", "content": whole_prompt(request)}]
        with sdk_failures(anthropic, self.provider, key):
            async with self._client(key) as client, request.answer_deadline():
                described = await _model_description(client, model)
                counted = await client.beta.messages.count_tokens(model=model, messages=messages)
                tokens = _input_tokens(counted)
                _require_within_limit(tokens, getattr(described, "max_input_tokens", None))
                if _compacts_on_demand(described):
                    on_demand: BetaCompactionConfigParam = {
                        "type": "summarize",
                        "instructions": request.system_prompt,  # replaces the API's own prompt
                    }
                    message = await client.beta.messages.create(
                        model=model,
                        messages=messages,
                        max_tokens=request.max_tokens,
                        betas=[ON_DEMAND_BETA],
                        compaction=on_demand,
                    )
                else:
                    _require_trigger(tokens)
                    message = await client.beta.messages.create(
                        model=model,
                        messages=messages,
                        max_tokens=request.max_tokens,
                        betas=[COMPACT_BETA],
                        context_management={"edits": [_compact_edit(request)]},
                    )
        return _compaction_text(message)


def _compact_edit(request: SummaryRequest) -> BetaCompact20260112EditParam:
    return {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": MIN_TRIGGER_TOKENS},
        "pause_after_compaction": True,
        "instructions": request.system_prompt,  # replaces the API's own summary prompt
    }


async def _model_description(client: anthropic.AsyncAnthropic, model: str) -> Any:
    """The model's description, or None where the server has none (a proxy's 404)."""
    try:
        return await client.beta.models.retrieve(model)
    except anthropic.NotFoundError:
        return None


def _compacts_on_demand(described: Any) -> bool:
    compaction = getattr(getattr(described, "capabilities", None), "compaction", None)
    return bool(getattr(getattr(compaction, "summarize", None), "supported", False))


def whole_prompt(request: SummaryRequest) -> str:
    """The request's prompt with the tool outputs it shortened given whole."""
    return with_conversation(
        serialize_conversation(request.messages, tool_text_max_chars=None), request.task
    )


def _input_tokens(counted: Any) -> int:
    tokens = getattr(counted, "input_tokens", None)
    if not isinstance(tokens, int):
        raise malformed_reply(AnthropicNativeSummarizer.provider, "no input_tokens in the token count")
    return tokens


def _require_within_limit(input_tokens: int, limit: object) -> None:
    """Fail at once, before paying, when the API would refuse the conversation as too long."""
    if isinstance(limit, int) and input_tokens > limit:
        raise ProviderError(
            AnthropicNativeSummarizer.provider,
            f"{input_tokens:,} input tokens, over the model's limit of {limit:,}",
            retryable=False,
        )


def _require_trigger(input_tokens: int) -> None:
    """Fail at once, before paying for an answer, when the API might not compact."""
    least = round(MIN_TRIGGER_TOKENS * TRIGGER_MARGIN)
    if input_tokens < least:
        raise ProviderError(
            AnthropicNativeSummarizer.provider,
            f"{input_tokens:,} input tokens, under the {least:,} from which the API surely compacts"
            f" (its trigger is {MIN_TRIGGER_TOKENS:,}, counted its own way)",
            retryable=False,
        )


def _compaction_text(message: Any) -> str:
    blocks = getattr(message, "content", None)
    if not isinstance(blocks, list):
        raise malformed_reply(AnthropicNativeSummarizer.provider, "no content")
    compactions = [block for block in blocks if getattr(block, "type", None) == "compaction"]
    if not compactions:
        raise malformed_reply(AnthropicNativeSummarizer.provider, "no compaction block")
    text = getattr(compactions[-1], "content", None)
    if not isinstance(text, str) or not text.strip():
        raise malformed_reply(
            AnthropicNativeSummarizer.provider, "the compaction block has no summary"
        )
    return text
