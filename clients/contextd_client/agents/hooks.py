"""`contextd hook claude-code|codex`: the command the agent runs at its hook events (the
JSON the agent sends on stdin, the answer on stdout).

- Every event: following is on, and the daemon has the agent's own values of the variables
  its compaction point is worked out from (`AGENT_VARIABLES`, for the mirror's
  `agentCompaction`): the agent may run with some the shared daemon never had. No other
  variable leaves the agent's process (its keys and tokens among them).
- `PreCompact`: following is on and the mirror holds the transcript as written so far.
- `SessionStart` with source `compact`: once the mirror has the agent's new compaction, adds
  (`hookSpecificOutput.additionalContext`) what contextd's summary of the same span holds and
  the model no longer sees: neither the agent's summary nor the messages it kept hold it
  (contextd_client.agents.added_context).

A hook never stands in the agent's way: when the daemon cannot be reached or is slow, it
answers nothing and exits 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from contextd.compaction.agent_points import AGENT_VARIABLES

from contextd_client.agents.added_context import DEFAULT_MAX_TOKENS, added_context, holds_almost_nothing
from contextd_client.client import ContextdClient
from contextd_client.rpc import ContextdError

HOOK_SECONDS = 20.0
"""Everything a hook does, within the agent's hook timeout (30 s as installed)."""
POLL_SECONDS = 0.2
COMPACTION_WAIT_SECONDS = 3.0
HISTORY_GET_IDS = 1000
HISTORY_GET_TOKENS = 100_000
"""`contextd/history/get`'s limits for one request."""
COMPACTION_RECORDS = {
    "claude-code": re.compile(rb'"subtype"\s*:\s*"compact_boundary"'),
    "codex": re.compile(rb'"type"\s*:\s*"compacted"'),
}
"""How each agent marks its own compactions in its transcript."""

Connect = Callable[[str], Awaitable[ContextdClient]]


async def run_hook(agent: str, event: dict[str, Any], connect: Connect, max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any] | None:
    """The answer to one hook event (None: nothing to say)."""
    name = event.get("hook_event_name")
    transcript = event.get("transcript_path")
    if name not in ("PreCompact", "SessionStart") or not isinstance(transcript, str):
        return None
    workspace = str(event.get("cwd") or Path.cwd())
    async with await connect(workspace) as client:
        await client.follow(enabled=True)
        await report_environment(client, agent, transcript)
        if name == "SessionStart" and event.get("source") != "compact":
            return None
        mirror = Mirror(client, agent, transcript, workspace)
        if name == "PreCompact":
            await mirror.session_id()
            return None
        text = await mirror.added_context(max_tokens)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


async def report_environment(client: ContextdClient, agent: str, transcript: str) -> None:
    """The agent's environment to the daemon; a daemon that refuses it (an older one) leaves
    the point on its own environment, and the hook goes on."""
    environment = reported_environment(agent, os.environ)
    try:
        await client.request(
            "contextd/follow/environment", {"agent": agent, "transcriptPath": transcript, "environment": environment},
        )
    except ContextdError as error:
        print(f"contextd hook: the agent's environment was not taken ({error})", file=sys.stderr)


