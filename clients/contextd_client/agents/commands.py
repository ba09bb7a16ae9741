"""The commands that give back to the agents contextd follows: `contextd mcp` (the history
on demand, as MCP tools), `contextd hook` (what an agent's compaction lost) and
`contextd install|uninstall` (registering both with an agent)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from contextd.cli import UsageError

from contextd_client.agents.added_context import DEFAULT_MAX_TOKENS
from contextd_client.client import ContextdClient

AGENTS = ["claude-code", "codex", "pi"]
HOOK_AGENTS = ["claude-code", "codex"]
Connect = Callable[..., Awaitable[ContextdClient]]
Runner = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def add_agent_commands(add_command: Callable[..., argparse.ArgumentParser]) -> None:
    mcp = add_command(
        "mcp", "an MCP server (stdio) giving an agent its whole history: search, entries, sources, status",
        description=(
            "Serve MCP on stdio for a coding agent: history_search, history_get, summary_sources and "
            "context_status over the shared daemon's mirror of the agent's session (the most recently "
            "active transcript of the current directory; every tool takes session_id to name another). "
            "Turns following on in the daemon."
        ),
        epilog="examples:\n  claude mcp add contextd -- contextd mcp --agent claude-code\n"
        "  contextd install claude-code        registers it (and the hooks) for you\n",
    )
    mcp.add_argument("--agent", choices=AGENTS, help="only this agent's sessions (default: any)")

    hook = add_command(
        "hook", "the command Claude Code and Codex run at their hook events (event JSON on stdin)",
        description=(
            "Run by the agent (see `contextd install`): at every event it tells the daemon the agent's own "
            "values of the variables its compaction point depends on (those only: no key leaves the agent); "
            "at PreCompact it makes sure the daemon's mirror "
            "of the session is current; at SessionStart after a compaction it adds "
            "(hookSpecificOutput.additionalContext) what contextd's summary of the compacted span holds "
            "and the model no longer sees (neither the agent's summary nor the messages it kept): "
            "standing constraints in the user's words, open errors, the commands' latest outcomes, "
            "files modified. Never fails the agent: without a daemon it "
            "says nothing."
        ),
    )
    hook.add_argument("agent", choices=HOOK_AGENTS, help="the agent running the hook")
    hook.add_argument(
        "--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, metavar="TOKENS",
        help="the most the added context may take",
    )

    for verb, summary in (("install", "register"), ("uninstall", "remove")):
        command = add_command(
            verb, f"{summary} contextd's hooks and MCP server in Claude Code's or Codex's configuration",
            description=(
                f"{summary.capitalize()} the hooks (`contextd hook AGENT` at SessionStart, whatever its source, "
                "and at PreCompact) and the MCP server (`contextd mcp`). Claude Code: hooks in "
                "~/.claude/settings.json, the server in ~/.claude.json (with --project: the project's "
                ".claude/settings.json and .mcp.json). Codex: $CODEX_HOME/hooks.json and "
                "[mcp_servers.contextd] in $CODEX_HOME/config.toml (default ~/.codex). Merged with what is "
                "there, idempotent; each changed file's previous content is kept as FILE.contextd-backup."
            ),
            epilog=f"examples:\n  contextd {verb} claude-code\n  contextd {verb} claude-code --project\n"
            f"  contextd {verb} codex\n",
        )
        command.add_argument("agent", choices=HOOK_AGENTS, help="the agent to configure")
        command.add_argument(
            "--project", action="store_true",
            help="Claude Code: the current project's configuration instead of the user's",
        )


def agent_commands(connect: Connect, load_settings: Callable[[argparse.Namespace], dict[str, Any]]) -> dict[str, Runner]:
    """The runners of these commands, given the CLI's way to reach the daemon."""

    async def run_mcp(args: argparse.Namespace) -> int:
        from contextd_client.agents.mcp_server import serve

        async def attach(workspace: str) -> ContextdClient:
            return await connect(args, load_settings(args), workspace)

        return await serve(attach, Path(os.getcwd()), args.agent)

    async def run_hook(args: argparse.Namespace) -> int:
        from contextd_client.agents.hooks import hook_command

        async def attach(workspace: str) -> ContextdClient:
            return await connect(args, load_settings(args), workspace)

        return await hook_command(args.agent, attach, args.max_tokens)

    return {"mcp": run_mcp, "hook": run_hook, "install": run_install, "uninstall": run_install}


async def run_install(args: argparse.Namespace) -> int:
    """install/uninstall: one line per file, saying whether it changed."""
    from contextd_client.agents import install

    if args.project and args.agent != "claude-code":
        raise UsageError("--project is for claude-code (Codex keeps its configuration in $CODEX_HOME)")
    project = Path.cwd() if args.project else None
    try:
        if args.command == "install":
            changes = install.install_claude_code(project, args.data_dir) if args.agent == "claude-code" \
                else install.install_codex(args.data_dir)
        else:
            changes = install.uninstall_claude_code(project) if args.agent == "claude-code" \
                else install.uninstall_codex()
    except install.InstallError as error:
        raise UsageError(str(error)) from None
    for change in changes:
        print(f"{'changed' if change.changed else 'unchanged'}: {change.path}")
    if args.command == "install" and args.agent == "codex":
        print(CODEX_TRUST_NOTE)
    return 0


CODEX_TRUST_NOTE = (
    "Codex runs a hook only once you trust it: start `codex`, review the contextd hooks it "
    "lists as new and trust them (tests use --dangerously-bypass-hook-trust instead)."
)
