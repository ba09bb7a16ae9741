"""The summarizer the daemon uses: the configured provider with retries, then the fallbacks.

`build_summarizer(settings)` gives a `SummarizerChain`. Its `summarize` satisfies the
`Summarizer` protocol; `summarize_with_info` also says which provider and model wrote the
summary (after a fallback it is not the configured one), for the compaction entry's
`summarizer{provider, model}`.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import random
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from functools import partial

from contextd.model import PreserveData, Provider, SummarizerInfo, SummarizerSettings
from contextd.summarizers.base import (
    PreservedSummary,
    Summarizer,
    SummarizerError,
    SummaryRequest,
)
from contextd.summarizers.errors import ProviderError, SummarizerFailed

log = logging.getLogger(__name__)

WRITES_OWN_TRAIL = frozenset({"offline", "openai-native"})
"""The extractive summarizer writes the trail into its own checkpoint (openai-native's readable
summary is that checkpoint: the API's own state is encrypted)."""
DEFAULT_BASE_DELAY = 0.5
DEFAULT_MAX_DELAY = 8.0
JITTER = 0.25
"""Each backoff is shortened by up to this fraction, at random, so that clients that failed
together do not all retry at the same moment (the SDKs' own policy)."""
Deadline = Callable[[float], AbstractAsyncContextManager[object]]
"""Bounds one attempt's wait for the provider's answer to its seconds, raising TimeoutError
when they pass (`asyncio.timeout`; a test passes one that fires on an event instead of the
clock of a loaded machine). It reaches the provider as the request's `answer_deadline`."""
MAX_RETRY_AFTER = 60.0
"""The longest wait a provider's `retry-after` gets before a retry; asked for longer, the
chain falls back instead of holding the compaction."""

_PROVIDERS: dict[str, tuple[str, str]] = {
    "offline": ("contextd.summarizers.offline", "OfflineSummarizer"),
    "anthropic": ("contextd.summarizers.anthropic", "AnthropicSummarizer"),
    "openai": ("contextd.summarizers.openai", "OpenAISummarizer"),
    "remote": ("contextd.summarizers.remote", "RemoteSummarizer"),
    "anthropic-native": ("contextd.summarizers.anthropic_native", "AnthropicNativeSummarizer"),
    "openai-native": ("contextd.summarizers.openai_native", "OpenAINativeSummarizer"),
}
NATIVE_SUFFIX = "-native"


@dataclass(frozen=True)
class Summary:
    text: str
    summarizer: SummarizerInfo
    """Who wrote `text`: the provider (and model) that succeeded."""
    preserve_data: PreserveData | None = field(default=None, repr=False)
    """A provider-native compaction's opaque state, for the compaction entry."""


class SummarizerChain:
    """Tries each summarizer in order; a retryable failure is retried first, after the wait
    the provider asked for (`retry-after`) or a jittered doubling backoff. An attempt that
    timed out is retried with twice the time: the answer may have been on its way, and the
    same deadline would lose it (and its cost) again."""

    def __init__(
        self,
        summarizers: Sequence[Summarizer],
        *,
        max_retries: int,
        timeout_seconds: float,
        base_delay: float = DEFAULT_BASE_DELAY,
        max_delay: float = DEFAULT_MAX_DELAY,
        deadline: Deadline = asyncio.timeout,
    ) -> None:
        if not summarizers:
            raise ValueError("a chain needs at least one summarizer")
        self.summarizers = tuple(summarizers)
        self.provider = summarizers[0].provider
        self.model = summarizers[0].model
        self._max_retries = max_retries
        self._timeout = timeout_seconds
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._deadline = deadline

    async def summarize(self, request: SummaryRequest) -> str:
        return (await self.summarize_with_info(request)).text

    async def summarize_with_info(self, request: SummaryRequest) -> Summary:
        failures: list[ProviderError] = []
        for summarizer in self.summarizers:
            try:
                answer = await self._with_retries(summarizer, request)
            except ProviderError as failure:
                log.warning("summarizer %s", failure)
                failures.append(failure)
                continue
            if failures:
                log.info("summary written by fallback %s", summarizer.provider)
            text, preserve_data = (
                (answer.text, answer.preserve_data) if isinstance(answer, PreservedSummary) else (answer, None)
            )
            if summarizer.provider not in WRITES_OWN_TRAIL:
                # A model's summary forgets commands and their outcomes: code appends them,
                # off the loop, since reading them scans the whole span.
                from contextd.summarizers.trail import with_artifact_trail  # large: on first use

                text = await asyncio.to_thread(with_artifact_trail, text, request)
            info = SummarizerInfo(provider=summarizer.provider, model=summarizer.model)
            return Summary(text, info, preserve_data)
        raise SummarizerFailed(failures)

    async def _with_retries(self, summarizer: Summarizer, request: SummaryRequest) -> str | PreservedSummary:
        attempts = 1 + self._max_retries
        timeout = self._timeout
        for attempt in range(1, attempts + 1):
            try:
                return await self._attempt(summarizer, request, timeout)
            except ProviderError as failure:
                delay = self.delay_after(failure, attempt)
                if delay is None or attempt == attempts:
                    raise failure.after_attempts(attempt) from None
                if failure.timed_out:
                    timeout *= 2
                log.warning(
                    "summarizer %s; retry %d of %d in %.2fs",
                    failure, attempt, self._max_retries, delay,
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _attempt(
        self, summarizer: Summarizer, request: SummaryRequest, timeout: float
    ) -> str | PreservedSummary:
        provider = summarizer.provider
        # The deadline of the whole answer (the SDKs' timeouts bound each read only), over
        # the provider's HTTP exchange alone: see SummaryRequest.answer_deadline.
        bounded = replace(request, answer_deadline=partial(self._deadline, timeout))
        try:
            answer = await summarizer.summarize(bounded)
        except TimeoutError:
            raise ProviderError(
                provider, f"no answer within {timeout:g}s", retryable=True, timed_out=True
            ) from None
        except ProviderError:
            raise
        except SummarizerError as exc:
            raise ProviderError(provider, str(exc), retryable=False) from None
        except Exception as exc:
            # A bug or an SDK surprise must fail this provider, not the daemon.
            log.exception("summarizer %s raised unexpectedly", provider)
            raise ProviderError(provider, f"unexpected {type(exc).__name__}", retryable=False) from None
        text = answer.text if isinstance(answer, PreservedSummary) else answer
        if not isinstance(text, str) or not text.strip():
            raise ProviderError(provider, "malformed reply: empty summary", retryable=False)
        return answer

    def delay_after(self, failure: ProviderError, attempt: int) -> float | None:
        """Seconds to wait before retrying after `failure` of attempt `attempt`, or None when
        it is not worth retrying (or the provider asks for a longer wait than we hold)."""
        if not failure.retryable:
            return None
        if failure.retry_after is not None:
            return failure.retry_after if failure.retry_after <= MAX_RETRY_AFTER else None
        return self.backoff(attempt)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based): doubling, capped,
        less a random part of up to JITTER of it."""
        return min(self._max_delay, self._base_delay * 2 ** (attempt - 1)) * (1 - JITTER * random.random())


def build_summarizer(
    settings: SummarizerSettings,
    *,
    base_delay: float = DEFAULT_BASE_DELAY,
    max_delay: float = DEFAULT_MAX_DELAY,
    deadline: Deadline = asyncio.timeout,
) -> SummarizerChain:
    """The configured provider followed by `settings.fallback`, each tried once in order."""
    providers: list[Provider] = list(dict.fromkeys([settings.provider, *settings.fallback]))
    return SummarizerChain(
        [make_summarizer(name, _settings_for(name, settings)) for name in providers],
        max_retries=settings.maxRetries,
        timeout_seconds=settings.timeoutSeconds,
        base_delay=base_delay,
        max_delay=max_delay,
        deadline=deadline,
    )


def make_summarizer(provider: Provider, settings: SummarizerSettings) -> Summarizer:
    """One provider's summarizer, no retries. Imported on demand: an SDK takes seconds to
    import and a daemon that summarizes offline never needs one."""
    module, name = _PROVIDERS[provider]
    summarizer: Summarizer = getattr(importlib.import_module(module), name)(settings)
    return summarizer


def _settings_for(provider: Provider, settings: SummarizerSettings) -> SummarizerSettings:
    """Model, baseUrl and apiKeyEnv describe the configured provider and its vendor's other
    summarizer (`anthropic-native` falling back to `anthropic`); a fallback of another vendor
    gets its own defaults instead (an Anthropic model name means nothing to OpenAI)."""
    if _vendor(provider) == _vendor(settings.provider):
        return settings.model_copy(update={"provider": provider})
    return settings.model_copy(
        update={"provider": provider, "model": None, "baseUrl": None, "apiKeyEnv": None}
    )


def _vendor(provider: Provider) -> str:
    return provider.removesuffix(NATIVE_SUFFIX)
