"""API keys come from the environment variable the settings name, and nowhere else."""

from __future__ import annotations

import os

from contextd.model import SummarizerSettings
from contextd.summarizers.errors import ProviderError, remember_secret


def key_variable(settings: SummarizerSettings, vendor_variable: str) -> str | None:
    """The environment variable holding the key to send: the one `apiKeyEnv` names, else the
    vendor's own, but for the vendor's API only. A custom `baseUrl` (a local server, a
    proxy, another company's gateway) gets no key unless `apiKeyEnv` names one: a vendor's
    key must not reach a server that is not the vendor's."""
    return settings.apiKeyEnv or (None if settings.baseUrl else vendor_variable)


def api_key_from_env(provider: str, variable: str) -> str:
    """The key in `variable`; a missing one is an error naming the variable, never a value."""
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ProviderError(
            provider, f"the environment variable {variable} is not set", retryable=False
        )
    remember_secret(value)
    return value