def reported_environment(agent: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The agent's values of the variables its compaction point is worked out from: those
    only, whatever else its environment holds."""
    return {name: environ[name] for name in AGENT_VARIABLES[agent] if name in environ}


class Mirror:
    """The daemon's mirror of one transcript."""

    def __init__(self, client: ContextdClient, agent: str, transcript: str, workspace: str) -> None:
        self.client = client
        self.agent = agent
        self.transcript = transcript
        self.workspace = workspace

    async def session_id(self) -> str:
        """The mirror's id, once the daemon has made it."""
        while True:
            rows = (await self.client.session_list(workspace=self.workspace))["sessions"]
            for row in rows:
                if row.get("source", {}).get("path") == self.transcript:
                    return str(row["sessionId"])
            await asyncio.sleep(POLL_SECONDS)

    async def compactions(self, session: str, written: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None, list[str]]:
        """The mirror's node of the agent's new compaction once it holds as many of the
        agent's compactions as the transcript records (None if it does not within
        COMPACTION_WAIT_SECONDS: Claude Code runs the hook before it writes the compaction),
        the node of the compaction before it (None: none), and the ids of the agent's messages."""
        deadline = asyncio.get_running_loop().time() + COMPACTION_WAIT_SECONDS
        while True:
            nodes = (await self.client.tree(session))["nodes"]
            compactions = [dict(node) for node in nodes if node["type"] == "compaction"]
            reached = bool(written) and len(compactions) >= written
            if reached or asyncio.get_running_loop().time() >= deadline:
                before = compactions[:-1] if reached else compactions
                agent = [node["id"] for node in nodes if node.get("role") == "assistant"]
                return (compactions[-1] if reached else None), (before[-1] if before else None), agent
            await asyncio.sleep(POLL_SECONDS)

    async def added_context(self, max_tokens: int) -> str:
        """contextd's summary of the span the agent just compacted, less what the model
        still sees: the agent's summary and the messages it kept. The span ends where the
        mirror's compaction says, or, while the compaction has not reached the mirror, at
        the mirror's leaf (everything before it; then only the agent's summary is known).
        The agent's messages of the span, and contextd's summary of the span the agent's
        previous compaction folded when the agent's own holds almost nothing, add to it."""
        session = await self.session_id()
        written, still_seen = agent_compactions(self.agent, Path(self.transcript))
        compaction, previous, agent_messages = await self.compactions(session, written)
        if compaction is not None:
            still_seen = "\n".join(strings_in(await self.client.context(session)))
        ours = await self.summary(session, compaction)
        if ours is None:
            return ""  # nothing before the compaction that contextd could summarize
        span = set(ours["summarizeEntryIds"])
        entries = await self.entries(session, [entry for entry in agent_messages if entry in span])
        earlier = await self.summary(session, previous) if previous and await self.holds_almost_nothing(session, previous) else None
        return added_context(
            ours["summary"], still_seen, max_tokens,
            span_entries=entries, earlier_span=earlier["summary"] if earlier else "",
        )

    async def summary(self, session: str, compaction: dict[str, Any] | None) -> dict[str, Any] | None:
        """contextd's summary of the span `compaction` folded (None: up to the leaf); None
        when nothing comes before its first kept entry."""
        span: dict[str, Any] = {"sessionId": session}
        if compaction is not None:
            span["throughEntryId"] = compaction["parentId"]
            if compaction.get("firstKeptEntryId"):
                span["firstKeptEntryId"] = compaction["firstKeptEntryId"]
        try:
            return dict(await self.client.request("contextd/history/summarize", span))
        except ContextdError:
            return None

    async def holds_almost_nothing(self, session: str, compaction: dict[str, Any]) -> bool:
        """Whether the agent's own summary of `compaction` holds almost nothing (encrypted)."""
        rows = await self.entries(session, [compaction["id"]])
        return bool(rows) and not rows[0].get("truncated") and holds_almost_nothing(str(rows[0].get("text") or ""))

    async def entries(self, session: str, ids: list[str]) -> list[dict[str, Any]]:
        """The entries `ids` as `contextd/history/get` gives them, a batch at a time (a batch
        returns what fits, the rest is asked again)."""
        rows: list[dict[str, Any]] = []
        pending = list(ids)
        while pending:
            batch = pending[:HISTORY_GET_IDS]
            got = await self.client.request(
                "contextd/history/get", {"sessionId": session, "entryIds": batch, "maxTokens": HISTORY_GET_TOKENS},
            )
            if not got["entries"]:
                break
            rows += got["entries"]
            pending = list(got["omitted"]) + pending[len(batch) :]
        return rows


def strings_in(value: Any) -> list[str]:
    """The text of a JSON value: its strings but the objects' keys (the context's messages:
    the texts, tool calls' arguments and results, the instructions)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings_in(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings_in(item)]
    return []


def agent_compactions(agent: str, transcript: Path) -> tuple[int, str]:
    """How many compactions the agent's transcript records, and the latest one's summary
    ("" when none is written yet)."""
    count, summary = 0, ""
    with transcript.open("rb") as file:
        for line in file:
            if COMPACTION_RECORDS[agent].search(line):
                count += 1
            text = SUMMARY_OF[agent](line) if SUMMARY_MARKERS[agent] in line else None
            if text:
                summary = text
    return count, summary


def claude_code_summary(line: bytes) -> str | None:
    """The summary message Claude Code writes after its compact boundary."""
    record = _json(line)
    if not record.get("isCompactSummary"):
        return None
    content = (record.get("message") or {}).get("content")
    if isinstance(content, list):
        return "\n".join(block.get("text", "") for block in content if isinstance(block, dict))
    return content if isinstance(content, str) else None


def codex_summary(line: bytes) -> str | None:
    """The summary of a Codex `compacted` record."""
    record = _json(line)
    message = (record.get("payload") or {}).get("message") if record.get("type") == "compacted" else None
    return message if isinstance(message, str) else None


def _json(line: bytes) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except ValueError:
        return {}  # a line still being written
    return record if isinstance(record, dict) else {}


SUMMARY_MARKERS = {"claude-code": b"isCompactSummary", "codex": b"compacted"}
SUMMARY_OF = {"claude-code": claude_code_summary, "codex": codex_summary}


async def hook_command(agent: str, connect: Connect, max_tokens: int) -> int:
    """Read the event, answer within HOOK_SECONDS; a failure is a line on stderr, never a
    non-zero exit that would stop the agent."""
    try:
        event = json.loads(sys.stdin.read() or "{}")
    except ValueError as error:
        print(f"contextd hook: the event on stdin is not JSON ({error})", file=sys.stderr)
        return 0
    if not isinstance(event, dict):
        return 0
    try:
        answer = await asyncio.wait_for(run_hook(agent, event, connect, max_tokens), HOOK_SECONDS)
    except (TimeoutError, asyncio.TimeoutError):
        print(f"contextd hook: the mirror did not catch up within {HOOK_SECONDS:g} s; nothing added", file=sys.stderr)
        return 0
    except Exception as error:  # noqa: BLE001 -- the agent goes on whatever happens here
        print(f"contextd hook: {type(error).__name__}: {error}; nothing added", file=sys.stderr)
        return 0
    if answer is not None:
        print(json.dumps(answer, ensure_ascii=False))
    return 0
