"""The commands that give back to the agents contextd follows: `contextd mcp` (the history
on demand, as MCP tools)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from contextd_client.client import ContextdClient

AGENTS = ["claude-code", "codex", "pi"]
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


def agent_commands(connect: Connect, load_settings: Callable[[argparse.Namespace], dict[str, Any]]) -> dict[str, Runner]:
    """The runners of these commands, given the CLI's way to reach the daemon."""

    async def run_mcp(args: argparse.Namespace) -> int:
        from contextd_client.agents.mcp_server import serve

        async def attach(workspace: str) -> ContextdClient:
            return await connect(args, load_settings(args), workspace)

        return await serve(attach, Path(os.getcwd()), args.agent)

    return {"mcp": run_mcp}
