"""`contextd mcp`: an MCP server (stdio) that gives a coding agent the history its own
compactions folded away, from the shared daemon's mirror of the agent's transcript.

The agent's session is the mirror of the most recently active transcript of the working
directory (of one agent with `--agent`); every tool takes `session_id` to name another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from contextd_client.client import ContextdClient
from contextd_client.rpc import ContextdError

NOTHING_TO_COMPACT = -32005
MIRROR_WAIT_SECONDS = 10.0
MIRROR_POLL_SECONDS = 0.25
INSTRUCTIONS = (
    "contextd keeps every entry of this session, including what a compaction summarized away. "
    "history_search finds earlier detail (exact commands, outputs, errors, the user's words); "
    "history_get reads entries whole; summary_sources shows what a summary item came from."
)


class NoSession(Exception):
    """No mirrored session of this agent is known for the working directory."""


class AgentHistory:
    """The daemon connection and the agent's session, found once and asked for again when
    the agent started another session meanwhile (a newer transcript in the directory)."""

    def __init__(self, client: ContextdClient, workspace: str, agent: str | None) -> None:
        self.client = client
        self.workspace = workspace
        self.agent = agent

    async def session_id(self, explicit: str | None) -> str:
        if explicit:
            return explicit
        deadline = asyncio.get_running_loop().time() + MIRROR_WAIT_SECONDS
        while True:
            found = await self._latest_mirror()
            if found is not None:
                return found
            if asyncio.get_running_loop().time() >= deadline:
                who = self.agent or "Claude Code, Codex or pi"
                raise NoSession(f"contextd mirrors no {who} session of {self.workspace} yet")
            await asyncio.sleep(MIRROR_POLL_SECONDS)

    async def _latest_mirror(self) -> str | None:
        rows = (await self.client.session_list(workspace=self.workspace))["sessions"]
        mirrors = [
            row for row in rows
            if "source" in row and (self.agent is None or row["source"]["agent"] == self.agent)
        ]
        newest = max(mirrors, key=lambda row: row["updatedAt"], default=None)
        return None if newest is None else str(newest["sessionId"])

    async def call(self, method: str, session_id: str | None, **params: Any) -> Any:
        session = await self.session_id(session_id)
        return await self.client.request(method, {"sessionId": session, **params})


# --- what the tools answer (text a model reads) -------------------------------------------


def placement(item: dict[str, Any]) -> str:
    if item.get("branch") == "abandoned":
        return "abandoned branch"
    folded = item.get("foldedBy")
    return f"summarized away by compaction {folded}" if folded else "still in context"


def who(item: dict[str, Any]) -> str:
    parts = [item.get("role") or item.get("type", "entry")]
    if item.get("tool"):
        parts.append(item["tool"])
    return "/".join(parts)


def search_text(result: dict[str, Any]) -> str:
    hits = result["hits"]
    if not hits:
        return f"No entry of session {result['sessionId']} matches."
    lines = [f"{len(hits)} entries of session {result['sessionId']}, best first:"]
    for hit in hits:
        snippet = " ".join(hit["snippet"].split())
        lines.append(f"- {hit['entryId']} [{who(hit)}, {placement(hit)}, {hit['timestamp']}]: {snippet}")
    lines.append("Read one whole with history_get(entry_ids=[...]) or around=<entryId>.")
    return "\n".join(lines)


def entries_text(result: dict[str, Any]) -> str:
    blocks = [
        f"### {entry['entryId']} [{who(entry)}, {placement(entry)}, {entry['timestamp']}]\n{entry['text']}"
        for entry in result["entries"]
    ]
    if result["omitted"]:
        blocks.append(f"(left out at the token budget: {', '.join(result['omitted'])})")
    return "\n\n".join(blocks) or "No entries."


def sources_text(result: dict[str, Any], entries: dict[str, Any] | None) -> str:
    if not result["items"]:
        return f"No item of {result['entryId']} matches."
    lines = [f"Items of the summary {result['entryId']} and the entries they came from:"]
    for item in result["items"]:
        lines.append(f"- item {item['item']} ({item['section']}): {item['text']} <- {', '.join(item['entryIds'])}")
    if entries is not None:
        lines += ["", entries_text(entries)]
    return "\n".join(lines)


def status_text(state: dict[str, Any], preview: dict[str, Any] | None) -> str:
    usage = state["usage"]
    lines = [
        f"Session {state['sessionId']} ({state.get('source', {}).get('agent', 'contextd')}), model {state['model']}:",
        f"context {usage['tokens']} of {usage['contextWindow']} tokens ({usage['percent']}%, {usage['source']}),"
        f" compaction threshold {usage['thresholdTokens']}.",
    ]
    if preview is None:
        lines.append("The next compaction would have nothing to fold away.")
    else:
        lines.append(
            f"The next compaction would summarize {len(preview['summarizeEntryIds'])} entries and keep "
            f"{len(preview['keptEntryIds'])} verbatim from {preview['firstKeptEntryId']} "
            f"({preview['tokensKept']} tokens), about {preview['tokensAfter']} tokens after."
        )
    return "\n".join(lines)


# --- the server ---------------------------------------------------------------------------


def build_server(history: Callable[[], Awaitable[AgentHistory]]) -> MCPServer:
    """The MCP server; `history()` gives the agent's history on the daemon."""
    server = MCPServer("contextd", instructions=INSTRUCTIONS)

    @server.tool()
    async def history_search(query: str, limit: int = 10, session_id: str | None = None) -> str:
        """Full-text search over every entry of this session, including what compactions
        summarized away and abandoned branches. Returns entry ids, where each entry sits
        and a snippet; read entries whole with history_get."""
        found = await (await history()).call("contextd/history/search", session_id, query=query, limit=limit)
        return search_text(found)

    @server.tool()
    async def history_get(
        entry_ids: list[str] | None = None, around: str | None = None, max_tokens: int = 4000,
        session_id: str | None = None,
    ) -> str:
        """Entries of this session in full (tool outputs included) within max_tokens: the
        entries named by entry_ids, or those around one entry id, nearest first."""
        params: dict[str, Any] = {"maxTokens": max_tokens}
        params.update({"entryIds": entry_ids} if entry_ids else {"around": around})
        return entries_text(await (await history()).call("contextd/history/get", session_id, **params))

    @server.tool()
    async def summary_sources(
        compaction_id: str, item: int | str | None = None, max_tokens: int = 4000, session_id: str | None = None,
    ) -> str:
        """The entries an item of a compaction summary came from: `item` is the item's
        number or words of it (all items when left out); with one item, its entries too."""
        agent = await history()
        params: dict[str, Any] = {"entryId": compaction_id, **({"item": item} if item is not None else {})}
        found = await agent.call("contextd/history/sources", session_id, **params)
        entries = None
        if len(found["items"]) == 1:
            entries = await agent.call(
                "contextd/history/get", found["sessionId"], entryIds=found["items"][0]["entryIds"], maxTokens=max_tokens
            )
        return sources_text(found, entries)

    @server.tool()
    async def context_status(session_id: str | None = None) -> str:
        """This session's context: its size (and where the figure comes from), the window,
        the compaction threshold and what the next compaction would keep."""
        agent = await history()
        state = await agent.call("contextd/session/state", session_id)
        try:
            preview = await agent.call("contextd/compact", state["sessionId"], dryRun=True)
        except ContextdError as error:
            if error.code != NOTHING_TO_COMPACT:
                raise
            preview = None
        return status_text(state, preview)

    return server


async def serve(connect: Callable[[str], Awaitable[ContextdClient]], workspace: Path, agent: str | None) -> int:
    """Serve MCP on stdio until the agent closes it. The daemon is attached meanwhile, so
    the agent's handshake never waits for it (agents give MCP servers a few seconds to
    start) and following starts before the first tool call, which waits for it."""
    directory = str(workspace.resolve())

    async def attach() -> AgentHistory:
        client = await connect(directory)
        await client.follow(enabled=True)
        return AgentHistory(client, directory, agent)

    attaching = asyncio.ensure_future(attach())

    async def attached() -> AgentHistory:
        return await asyncio.shield(attaching)

    try:
        await build_server(attached).run_stdio_async()
    finally:
        if attaching.done() and not attaching.cancelled() and attaching.exception() is None:
            await attaching.result().client.close()
        else:
            attaching.cancel()
    return 0
