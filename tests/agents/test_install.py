"""`contextd install|uninstall claude-code|codex`: merged with what is there, idempotent,
a backup kept, nothing else touched, and uninstall gives back the user's configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

USER_SETTINGS = {
    "model": "opus",
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo mine"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}
USER_CLAUDE_JSON = {"numStartups": 7, "mcpServers": {"other": {"command": "other-server"}}}
USER_CODEX_CONFIG = 'model = "gpt-5"\n\n[features]\nhooks = true\n\n[mcp_servers.other]\ncommand = "other"\n'


def run(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    return subprocess.run([sys.executable, "-m", "contextd", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False)


def test_claude_code_install_merges_is_idempotent_and_uninstalls_cleanly(tmp_path: Path) -> None:
    settings, servers = tmp_path / ".claude" / "settings.json", tmp_path / ".claude.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS))
    servers.write_text(json.dumps(USER_CLAUDE_JSON))
    first = run(tmp_path, "install", "claude-code")
    assert first.returncode == 0 and first.stdout.count("changed:") == 2
    installed = json.loads(settings.read_text())
    assert installed["model"] == "opus" and installed["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"]
    session_start = installed["hooks"]["SessionStart"]
    assert session_start[0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    assert session_start[1]["matcher"] == "startup|resume|clear|compact" and "hook claude-code" in session_start[1]["hooks"][0]["command"]
    assert "hook claude-code" in installed["hooks"]["PreCompact"][0]["hooks"][0]["command"]
    registered = json.loads(servers.read_text())
    assert registered["numStartups"] == 7 and registered["mcpServers"]["other"] == {"command": "other-server"}
    assert registered["mcpServers"]["contextd"]["args"][-3:] == ["mcp", "--agent", "claude-code"]
    assert json.loads(Path(f"{settings}.contextd-backup").read_text()) == USER_SETTINGS
    again = run(tmp_path, "install", "claude-code")
    assert again.stdout.count("unchanged:") == 2 and json.loads(settings.read_text()) == installed
    removed = run(tmp_path, "uninstall", "claude-code")
    assert removed.returncode == 0
    assert json.loads(settings.read_text()) == USER_SETTINGS
    assert json.loads(servers.read_text()) == USER_CLAUDE_JSON


def test_project_install_writes_the_projects_files(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    assert run(tmp_path, "install", "claude-code", "--project", cwd=project).returncode == 0
    assert "PreCompact" in json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert "contextd" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert not (tmp_path / ".claude.json").exists()


def test_codex_install_merges_and_uninstalls(tmp_path: Path) -> None:
    codex = tmp_path / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(USER_CODEX_CONFIG)
    done = run(tmp_path, "install", "codex")
    assert done.returncode == 0 and "trust" in done.stdout
    config = tomllib.loads((codex / "config.toml").read_text())
    assert config["model"] == "gpt-5" and config["mcp_servers"]["other"] == {"command": "other"}
    assert config["mcp_servers"]["contextd"]["args"][-3:] == ["mcp", "--agent", "codex"]
    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    assert run(tmp_path, "install", "codex").stdout.count("unchanged:") == 2
    assert run(tmp_path, "uninstall", "codex").returncode == 0
    assert (codex / "config.toml").read_text() == USER_CODEX_CONFIG
    assert json.loads((codex / "hooks.json").read_text()) == {}


@pytest.mark.parametrize("broken", ["{not json", "[1, 2]"])
def test_a_broken_settings_file_is_left_alone(tmp_path: Path, broken: str) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(broken)
    done = run(tmp_path, "install", "claude-code")
    assert done.returncode == 2 and "settings.json" in done.stderr and "nothing was changed" in done.stderr
    assert settings.read_text() == broken


def test_installing_over_an_earlier_install_replaces_its_hooks(tmp_path: Path) -> None:
    """An install of before this round ran the hook at SessionStart after a compaction only;
    installing again leaves one contextd hook per event, at every SessionStart."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    earlier = {"type": "command", "command": f"{sys.executable} -m contextd hook claude-code", "timeout": 30}
    settings.write_text(json.dumps({"hooks": {
        **USER_SETTINGS["hooks"],
        "SessionStart": [*USER_SETTINGS["hooks"]["SessionStart"], {"matcher": "compact", "hooks": [earlier]}],
        "PreCompact": [{"matcher": "", "hooks": [earlier]}],
    }}))
    assert run(tmp_path, "install", "claude-code").returncode == 0
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["SessionStart"][0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    ours = [group for group in hooks["SessionStart"] if "hook claude-code" in json.dumps(group)]
    assert [group["matcher"] for group in ours] == ["startup|resume|clear|compact"]
    assert len(hooks["PreCompact"]) == 1
