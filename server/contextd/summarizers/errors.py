"""How a provider failed, in words that are safe to show and log (never a key)."""

from __future__ import annotations

from collections.abc import Sequence

from contextd.summarizers.base import SummarizerError

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Besides every 5xx: a request timeout, a conflict and a rate limit are worth another try."""

MAX_DETAIL_CHARS = 300


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


def redact(text: str, secret: str | None) -> str:
    """`text` without `secret`: servers sometimes echo the key they refused."""
    if secret:
        text = text.replace(secret, "[redacted]")
    return text


def body_message(body: object) -> str:
    """The human part of an error body: `{"error": {"message"}}`, `{"message"}` or `{"error"}`."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            inner = inner.get("message")
        if isinstance(inner, str):
            return inner
        return ""
    return body if isinstance(body, str) else ""


class ProviderError(SummarizerError):
    """One provider's attempt failed; `retryable` says whether trying again may help."""

    def __init__(
        self,
        provider: str,
        detail: str,
        *,
        retryable: bool,
        status: int | None = None,
        secret: str | None = None,
    ) -> None:
        detail = redact(detail, secret)[:MAX_DETAIL_CHARS]
        self.provider = provider
        self.detail = detail
        self.retryable = retryable
        self.status = status
        self.attempts = 1
        super().__init__(self.describe())

    def describe(self) -> str:
        status = f"HTTP {self.status}: " if self.status is not None else ""
        tries = f" (after {self.attempts} attempts)" if self.attempts > 1 else ""
        return f"{self.provider}: {status}{self.detail}{tries}"

    def after_attempts(self, attempts: int) -> ProviderError:
        self.attempts = attempts
        self.args = (self.describe(),)
        return self


class SummarizerFailed(SummarizerError):
    """Every provider of the chain failed; `provider` is the configured (first) one."""

    def __init__(self, failures: Sequence[ProviderError]) -> None:
        self.failures = tuple(failures)
        self.provider = failures[0].provider
        super().__init__("summarizer failed: " + "; then ".join(f.describe() for f in failures))


def status_error(provider: str, status: int, body: object, secret: str | None) -> ProviderError:
    """The error for an HTTP error answer: retryable for 408/409/429 and 5xx."""
    detail = body_message(body).strip() or "the provider refused the request"
    return ProviderError(
        provider, detail, retryable=is_retryable_status(status), status=status, secret=secret
    )


def malformed_reply(provider: str, what: str) -> ProviderError:
    """A reply without a usable summary: the provider answered, so retrying will not help."""
    return ProviderError(provider, f"malformed reply: {what}", retryable=False)
