"""Summaries from Anthropic's Messages API through the official SDK."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import anthropic

from contextd.model import SummarizerSettings
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.credentials import api_key_from_env, key_variable
from contextd.summarizers.errors import cut_short, malformed_reply, sdk_failures

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_API_KEY_ENV = "ANTHROPIC_API_KEY"
NO_KEY = "no-key"
"""Given to the SDK for a server that gets no key; its header is omitted, so never sent."""


class AnthropicSummarizer:
    provider = "anthropic"

    def __init__(self, settings: SummarizerSettings) -> None:
        self.model: str | None = settings.model or DEFAULT_MODEL
        self._base_url = settings.baseUrl
        self._api_key_env = key_variable(settings, DEFAULT_API_KEY_ENV)

    async def summarize(self, request: SummaryRequest) -> str:
        key = self._key()
        with sdk_failures(anthropic, self.provider, key):
            async with self._client(key) as client, request.answer_deadline():
                message = await client.messages.create(
                    model=self.model or DEFAULT_MODEL,
                    system=request.system_prompt,
                    messages=[{"role": "user", "content": request.prompt}],
                    max_tokens=request.max_tokens,
                )
        return _text_of(message, request.max_tokens)

    def _key(self) -> str | None:
        return api_key_from_env(self.provider, self._api_key_env) if self._api_key_env else None

    def _client(self, key: str | None) -> anthropic.AsyncAnthropic:
        # The chain retries with its own policy; SDK retries would multiply the attempts.
        # No timeout of the SDK's own: the chain's deadline bounds the whole answer, and grows
        # when an attempt runs out of time (the SDK's would cut a longer retry short).
        if key is not None:
            return anthropic.AsyncAnthropic(
                api_key=key, base_url=self._base_url, timeout=None, max_retries=0
            )
        # No key: the SDK would otherwise take ANTHROPIC_API_KEY, a profile or a federation
        # token from the environment. A placeholder stops that search, and omitting the
        # header it would fill sends nothing.
        return anthropic.AsyncAnthropic(
            api_key=NO_KEY,
            # The SDK merges header layers honouring `omit` (its own type says str only).
            default_headers=cast(Mapping[str, str], {"Authorization": anthropic.omit, "X-Api-Key": anthropic.omit}),
            base_url=self._base_url,
            timeout=None,
            max_retries=0,
        )


def _text_of(message: Any, max_tokens: int) -> str:
    blocks = getattr(message, "content", None)
    if not isinstance(blocks, list):
        raise malformed_reply(AnthropicSummarizer.provider, "no content")
    if getattr(message, "stop_reason", None) == "max_tokens":
        raise cut_short(AnthropicSummarizer.provider, max_tokens)
    text = "".join(
        block.text
        for block in blocks
        if getattr(block, "type", None) == "text" and isinstance(getattr(block, "text", None), str)
    )
    if not text.strip():
        raise malformed_reply(AnthropicSummarizer.provider, "no text in the answer")
    return text
