"""Where each followed agent compacts its own session, from its rules and its configuration
(compaction/agent_points.py), and how its files are found and read (session/agent_settings.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextd.compaction.agent_points import AGENT_VARIABLES, ConfigFile, ModelWindow, agent_compaction_point
from contextd.session import agent_settings
from contextd.session.agent_settings import config_paths, mirror_compaction_point, remember_agent_environment

SONNET = ModelWindow(200_000, 64_000)
"""A Claude model whose output limit is above the 20k Claude Code keeps for its summary."""
CODEX_RECORDED = ModelWindow(258_400, 128_000, recorded=True)
"""gpt-5-codex as its transcript records it: the usable 95% of 272k."""

CLAUDE_FILES = ("~/.claude.json", "~/.claude/settings.json", "/w/.claude/settings.json", "/w/.claude/settings.local.json")


def claude(texts: dict[str, object] | None = None, env: dict[str, str] | None = None, model: ModelWindow = SONNET):
    """Claude Code's point given some of its files (as JSON values, or raw text) and its environment."""
    texts = texts or {}
    files = [
        ConfigFile(where, _text(texts[where]) if where in texts else None, usual=where == "~/.claude/settings.json")
        for where in CLAUDE_FILES
    ]
    return agent_compaction_point("claude-code", files, env or {}, model)


def codex(text: str | None, model: ModelWindow = CODEX_RECORDED):
    return agent_compaction_point("codex", [ConfigFile("~/.codex/config.toml", text)], {}, model)


def pi(global_settings: object = None, project: object = None, model: ModelWindow = SONNET):
    files = [
        ConfigFile("~/.pi/agent/settings.json", _text(global_settings) if global_settings is not None else None),
        ConfigFile("/w/.pi/settings.json", _text(project) if project is not None else None),
    ]
    return agent_compaction_point("pi", files, {}, model)


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# --- Claude Code ----------------------------------------------------------------------------


def test_claude_code_compacts_13k_below_its_effective_window_by_default() -> None:
    point = claude()
    assert (point.enabled, point.tokens) == (True, 167_000)
    assert point.body(200_000)["percent"] == 83.5
    assert "default assumed" in point.basis  # says what it assumed
    # Missing files are usual: counted, with the one a user would write named.
    assert point.basis.endswith("; no settings file found (looked in ~/.claude/settings.json and 3 more)")


def test_claude_code_keeps_less_for_the_summary_when_the_model_writes_less() -> None:
    assert claude(model=ModelWindow(200_000, 8_192)).tokens == 200_000 - 8_192 - 13_000


