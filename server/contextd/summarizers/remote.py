"""Summaries from a user's own service: POST {systemPrompt, prompt, maxTokens}, read {summary}.

HTTP goes through `httpx2`, the client the anthropic and openai SDKs depend on here
(pyproject: it arrives with them; list `httpx2` explicitly if the SDKs ever drop it).
"""

from __future__ import annotations

import httpx2

from contextd.model import SummarizerSettings
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.credentials import api_key_from_env
from contextd.summarizers.errors import ProviderError, malformed_reply, status_error


class RemoteSummarizer:
    provider = "remote"

    def __init__(self, settings: SummarizerSettings) -> None:
        self.model: str | None = settings.model
        self._endpoint = settings.remoteEndpoint
        self._api_key_env = settings.apiKeyEnv

    async def summarize(self, request: SummaryRequest) -> str:
        if not self._endpoint:
            raise ProviderError(
                self.provider, "summarizer.remoteEndpoint is not set", retryable=False
            )
        key = api_key_from_env(self.provider, self._api_key_env) if self._api_key_env else None
        headers = {"authorization": f"Bearer {key}"} if key else {}
        payload = {
            "systemPrompt": request.system_prompt,
            "prompt": request.prompt,
            "maxTokens": request.max_tokens,
        }
        try:
            # No timeout of httpx's own: the chain's deadline bounds the whole answer.
            async with httpx2.AsyncClient(timeout=None) as client, request.answer_deadline():
                response = await client.post(self._endpoint, json=payload, headers=headers)
        except httpx2.TransportError:
            raise ProviderError(
                self.provider, "cannot reach the endpoint (connection failed)", retryable=True
            ) from None
        if response.status_code >= 400:
            raise status_error(
                self.provider, response.status_code, _json_or_text(response), key, response.headers
            )
        return _summary_of(response)


def _json_or_text(response: httpx2.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return response.text


def _summary_of(response: httpx2.Response) -> str:
    body = _json_or_text(response)
    summary = body.get("summary") if isinstance(body, dict) else None
    if not isinstance(summary, str) or not summary.strip():
        raise malformed_reply(RemoteSummarizer.provider, "no `summary` text in the answer")
    return summary
