"""Anthropic's server-side compaction as a summarizer: the Messages API (beta) with the
`compact_20260112` context-management edit, through the official SDK.

The conversation is sent as one user turn, the serialized transcript and the checkpoint
task, as the anthropic summarizer sends it but with tool outputs whole: the API reads all
of what it compacts, and compacts only from 50,000 input tokens. Our system prompt is the
compaction's instructions, and the API pauses right after compacting: its readable
`compaction` block is the summary. Below the trigger the API would answer the prompt in
full instead, so the conversation is counted first (the free token-counting endpoint) and
a shorter one fails at once, for the chain to fall back. A reply without the block (a
compaction that produced nothing) is a failure too.
"""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic.types.beta import BetaCompact20260112EditParam

from contextd.compaction.request import with_conversation
from contextd.compaction.serialize import serialize_conversation
from contextd.model import SummarizerSettings
from contextd.summarizers.anthropic import AnthropicSummarizer
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.errors import ProviderError, malformed_reply, sdk_failures

DEFAULT_MODEL = "claude-sonnet-4-6"
"""Compaction needs a model that supports it (Sonnet 4.6, Opus 4.6 and later)."""
COMPACT_BETA = "compact-2026-01-12"
MIN_TRIGGER_TOKENS = 50_000
"""The lowest trigger the API accepts: compact whenever it allows."""


class AnthropicNativeSummarizer(AnthropicSummarizer):
    provider = "anthropic-native"

    def __init__(self, settings: SummarizerSettings) -> None:
        super().__init__(settings)
        self.model = settings.model or DEFAULT_MODEL

    async def summarize(self, request: SummaryRequest) -> str:
        key = self._key()
        edit: BetaCompact20260112EditParam = {
            "type": "compact_20260112",
            "trigger": {"type": "input_tokens", "value": MIN_TRIGGER_TOKENS},
            "pause_after_compaction": True,
            "instructions": request.system_prompt,  # replaces the API's own summary prompt
        }
        model = self.model or DEFAULT_MODEL
        messages: list[Any] = [{"role": "user", "content": whole_prompt(request)}]
        with sdk_failures(anthropic, self.provider, key, self._timeout):
            async with self._client(key) as client:
                counted = await client.beta.messages.count_tokens(model=model, messages=messages)
                _require_trigger(getattr(counted, "input_tokens", None))
                message = await client.beta.messages.create(
                    model=model,
                    messages=messages,
                    max_tokens=request.max_tokens,
                    betas=[COMPACT_BETA],
                    context_management={"edits": [edit]},
                )
        return _compaction_text(message)


def whole_prompt(request: SummaryRequest) -> str:
    """The request's prompt with the tool outputs it shortened given whole."""
    return with_conversation(
        serialize_conversation(request.messages, tool_text_max_chars=None), request.task
    )


def _require_trigger(input_tokens: object) -> None:
    """Fail at once, before paying for an answer, when the API would not compact."""
    if not isinstance(input_tokens, int):
        raise malformed_reply(
            AnthropicNativeSummarizer.provider, "no input_tokens in the token count"
        )
    if input_tokens < MIN_TRIGGER_TOKENS:
        raise ProviderError(
            AnthropicNativeSummarizer.provider,
            f"{input_tokens:,} input tokens, under the {MIN_TRIGGER_TOKENS:,} from which the API compacts",
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