def test_the_percent_override_lowers_the_point_from_the_environment_or_a_settings_file() -> None:
    assert claude(env={"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}).tokens == 90_000  # 50% of 180k effective
    point = claude({"~/.claude/settings.json": {"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "60"}}}, env={"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"})
    assert point.tokens == 108_000
    assert "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE = 60 in ~/.claude/settings.json" in point.basis
    local = {"/w/.claude/settings.local.json": {"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": 70}}}
    assert claude({**local, "~/.claude/settings.json": {"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "60"}}}).tokens == 126_000


def test_the_percent_override_never_raises_the_point_and_a_bad_one_is_ignored() -> None:
    high = claude(env={"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "95"})
    assert high.tokens == 167_000 and "cannot raise" in high.basis
    for bad in ("abc", "0", "150", "-5", "nan"):
        point = claude(env={"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": bad})
        assert point.tokens == 167_000 and "ignored" in point.basis, bad


def test_auto_compact_window_lowers_the_window_to_at_least_100k() -> None:
    assert claude(env={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "150k"}).tokens == 150_000 - 20_000 - 13_000
    assert claude(env={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "50000"}).tokens == 100_000 - 20_000 - 13_000
    assert claude(env={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "1m"}).tokens == 167_000  # never above the model's
    unreadable = claude(env={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "lots"})
    assert unreadable.tokens == 167_000 and "not a size" in unreadable.basis


def test_claude_code_auto_compaction_switched_off() -> None:
    for point, where in (
        (claude({"~/.claude.json": {"autoCompactEnabled": False, "numStartups": 4}}), "autoCompactEnabled is false in ~/.claude.json"),
        (claude(env={"DISABLE_AUTO_COMPACT": "1"}), "DISABLE_AUTO_COMPACT is set in the environment"),
        (claude({"/w/.claude/settings.json": {"env": {"DISABLE_COMPACT": "true"}}}), "DISABLE_COMPACT is set in /w/.claude/settings.json"),
    ):
        assert (point.enabled, point.tokens) == (False, None)
        assert point.body(200_000) == {"enabled": False, "tokens": None, "percent": None, "basis": point.basis}
        assert where in point.basis
    assert claude(env={"DISABLE_AUTO_COMPACT": "0"}).enabled  # an explicit no leaves it on
    # A settings file turning it back on wins over the global config's off.
    assert claude({"~/.claude.json": {"autoCompactEnabled": False}, "~/.claude/settings.json": {"autoCompactEnabled": True}}).enabled


def test_a_damaged_claude_file_is_named_and_the_others_still_count() -> None:
    point = claude({"~/.claude.json": "{not json", "~/.claude/settings.json": {"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}}})
    assert point.tokens == 90_000
    assert "~/.claude.json could not be read" in point.basis
    assert "/w/.claude/settings.json and 1 more not found" in point.basis  # the missing ones, counted
    listed = claude({"~/.claude/settings.json": [1, 2]})
    assert listed.tokens == 167_000 and "~/.claude/settings.json could not be read (not a table of settings)" in listed.basis


# --- Codex ----------------------------------------------------------------------------------


def test_codex_compacts_at_90_percent_of_the_whole_window_its_transcript_records_95_percent_of() -> None:
    point = codex(None)
    assert point.tokens == 244_800  # 90% of 272k
    assert point.body(258_400)["percent"] == 94.7
    assert "not set (default assumed)" in point.basis and "no settings file found (looked in ~/.codex/config.toml)" in point.basis
    assert codex(None, ModelWindow(272_000, 128_000)).tokens == 244_800  # the registry's window is the whole


def test_codex_configured_limit_is_taken_below_90_percent_only() -> None:
    lowered = codex('model = "gpt-5-codex"\nmodel_auto_compact_token_limit = 200000\n')
    assert lowered.tokens == 200_000 and "model_auto_compact_token_limit = 200000 in ~/.codex/config.toml" in lowered.basis
    assert codex("model_auto_compact_token_limit = 300000\n").tokens == 244_800
    assert codex("model_context_window = 400000\n").tokens == 360_000


def test_codex_settings_the_rule_does_not_follow_are_named_in_the_basis() -> None:
    point = codex('model_post_turn_compact_threshold_percent = 70\nmodel_auto_compact_token_limit_scope = "body_after_prefix"\n')
    assert point.tokens == 244_800
    assert "model_post_turn_compact_threshold_percent = 70 in ~/.codex/config.toml also compacts after a turn" in point.basis
    assert 'model_auto_compact_token_limit_scope = "body_after_prefix" in ~/.codex/config.toml' in point.basis
    assert point.basis.count("which this point leaves out") == 2


def test_codex_bad_configuration_falls_back_to_the_default_and_says_so() -> None:
    damaged = codex("model_auto_compact_token_limit = = 5\n")
    assert damaged.tokens == 244_800 and "~/.codex/config.toml could not be read" in damaged.basis
    for value in ('"200k"', "-1", "true"):
        point = codex(f"model_auto_compact_token_limit = {value}\n")
        assert point.tokens == 244_800 and "not a positive whole number" in point.basis, value


# --- pi ---------------------------------------------------------------------------------------


def test_pi_compacts_when_the_context_exceeds_the_window_less_its_reserve() -> None:
    assert pi().tokens == 200_000 - 16_384
    assert pi({"compaction": {"reserveTokens": 30_000}}).tokens == 170_000
    assert pi({"compaction": {"reserveTokens": 30_000}}, {"compaction": {"reserveTokens": 50_000}}).tokens == 150_000
    assert "compaction.reserveTokens = 50000 in /w/.pi/settings.json" in pi(project={"compaction": {"reserveTokens": 50_000}}).basis


def test_pi_compaction_switched_off_or_damaged_settings() -> None:
    off = pi({"compaction": {"enabled": False}})
    assert (off.enabled, off.tokens) == (False, None) and "~/.pi/agent/settings.json" in off.basis
    assert pi({"compaction": {"enabled": False}}, {"compaction": {"enabled": True}}).enabled  # the project's wins
    damaged = pi("{", {"compaction": {"reserveTokens": 20_000}})
    assert damaged.tokens == 180_000 and "~/.pi/agent/settings.json could not be read" in damaged.basis


@given(
    window=st.integers(min_value=1_000, max_value=2_000_000),
    output=st.integers(min_value=1, max_value=200_000),
    percent=st.floats(min_value=0.01, max_value=100),
    reserve=st.integers(min_value=1, max_value=100_000),
    limit=st.integers(min_value=1, max_value=3_000_000),
)
def test_no_configuration_moves_a_point_past_the_agents_own_limit(window: int, output: int, percent: float, reserve: int, limit: int) -> None:
    model = ModelWindow(window, output)
    default = claude(model=model).tokens
    assert default is not None and claude(env={"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": str(percent)}, model=model).tokens <= default  # type: ignore[operator]
    assert codex(f"model_auto_compact_token_limit = {limit}\n", model).tokens <= window * 9 // 10  # type: ignore[operator]
    assert pi({"compaction": {"reserveTokens": reserve}}, model=model).tokens == max(window - reserve, 0)


def test_an_agent_without_a_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="gemini"):
        agent_compaction_point("gemini", [], {}, SONNET)


# --- reading the files ------------------------------------------------------------------------


def test_each_agent_reads_its_files_where_its_variables_put_them(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    assert config_paths("claude-code", "/w", home) == [
        tmp_path / ".claude.json", tmp_path / ".claude/settings.json",
        Path("/w/.claude/settings.json"), Path("/w/.claude/settings.local.json"),
    ]
    assert config_paths("claude-code", "/w", {**home, "CLAUDE_CONFIG_DIR": "/cfg"})[:2] == [Path("/cfg/.claude.json"), Path("/cfg/settings.json")]
    assert config_paths("codex", "/w", {**home, "CODEX_HOME": "/ch"}) == [Path("/ch/config.toml")]
    assert config_paths("pi", "/w", {**home, "PI_CODING_AGENT_DIR": "/pa"}) == [Path("/pa/settings.json"), Path("/w/.pi/settings.json")]


def test_the_files_are_read_again_when_they_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    model = CODEX_RECORDED
    assert mirror_compaction_point("codex", str(tmp_path / "w"), model)["tokens"] == 244_800
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("model_auto_compact_token_limit = 150000\n")
    point = mirror_compaction_point("codex", str(tmp_path / "w"), model)
    assert point["tokens"] == 150_000 and "in ~/.codex/config.toml" in point["basis"]
    config.write_text("model_auto_compact_token_limit = 120000\n")
    os.utime(config, ns=(1, 1))  # a change of size or mtime is what counts, whatever the clock
    assert mirror_compaction_point("codex", str(tmp_path / "w"), model)["tokens"] == 120_000


def test_a_kept_point_moves_with_a_new_file_a_variable_or_a_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each mirror's figure asks for its point; one worked out before is kept only while its
    files' stamps and the environment it came from stay as they were."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.setattr(agent_settings, "_reported", {})
    workspace, transcript = tmp_path / "w", str(tmp_path / "t.jsonl")
    first = mirror_compaction_point("pi", str(workspace), SONNET, transcript)
    first["tokens"] = 0  # a caller's copy: what is kept stays
    assert mirror_compaction_point("pi", str(workspace), SONNET, transcript)["tokens"] == 200_000 - 16_384
    (workspace / ".pi").mkdir(parents=True)
    (workspace / ".pi/settings.json").write_text('{"compaction": {"reserveTokens": 30000}}')  # a file that was not there
    assert mirror_compaction_point("pi", str(workspace), SONNET, transcript)["tokens"] == 170_000
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent/settings.json").write_text('{"compaction": {"enabled": false}}')
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))  # the daemon's variable
    assert not mirror_compaction_point("pi", str(workspace), SONNET, transcript)["enabled"]
    remember_agent_environment("pi", transcript, {"HOME": str(tmp_path)})  # the agent's report
    assert mirror_compaction_point("pi", str(workspace), SONNET, transcript)["tokens"] == 170_000


def test_missing_files_are_counted_with_the_one_a_user_writes_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(variable, raising=False)
    workspace = str(tmp_path / "w")
    claude_point = mirror_compaction_point("claude-code", workspace, SONNET)["basis"]
    assert claude_point.endswith("; no settings file found (looked in ~/.claude/settings.json and 3 more)")
    (tmp_path / ".pi/agent").mkdir(parents=True)
    (tmp_path / ".pi/agent/settings.json").write_text("{}")
    assert mirror_compaction_point("pi", workspace, SONNET)["basis"].endswith("; ~/w/.pi/settings.json not found")


def test_a_file_that_cannot_be_read_is_named_with_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    (tmp_path / ".pi/agent/settings.json").mkdir(parents=True)  # a folder where the file should be
    point = mirror_compaction_point("pi", str(tmp_path / "w"), SONNET)
    assert point["tokens"] == 200_000 - 16_384
    assert "~/.pi/agent/settings.json could not be read" in point["basis"]


class ReadsRecorded(Mapping[str, str]):
    """An environment that notes each variable looked up; going through all of it is noted as "*"."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values, self.read = values, set[str]()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self.values[name]

    def __contains__(self, name: object) -> bool:
        self.read.add(str(name))
        return name in self.values

    def __iter__(self) -> Iterator[str]:
        self.read.add("*")
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


@pytest.mark.parametrize("agent", sorted(AGENT_VARIABLES))
def test_the_variables_a_hook_reports_are_all_the_point_reads(agent: str) -> None:
    """AGENT_VARIABLES is the allow-list of what leaves the agent: every variable the files'
    places and the rule read is in it, and nothing else of the environment is read."""
    env = ReadsRecorded({name: "1" for name in AGENT_VARIABLES[agent]} | {"HOME": "/h", "OTHER": "x"})
    files = [ConfigFile(str(path), None) for path in config_paths(agent, "/w", env)]
    agent_compaction_point(agent, files, env, SONNET)
    assert env.read <= set(AGENT_VARIABLES[agent]) and "OTHER" not in env.read


def test_a_mirror_takes_its_agents_reported_environment_over_the_daemons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DISABLE_AUTO_COMPACT", "1")
    monkeypatch.setattr(agent_settings, "_reported", {})
    transcript = str(tmp_path / "projects" / "t.jsonl")
    daemons = mirror_compaction_point("claude-code", "/w", SONNET, transcript)
    assert not daemons["enabled"] and "set in the daemon's environment" in daemons["basis"]
    remember_agent_environment("claude-code", transcript, {"HOME": str(tmp_path), "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"})
    agents = mirror_compaction_point("claude-code", "/w", SONNET, transcript)
    assert agents["tokens"] == 180_000 // 2 and "= 50 in the agent's environment (its hook)" in agents["basis"]
    # Another transcript, or another agent's mirror of the same path, keeps the daemon's.
    assert not mirror_compaction_point("claude-code", "/w", SONNET, transcript + "x")["enabled"]
    remember_agent_environment("claude-code", transcript, {})  # a later report replaces the whole
    assert mirror_compaction_point("claude-code", "/w", SONNET, transcript)["tokens"] == 167_000


def test_a_report_is_found_through_a_symbolic_link_and_the_oldest_go_past_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent_settings, "_reported", {})
    monkeypatch.setattr(agent_settings, "REPORTED_LIMIT", 4)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    remember_agent_environment("claude-code", str(tmp_path / "link" / "t.jsonl"), {"DISABLE_COMPACT": "1"})
    assert not mirror_compaction_point("claude-code", "/w", SONNET, str(tmp_path / "real" / "t.jsonl"))["enabled"]
    for index in range(4):
        remember_agent_environment("codex", f"/r/{index}.jsonl", {})
    assert len(agent_settings._reported) == 4 and ("codex", "/r/3.jsonl") in agent_settings._reported
    assert ("claude-code", str(tmp_path / "real" / "t.jsonl")) not in agent_settings._reported
