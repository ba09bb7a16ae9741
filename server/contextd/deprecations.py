"""Models their vendors have scheduled to shut down, and the warning a configured one gets.

The dates are the official SDKs' own tables (anthropic's `DEPRECATED_MODELS`, openai's
deprecated `ChatModel` values), copied here so that checking a setting needs no SDK import
(seconds); tests/unit/test_deprecations.py fails when an installed SDK says otherwise. The
SDKs themselves warn through Python's `warnings`, which the default filters hide: a daemon
says it in its log instead.
"""

from __future__ import annotations

import logging

from contextd.model import Settings

log = logging.getLogger(__name__)

SHUTDOWN_DATES: dict[str, tuple[str, ...]] = {
    "2024-09-13": (
        "gpt-3.5-turbo-16k", "gpt-3.5-turbo-0301", "gpt-3.5-turbo-0613",
        "gpt-3.5-turbo-16k-0613",
    ),
    "2024-12-06": ("gpt-4-vision-preview",),
    "2025-06-06": ("gpt-4-32k", "gpt-4-32k-0314", "gpt-4-32k-0613"),
    "2025-07-28": ("o1-preview", "o1-preview-2024-09-12"),
    "2025-10-10": ("gpt-4o-audio-preview-2024-10-01",),
    "2025-10-27": ("o1-mini", "o1-mini-2024-09-12"),
    "2026-02-12": ("codex-mini-latest",),
    "2026-02-17": ("chatgpt-4o-latest",),
    "2026-03-26": ("gpt-4-0125-preview", "gpt-4-turbo-preview", "gpt-4-0314"),
    "2026-05-07": (
        "gpt-4o-audio-preview", "gpt-4o-audio-preview-2024-12-17",
        "gpt-4o-audio-preview-2025-06-03", "gpt-4o-mini-audio-preview",
        "gpt-4o-mini-audio-preview-2024-12-17",
    ),
    "2026-06-30": ("claude-mythos-preview",),
    "2026-07-23": (
        "gpt-5.1-codex", "gpt-5.1-chat-latest", "gpt-5-chat-latest",
        "gpt-4o-search-preview", "gpt-4o-mini-search-preview",
        "gpt-4o-search-preview-2025-03-11", "gpt-4o-mini-search-preview-2025-03-11",
    ),
    "2026-08-10": ("gpt-5.3-chat-latest", "gpt-5.2-chat-latest"),
    "2026-09-28": ("gpt-3.5-turbo-1106",),
    "2026-10-23": (
        "gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", "o4-mini", "o4-mini-2025-04-16",
        "o3-mini", "o3-mini-2025-01-31", "o1", "o1-2024-12-17", "gpt-4o-2024-05-13",
        "gpt-4-turbo", "gpt-4-turbo-2024-04-09", "gpt-4-1106-preview", "gpt-4",
        "gpt-4-0613", "gpt-3.5-turbo", "gpt-3.5-turbo-0125",
    ),
    "2026-11-30": ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
    "2026-12-11": (
        "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-2025-08-07", "gpt-5-mini-2025-08-07",
        "gpt-5-nano-2025-08-07", "o3", "o3-2025-04-16",
    ),
    "2027-01-14": (
        "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14",
        "gpt-4o", "gpt-4o-2024-11-20", "gpt-4o-2024-08-06", "gpt-4o-mini",
        "gpt-4o-mini-2024-07-18",
    ),
    "2027-01-20": ("gpt-audio-mini", "gpt-audio-mini-2025-12-15"),
    "2027-01-22": ("claude-opus-4-5", "claude-opus-4-5-20251101"),
    "2027-04-01": ("gpt-5.4-nano", "gpt-5.4-nano-2026-03-17", "gpt-5.1", "gpt-5.1-2025-11-13"),
}
"""Shutdown date (ISO) -> the model ids that reach end of life on it."""

END_OF_LIFE: dict[str, str] = {model: date for date, models in SHUTDOWN_DATES.items() for model in models}

_warned: set[str] = set()


def end_of_life(model: str) -> str | None:
    """The date `model` reaches end of life, or None; a gateway's `vendor/` prefix is ignored."""
    return END_OF_LIFE.get(model) or END_OF_LIFE.get(model.rsplit("/", 1)[-1])


def warn_if_deprecated(model: str | None, setting: str) -> None:
    """A WARNING in the log, once per model, when the model `setting` names is scheduled to
    shut down (or already has)."""
    if not model or model in _warned or (date := end_of_life(model)) is None:
        return
    _warned.add(model)
    log.warning(
        "%s %r is deprecated: its vendor shuts it down on %s; choose a supported model",
        setting, model, date,
    )


def warn_deprecated_models(settings: Settings) -> None:
    """Warn about each model the settings name that is scheduled to shut down."""
    warn_if_deprecated(settings.defaultModel, "defaultModel")
    warn_if_deprecated(settings.summarizer.model, "summarizer.model")
