"""`contextd config`: the settings in force and where each comes from; `config set`/`unset`
write the user file, checked first."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.commands import run


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def user_file(config_home: Path) -> dict[str, object]:
    return json.loads((config_home / "contextd" / "settings.json").read_text())


def test_set_writes_the_user_file_and_config_shows_it_with_its_source(tmp_path: Path, config_home: Path) -> None:
    data = tmp_path / "data"
    done = run(data, "config", "set", "compaction.thresholdPercent", "0.5")
    assert done.returncode == 0, done.stderr
    assert run(data, "config", "set", "summarizer.provider", "anthropic").returncode == 0
    assert user_file(config_home) == {"compaction": {"thresholdPercent": 0.5}, "summarizer": {"provider": "anthropic"}}

    shown = run(data, "config")
    assert shown.returncode == 0, shown.stderr
    assert "compaction.thresholdPercent = 0.5  (user file)" in shown.stdout
    assert 'summarizer.provider = "anthropic"  (user file)' in shown.stdout
    assert "compaction.keepRecentTokens = 20000  (built in)" in shown.stdout

    answer = json.loads(run(data, "config", "--json").stdout)
    assert answer["workspace"] == str(data.parent.resolve())
    assert answer["sources"] == {"compaction.thresholdPercent": "user file", "summarizer.provider": "user file"}

    assert run(data, "config", "unset", "summarizer.provider").returncode == 0
    assert user_file(config_home) == {"compaction": {"thresholdPercent": 0.5}}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("compaction.keepRecent", "1", "no setting is called compaction.keepRecent (did you mean compaction.keepRecentTokens?)"),
        ("compaction.thresholdPercent", "7", "cannot set compaction.thresholdPercent to 7: Input should be less than or equal to 1"),
        ("idle.enabled", "sometimes", "cannot set idle.enabled to sometimes"),
    ],
)
def test_a_bad_key_or_value_is_a_usage_error_and_the_file_stays(
    tmp_path: Path, config_home: Path, key: str, value: str, message: str
) -> None:
    data = tmp_path / "data"
    assert run(data, "config", "set", "idle.enabled", "true").returncode == 0
    done = run(data, "config", "set", key, value)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
    assert user_file(config_home) == {"idle": {"enabled": True}}


def test_a_broken_user_file_is_named_by_config(tmp_path: Path, config_home: Path) -> None:
    path = config_home / "contextd" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"compaction": {"thresholdPercent": 2}}')
    shown = run(tmp_path / "data", "config")
    assert shown.returncode == 0, shown.stderr
    assert f"error: the settings file {path}: compaction.thresholdPercent:" in shown.stdout
    refused = run(tmp_path / "data", "config", "set", "idle.enabled", "true")
    assert refused.returncode == 2 and "fix it or remove it first" in refused.stderr
    assert os.path.getsize(path) == len('{"compaction": {"thresholdPercent": 2}}')
