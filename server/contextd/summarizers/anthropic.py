"""Summaries from Anthropic's Messages API through the official SDK."""

from __future__ import annotations

from typing import Any

import anthropic

from contextd.model import SummarizerSettings
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.credentials import api_key_from_env
from contextd.summarizers.errors import malformed_reply, sdk_failures

DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_API_KEY_ENV = "ANTHROPIC_API_KEY"


class AnthropicSummarizer:
    provider = "anthropic"

    def __init__(self, settings: SummarizerSettings) -> None:
        self.model: str | None = settings.model or DEFAULT_MODEL
        self._base_url = settings.baseUrl
        self._api_key_env = settings.apiKeyEnv or DEFAULT_API_KEY_ENV
        self._timeout = settings.timeoutSeconds

    async def summarize(self, request: SummaryRequest) -> str:
        key = api_key_from_env(self.provider, self._api_key_env)
        with sdk_failures(anthropic, self.provider, key, self._timeout):
            async with self._client(key) as client:
                message = await client.messages.create(
                    model=self.model or DEFAULT_MODEL,
                    system=request.system_prompt,
                    messages=[{"role": "user", "content": request.prompt}],
                    max_tokens=request.max_tokens,
                )
        return _text_of(message)

    def _client(self, key: str) -> anthropic.AsyncAnthropic:
        # The chain retries with its own policy; SDK retries would multiply the attempts.
        return anthropic.AsyncAnthropic(
            api_key=key, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )


def _text_of(message: Any) -> str:
    blocks = getattr(message, "content", None)
    if not isinstance(blocks, list):
        raise malformed_reply(AnthropicSummarizer.provider, "no content")
    text = "".join(
        block.text
        for block in blocks
        if getattr(block, "type", None) == "text" and isinstance(getattr(block, "text", None), str)
    )
    if not text.strip():
        raise malformed_reply(AnthropicSummarizer.provider, "no text in the answer")
    return text
