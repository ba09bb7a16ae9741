"""`contextd install|uninstall claude-code|codex`: register contextd's hooks and MCP server
in an agent's configuration, merged with what is there.

Idempotent (installing twice changes nothing the second time), a backup of each file it
changes kept beside it (`<file>.contextd-backup`, the file as it was before the change),
nothing else touched: other hooks, other MCP servers and every other key stay as they were.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOOK_TIMEOUT_SECONDS = 30
MCP_STARTUP_SECONDS = 30
FORWARDED_VARIABLES = ("XDG_RUNTIME_DIR", "CONTEXTD_SHARED")
"""Codex's wait for an MCP server to start (its default, 10 s, is short on a busy machine)."""
SESSION_STARTS = "startup|resume|clear|compact"
"""Every `source` of SessionStart (Claude Code's and Codex's): after a compaction the hook
adds what it lost; at each start it reports the agent's environment."""
BACKUP_SUFFIX = ".contextd-backup"
SERVER_NAME = "contextd"
TOML_BEGIN = "# >>> contextd (added by `contextd install codex`; `contextd uninstall codex` removes it)"
TOML_END = "# <<< contextd"


class InstallError(Exception):
    """A configuration file contextd will not change (not JSON, not TOML, not an object)."""


@dataclass(frozen=True)
class Change:
    path: Path
    changed: bool


def contextd_command(data_dir: str | None) -> list[str]:
    """How the agent starts contextd: this interpreter, so the agent finds the contextd
    that was installed, whatever its PATH."""
    return [sys.executable, "-m", "contextd", *(["--data-dir", data_dir] if data_dir else [])]


def hook_entries(agent: str, data_dir: str | None) -> dict[str, list[dict[str, Any]]]:
    command = shlex.join([*contextd_command(data_dir), "hook", agent])
    hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}
    return {
        "SessionStart": [{"matcher": SESSION_STARTS, "hooks": [hook]}],
        "PreCompact": [{"matcher": "", "hooks": [hook]}],
    }


def is_ours(hook: Any, agent: str) -> bool:
    """A hook that runs `contextd … hook AGENT` (however contextd is started)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    runs_contextd = any(word == "contextd" or word.endswith("/contextd") for word in words)
    return runs_contextd and words[-2:] == ["hook", agent]


def with_hooks(config: dict[str, Any], agent: str, data_dir: str | None) -> dict[str, Any]:
    """`config` with contextd's hooks in its `hooks` (an earlier install's replaced)."""
    hooks = dict(without_hooks(config, agent).get("hooks") or {})
    for event, groups in hook_entries(agent, data_dir).items():
        hooks[event] = [*hooks.get(event, []), *groups]
    return {**config, "hooks": hooks}


def without_hooks(config: dict[str, Any], agent: str) -> dict[str, Any]:
    """`config` without contextd's hooks; groups and events left empty by that go too."""
    hooks = config.get("hooks")
    if not isinstance(hooks, dict):
        return config
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        remaining = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                others = [hook for hook in group["hooks"] if not is_ours(hook, agent)]
                if not others and group["hooks"]:
                    continue
                group = {**group, "hooks": others}
            remaining.append(group)
        if remaining:
            kept[event] = remaining
    result = {key: value for key, value in config.items() if key != "hooks"}
    return {**result, "hooks": kept} if kept else result


def mcp_server(agent: str, data_dir: str | None) -> dict[str, Any]:
    command, *args = contextd_command(data_dir)
    return {"type": "stdio", "command": command, "args": [*args, "mcp", "--agent", agent]}


def with_mcp_server(config: dict[str, Any], agent: str, data_dir: str | None) -> dict[str, Any]:
    servers = dict(config.get("mcpServers") or {})
    servers[SERVER_NAME] = mcp_server(agent, data_dir)
    return {**config, "mcpServers": servers}


def without_mcp_server(config: dict[str, Any]) -> dict[str, Any]:
    servers = config.get("mcpServers")
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return config
    rest = {name: server for name, server in servers.items() if name != SERVER_NAME}
    result = {key: value for key, value in config.items() if key != "mcpServers"}
    return {**result, "mcpServers": rest} if rest else result


# --- files --------------------------------------------------------------------------------


