from __future__ import annotations

from collections.abc import Iterator

import pytest
from contextd.model import SummarizerSettings
from contextd.summarizers.base import SummaryRequest

from tests.summarizers.fake_provider import FakeProvider
from tests.summarizers.sessions import ratelimit_session

KEY_ENV = "CONTEXTD_TEST_SUMMARIZER_KEY"
SECRET = "sk-test-0123456789abcdef-SECRET"


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    server = FakeProvider(key=SECRET).start()
    yield server
    server.stop()


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


@pytest.fixture
def summary_request() -> SummaryRequest:
    return SummaryRequest(
        kind="compaction",
        messages=ratelimit_session(),
        system_prompt="You summarize coding sessions.",
        prompt="<conversation>...</conversation>\n\nSummarize the conversation.",
        max_tokens=2048,
    )


def settings_for(name: str, provider: FakeProvider, **changes: object) -> SummarizerSettings:
    """Settings pointing provider `name` at the fake server, with quick failure."""
    vendor = name.removesuffix("-native")
    base_url = {"anthropic": provider.url, "openai": provider.openai_url}.get(vendor)
    values: dict[str, object] = {
        "provider": name,
        "model": f"{name}-test-model",
        "baseUrl": base_url,
        "apiKeyEnv": KEY_ENV,
        "remoteEndpoint": provider.remote_url,
        "maxRetries": 2,
        "timeoutSeconds": 5,
    }
    values.update(changes)
    return SummarizerSettings(**values)
