"""Summaries from OpenAI's chat completions API, or any server that speaks it
(Ollama, vLLM, llama.cpp) through `summarizer.baseUrl`, with the official SDK."""

from __future__ import annotations

from typing import Any

import openai

from contextd.model import SummarizerSettings
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.credentials import api_key_from_env, key_variable
from contextd.summarizers.errors import cut_short, malformed_reply, sdk_failures

DEFAULT_MODEL = "gpt-5.4-mini"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
LOCAL_SERVER_KEY = "not-needed"
"""Local OpenAI-compatible servers ignore the key, but the SDK insists on one."""


class OpenAIConnection:
    """How every OpenAI summarizer reaches the API: its key and server."""

    provider: str

    def __init__(self, settings: SummarizerSettings) -> None:
        self._base_url = settings.baseUrl
        self._official = settings.baseUrl is None
        self._api_key_env = key_variable(settings, DEFAULT_API_KEY_ENV)

    def _key(self) -> str:
        if self._api_key_env:
            return api_key_from_env(self.provider, self._api_key_env)
        return LOCAL_SERVER_KEY

    def _client(self, key: str) -> openai.AsyncOpenAI:
        # The chain retries with its own policy; SDK retries would multiply the attempts.
        # No timeout of the SDK's own: the chain's deadline bounds the whole answer, and grows
        # when an attempt runs out of time (the SDK's would cut a longer retry short).
        return openai.AsyncOpenAI(api_key=key, base_url=self._base_url, timeout=None, max_retries=0)


class OpenAISummarizer(OpenAIConnection):
    provider = "openai"

    def __init__(self, settings: SummarizerSettings) -> None:
        super().__init__(settings)
        self.model: str | None = settings.model or DEFAULT_MODEL

    async def summarize(self, request: SummaryRequest) -> str:
        key = self._key()
        with sdk_failures(openai, self.provider, key):
            async with self._client(key) as client, request.answer_deadline():
                completion = await client.chat.completions.create(
                    model=self.model or DEFAULT_MODEL,
                    messages=[
                        {"role": "system", "content": request.system_prompt},
                        {"role": "user", "content": request.prompt},
                    ],
                    # OpenAI's reasoning models refuse `max_tokens`; compatible servers all know it.
                    max_tokens=openai.omit if self._official else request.max_tokens,
                    max_completion_tokens=request.max_tokens if self._official else openai.omit,
                )
        return _text_of(completion, request.max_tokens)


def _text_of(completion: Any, max_tokens: int) -> str:
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise malformed_reply(OpenAISummarizer.provider, "no choices")
    if getattr(choices[0], "finish_reason", None) == "length":
        raise cut_short(OpenAISummarizer.provider, max_tokens)
    text = getattr(getattr(choices[0], "message", None), "content", None)
    if not isinstance(text, str) or not text.strip():
        raise malformed_reply(OpenAISummarizer.provider, "no text in the answer")
    return text
