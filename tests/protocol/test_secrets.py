"""Case 8: no fragment of an API key, plain or encoded, in errors or logs."""

from __future__ import annotations

import base64
import logging
import urllib.parse

from contextd.cli import HTTP_LOGGERS, configure_logging
from contextd.summarizers.errors import ProviderError, redact, remember_secret

KEY = "sk-test-Zq81xWv0Lmn4RtY7pQ2s-ÄÖ"


def echoes(key: str) -> list[tuple[str, int]]:
    """Ways a server echoes a key, and where in each the key's own characters begin."""
    return [
        (key, 0),
        (key[:-1], 0),  # the key without its last character
        (key[3:19], 0),
        (base64.b64encode(key.encode()).decode(), 0),
        (base64.b64encode(f"user:{key}".encode()).decode(), 8),  # HTTP Basic: "user:" is no secret
        (urllib.parse.quote(key), 0),
        (urllib.parse.quote_plus(key), 0),
    ]


def test_every_fragment_and_encoding_of_the_key_is_redacted():
    for echo, key_from in echoes(KEY):
        text = redact(f"401: invalid x-api-key {echo} (check it)", KEY)
        assert "[redacted]" in text
        for start in range(key_from, len(echo) - 9):
            assert echo[start : start + 8] not in text, (echo, text)
        assert text.startswith("401: invalid x-api-key ") and text.endswith(" (check it)")


def test_text_without_the_key_is_left_alone():
    assert redact("HTTP 429: slow down, sk-other-key-entirely", KEY) == "HTTP 429: slow down, sk-other-key-entirely"


def test_provider_errors_redact_keys_read_before_even_when_not_told(caplog):
    remember_secret(KEY)
    error = ProviderError("anthropic", f"bad header value {KEY[:-2]!r}", retryable=False)
    assert KEY[:8] not in str(error) and KEY[4:12] not in str(error)


def test_logs_are_redacted_and_http_headers_silent_even_at_debug(capsys):
    remember_secret(KEY)
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = []
    try:
        configure_logging("DEBUG")
        logging.getLogger("contextd.test").warning("server said %s", base64.b64encode(KEY.encode()).decode())
        for name in HTTP_LOGGERS:
            logging.getLogger(name).debug("response headers: x-api-key: %s", KEY)
        try:
            raise ValueError(f"echo {KEY}")
        except ValueError:
            logging.getLogger("contextd.test").exception("failed")
    finally:
        root.handlers = saved
    log = capsys.readouterr().err
    assert "server said [redacted]" in log
    assert "response headers" not in log
    assert "failed" in log and KEY[:8] not in log and "echo [redacted]" in log
