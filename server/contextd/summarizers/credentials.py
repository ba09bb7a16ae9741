"""API keys come from the environment variable the settings name, and nowhere else."""

from __future__ import annotations

import os

from contextd.summarizers.errors import ProviderError, remember_secret


def api_key_from_env(provider: str, variable: str) -> str:
    """The key in `variable`; a missing one is an error naming the variable, never a value."""
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ProviderError(
            provider, f"the environment variable {variable} is not set", retryable=False
        )
    remember_secret(value)
    return value
