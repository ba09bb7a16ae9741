"""How a provider failed, in words that are safe to show and log (never a key)."""

from __future__ import annotations

import base64
import email.utils
import json
import re
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import ModuleType

from contextd.summarizers.base import SummarizerError

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Besides every 5xx: a request timeout, a conflict and a rate limit are worth another try."""

MAX_DETAIL_CHARS = 300


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


REDACTED = "[redacted]"
SECRET_FRAGMENT_CHARS = 8
"""Any run of this many characters of a key (or of its encodings) is redacted."""

_known_secrets: set[str] = set()


def remember_secret(secret: str) -> None:
    """A key this process has read: from now on it is redacted from every error and log."""
    if secret:
        _known_secrets.add(secret)


def secret_forms(secret: str) -> list[str]:
    """The key and the encodings servers and libraries echo it in: UTF-8 percent-encoding,
    JSON escapes, hex, and base64 at each of the three alignments it can have inside a longer
    base64 string (an HTTP Basic credential). They are matched without regard to case, so
    the key in upper case, upper-case hex and lower-case escapes (`%2f` for `/`) are caught
    too."""
    forms = [secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)]
    forms.append(json.dumps(secret)[1:-1])
    forms.append(secret.encode("unicode_escape").decode("ascii"))
    raw = secret.encode("utf-8")
    forms.append(raw.hex())
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
            forms.append(encoded[(offset * 4 + 2) // 3 + (1 if offset else 0):])
    return [form for form in forms if form]


def redact(text: str, secret: str | None = None) -> str:
    """`text` without any fragment of `secret` or of a key read earlier: servers echo the
    key they refused, truncated or encoded."""
    secrets = set(_known_secrets)
    if secret:
        secrets.add(secret)
    if not secrets or not text:
        return text
    return _without_fragments(text, secrets)


def _without_fragments(text: str, secrets: Iterable[str]) -> str:
    size = SECRET_FRAGMENT_CHARS
    grams: set[str] = set()
    for secret in secrets:
        if len(secret) < size:
            text = re.sub(re.escape(secret), REDACTED, text, flags=re.IGNORECASE)
            continue
        for form in secret_forms(secret):
            folded = form.lower()
            grams.update(folded[i : i + size] for i in range(len(folded) - size + 1))
    covered = [False] * len(text)
    for start in range(len(text) - size + 1):
        if text[start : start + size].lower() in grams:
            covered[start : start + size] = [True] * size
    if not any(covered):
        return text
    pieces: list[str] = []
    for index, char in enumerate(text):
        if not covered[index]:
            pieces.append(char)
        elif index == 0 or not covered[index - 1]:
            pieces.append(REDACTED)
    return "".join(pieces)


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
    """One provider's attempt failed; `retryable` says whether trying again may help,
    `retry_after` how long the provider asked to wait first, `timed_out` that no answer came
    in time (a paid call that may still be running: the next try gets longer)."""

    def __init__(
        self,
        provider: str,
        detail: str,
        *,
        retryable: bool,
        status: int | None = None,
        secret: str | None = None,
        retry_after: float | None = None,
        timed_out: bool = False,
    ) -> None:
        detail = redact(detail, secret)[:MAX_DETAIL_CHARS]
        self.provider = provider
        self.detail = detail
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.timed_out = timed_out
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


def status_error(
    provider: str,
    status: int,
    body: object,
    secret: str | None,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The error for an HTTP error answer: retryable for 408/409/429 and 5xx unless the
    provider's `x-should-retry` header says otherwise, after the wait its `retry-after-ms`
    or `retry-after` asks for."""
    headers = headers or {}
    detail = body_message(body).strip() or "the provider refused the request"
    return ProviderError(
        provider,
        detail,
        retryable=should_retry(status, headers),
        status=status,
        secret=secret,
        retry_after=retry_after_seconds(headers),
    )


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """What the provider's `x-should-retry` says (both vendors send it), else the status."""
    verdict = (headers.get("x-should-retry") or "").strip().lower()
    if verdict in ("true", "false"):
        return verdict == "true"
    return is_retryable_status(status)


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a provider asks for: `retry-after-ms`, else `retry-after` in seconds or as an
    HTTP date; None when it names none (or nonsense, or a moment past)."""
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = (headers.get("retry-after") or "").strip()
    seconds = _number(value)
    if seconds is None and value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now) if when.tzinfo else None
    return seconds if seconds is not None and seconds >= 0 else None


def _number(value: str | None) -> float | None:
    try:
        number = float((value or "").strip())
    except ValueError:
        return None
    return number if number == number and number >= 0 else None  # not NaN, not negative


def malformed_reply(provider: str, what: str) -> ProviderError:
    """A reply without a usable summary: the provider answered, so retrying will not help."""
    return ProviderError(provider, f"malformed reply: {what}", retryable=False)


def cut_short(provider: str, max_tokens: int) -> ProviderError:
    """A summary the output limit cut (`max_tokens`, `length`): its end, often the next
    steps, is missing. The same request would be cut again, so the fallbacks take over."""
    return ProviderError(
        provider, f"the summary was cut short at its limit of {max_tokens:,} output tokens", retryable=False
    )


@contextmanager
def sdk_failures(sdk: ModuleType, provider: str, key: str | None) -> Iterator[None]:
    """Turns a failure of an official SDK call (`anthropic` or `openai`: their errors have
    the same names) into the ProviderError the chain retries or falls back on."""
    try:
        yield
    except sdk.APIStatusError as exc:
        raise status_error(provider, exc.status_code, exc.body, key, exc.response.headers) from None
    except sdk.APIConnectionError:
        raise ProviderError(provider, "cannot reach the API (connection failed)", retryable=True) from None
    except (sdk.APIError, ValueError) as exc:
        raise malformed_reply(provider, type(exc).__name__) from None
