"""`contextd mcp` over real stdio, driven by the official MCP client: the tools an agent
registers, answering from the daemon's mirror of a real Claude Code transcript."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.agents.transcripts import place_claude_code_transcript

WAIT = 90.0
TOOLS = {"history_search", "history_get", "summary_sources", "context_status"}


@asynccontextmanager
async def mcp_client(tmp_path: Path) -> AsyncIterator[ClientSession]:
    """`contextd mcp` in a workspace with a real Claude Code transcript (entered and left in
    the test's own task, as anyio's streams require)."""
    home, workspace = tmp_path / "home", tmp_path / "work"
    workspace.mkdir(parents=True)
    place_claude_code_transcript(home, workspace)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "contextd", "--data-dir", str(tmp_path / "data"), "mcp", "--agent", "claude-code"],
        env={**os.environ, "HOME": str(home), "CONTEXTD_SHARED": "0"},
        cwd=workspace,
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def text_of(session: ClientSession, tool: str, **arguments: object) -> str:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def until_found(session: ClientSession, query: str, expected: str) -> str:
    """history_search until the mirror has read far enough to hold `expected`."""
    deadline = asyncio.get_running_loop().time() + WAIT
    while True:
        found = await text_of(session, "history_search", query=query)
        if expected in found or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.5)


async def test_the_tools_an_agent_sees(tmp_path: Path) -> None:
    async with mcp_client(tmp_path) as mcp_session:
        listed = await mcp_session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS


async def test_search_reaches_what_claude_codes_compaction_folded_away(tmp_path: Path) -> None:
    async with mcp_client(tmp_path) as mcp_session:
        found = await until_found(mcp_session, "Critical security fixes PART 1", "summarized away by compaction")
        first = found.splitlines()[1]
        assert "summarized away by compaction" in first and "[security]" in first.lower()
        entry_id = first.split()[1]
        whole = await text_of(mcp_session, "history_get", entry_ids=[entry_id])
        assert "Critical security fixes (PART 1)" in whole
        status = await text_of(mcp_session, "context_status")
        assert "claude-code" in status and "tokens" in status

