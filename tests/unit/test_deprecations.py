"""Default models are ones their vendors support, a configured model that is scheduled to
shut down is named in the log with its date, and contextd's table of dates is the installed
SDKs' own (anthropic's `DEPRECATED_MODELS`, openai's deprecated `ChatModel` values)."""

from __future__ import annotations

import datetime
import logging
import re
from pathlib import Path

import anthropic._data.deprecated_models as anthropic_table
import openai.types.shared.chat_model as openai_models
import pytest
from contextd import deprecations
from contextd.deprecations import END_OF_LIFE, end_of_life
from contextd.model import Settings
from contextd.rpc.daemon import parse_settings
from contextd.summarizers import anthropic, anthropic_native, openai, openai_native
from contextd_client.cli import default_model


def sdk_table() -> dict[str, str]:
    """Model -> ISO shutdown date, read from the installed SDKs."""
    table: dict[str, str] = {}
    source = Path(openai_models.__file__).read_text()
    notes = source[source.index('"""Deprecated values:') :]
    for paragraph in re.split(r"\n- ", notes[: notes.index('"""', 5)]):
        date = re.search(r"Announced shutdown\s+date:\s+(\d{4}-\d{2}-\d{2})", paragraph)
        if date:
            for model in re.findall(r'"([^"]+)"', paragraph.split("Announced")[0]):
                table[model] = date.group(1)
    for model, when in anthropic_table.DEPRECATED_MODELS.items():
        day = re.sub(r"(\d+)(st|nd|rd|th)", r"\1", when)
        table[model] = datetime.datetime.strptime(day, "%B %d, %Y").date().isoformat()
    return table


def test_the_table_is_the_installed_sdks() -> None:
    assert END_OF_LIFE == sdk_table()
    assert end_of_life("claude-sonnet-4-5") == "2026-11-30"
    assert end_of_life("gpt-4.1-mini") == "2027-01-14"


@pytest.mark.parametrize(
    "default",
    [
        Settings().defaultModel,
        default_model({}),
        anthropic.DEFAULT_MODEL,
        anthropic_native.DEFAULT_MODEL,
        openai.DEFAULT_MODEL,
        openai_native.DEFAULT_MODEL,
    ],
)
def test_no_default_is_deprecated(default: str) -> None:
    assert end_of_life(default) is None, f"{default} shuts down on {end_of_life(default)}"


def test_a_deprecated_model_in_the_settings_is_a_warning_with_its_date(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deprecations, "_warned", set())
    caplog.set_level(logging.WARNING)

    parse_settings({"defaultModel": "claude-sonnet-4-5", "summarizer": {"provider": "openai", "model": "openai/gpt-4.1-mini"}})
    parse_settings({"defaultModel": "claude-sonnet-4-5"})

    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "deprecated" in r.getMessage()]
    assert [r.getMessage() for r in warnings] == [
        "defaultModel 'claude-sonnet-4-5' is deprecated: its vendor shuts it down on 2026-11-30; choose a supported model",
        "summarizer.model 'openai/gpt-4.1-mini' is deprecated: its vendor shuts it down on 2027-01-14; choose a supported model",
    ], "once per model, as a log WARNING (Python's default filters hide the SDKs' own warnings)"


def test_a_supported_model_is_not_warned_about(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deprecations, "_warned", set())

    parse_settings({"defaultModel": "claude-sonnet-4-6", "summarizer": {"model": "gpt-5.5"}})

    assert "deprecated" not in caplog.text

