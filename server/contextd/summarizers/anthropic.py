"""Summaries from Anthropic's Messages API through the official SDK."""

from __future__ import annotations

from typing import Any

import anthropic

from contextd.model import SummarizerSettings
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.credentials import api_key_from_env
from contextd.summarizers.errors import ProviderError, malformed_reply, status_error

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
        # The chain retries with its own policy; SDK retries would multiply the attempts.
        client = anthropic.AsyncAnthropic(
            api_key=key, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )
        try:
            async with client:
                message = await client.messages.create(
                    model=self.model or DEFAULT_MODEL,
                    system=request.system_prompt,
                    messages=[{"role": "user", "content": request.prompt}],
                    max_tokens=request.max_tokens,
                )
        except anthropic.APIStatusError as exc:
            raise status_error(self.provider, exc.status_code, exc.body, key) from None
        except anthropic.APITimeoutError:
            raise ProviderError(
                self.provider, f"no answer within {self._timeout:g}s", retryable=True
            ) from None
        except anthropic.APIConnectionError:
            raise ProviderError(
                self.provider, "cannot reach the API (connection failed)", retryable=True
            ) from None
        except (anthropic.APIError, ValueError) as exc:
            raise malformed_reply(self.provider, type(exc).__name__) from None
        return _text_of(message)


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