def read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as error:
        raise InstallError(f"{path} is not valid JSON ({error}); nothing was changed") from None
    if not isinstance(config, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was changed")
    return config


def update_json(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Change:
    before = read_json(path)
    after = change(before)
    if after == before:
        return Change(path, False)
    write_keeping_backup(path, json.dumps(after, indent=2, ensure_ascii=False) + "\n")
    return Change(path, True)


def write_keeping_backup(path: Path, text: str) -> None:
    """Replace `path` atomically, its previous content kept as `<path>.contextd-backup`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.copy2(path, path.with_name(path.name + BACKUP_SUFFIX))
    temporary = path.with_name(f".{path.name}.contextd-{os.getpid()}")
    temporary.write_text(text, encoding="utf-8")
    if path.exists():
        shutil.copymode(path, temporary)
    temporary.replace(path)


# --- Claude Code --------------------------------------------------------------------------


def claude_code_files(project: Path | None) -> tuple[Path, Path]:
    """Where the hooks go (settings.json) and where the MCP server goes: the user's
    ~/.claude.json (what `claude mcp add --scope user` writes), or the project's .mcp.json."""
    if project is not None:
        return project / ".claude" / "settings.json", project / ".mcp.json"
    home = Path.home()
    return home / ".claude" / "settings.json", home / ".claude.json"


def install_claude_code(project: Path | None, data_dir: str | None) -> list[Change]:
    settings, servers = claude_code_files(project)
    return [
        update_json(settings, lambda config: with_hooks(config, "claude-code", data_dir)),
        update_json(servers, lambda config: with_mcp_server(config, "claude-code", data_dir)),
    ]


def uninstall_claude_code(project: Path | None) -> list[Change]:
    settings, servers = claude_code_files(project)
    return [
        update_json(settings, lambda config: without_hooks(config, "claude-code")),
        update_json(servers, without_mcp_server),
    ]


# --- Codex --------------------------------------------------------------------------------


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def codex_block(data_dir: str | None) -> str:
    """contextd's part of config.toml: the MCP server, between markers."""
    server = mcp_server("codex", data_dir)
    return "\n".join([
        TOML_BEGIN,
        f"[mcp_servers.{SERVER_NAME}]",
        f"command = {json.dumps(server['command'])}",
        f"args = {json.dumps(server['args'])}",
        f"startup_timeout_sec = {MCP_STARTUP_SECONDS}",
        # Codex gives an MCP server a short list of variables; the shared daemon's socket
        # lives under XDG_RUNTIME_DIR, which the hooks (run with the whole environment) use.
        f"env_vars = {json.dumps(list(FORWARDED_VARIABLES))}",
        TOML_END,
    ])


def without_codex_block(text: str) -> str:
    pattern = re.compile(rf"\n*{re.escape(TOML_BEGIN)}\n.*?{re.escape(TOML_END)}\n?", re.DOTALL)
    return pattern.sub("\n", text).rstrip("\n") + ("\n" if text.strip() else "")


def with_codex_block(text: str, data_dir: str | None) -> str:
    base = without_codex_block(text)
    parsed = parse_toml(base)
    if SERVER_NAME in (parsed.get("mcp_servers") or {}):
        return base  # the user registered a server of that name: theirs stands
    return (base.rstrip("\n") + "\n\n" if base.strip() else "") + codex_block(data_dir) + "\n"


def parse_toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InstallError(f"config.toml is not valid TOML ({error}); nothing was changed") from None


def update_toml(path: Path, change: Callable[[str], str]) -> Change:
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    parse_toml(before)
    after = change(before)
    if after == before:
        return Change(path, False)
    parse_toml(after)
    write_keeping_backup(path, after)
    return Change(path, True)


def install_codex(data_dir: str | None) -> list[Change]:
    home = codex_home()
    return [
        update_json(home / "hooks.json", lambda config: with_hooks(config, "codex", data_dir)),
        update_toml(home / "config.toml", lambda text: with_codex_block(text, data_dir)),
    ]


def uninstall_codex() -> list[Change]:
    home = codex_home()
    return [
        update_json(home / "hooks.json", lambda config: without_hooks(config, "codex")),
        update_toml(home / "config.toml", without_codex_block),
    ]
