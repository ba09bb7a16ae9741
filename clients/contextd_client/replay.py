"""Replaying a recorded conversation into a session while showing what the daemon reports.

A replay file is JSONL: each line a message (`{"role": ...}`, as in protocol.md) or a
contextd `message` entry (`{"type": "message", "message": {...}}`, so a session file
replays too); other lines of a session file are skipped. Messages are appended one step at a
time: a user message, or an assistant message together with the tool results answering it.
Like an agent waiting for its next model call, the replay waits for a compaction the daemon
started before it appends the next step.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from contextd_client import render
from contextd_client import types as t
from contextd_client.client import ContextdClient

COMPACTION_START_GRACE_SECONDS = 1.0
COMPACTION_TIMEOUT_SECONDS = 300.0


class ReplayFileError(ValueError):
    """The replay file cannot be read; the message names the line."""


def read_messages(lines: Iterable[str], *, keep_usage: bool = True) -> list[t.Message]:
    messages: list[t.Message] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as error:
            raise ReplayFileError(f"line {number}: not valid JSON ({error})") from None
        if not isinstance(value, dict):
            raise ReplayFileError(f"line {number}: not a JSON object")
        if value.get("type") == "message" and isinstance(value.get("message"), dict):
            value = value["message"]
        elif "role" not in value:
            continue  # a session header or a non-message entry of a session file
        if not keep_usage:
            value = {key: item for key, item in value.items() if key != "usage"}
        messages.append(value)
    return messages


def read_file(path: Path, *, keep_usage: bool = True) -> list[t.Message]:
    try:
        with path.open(encoding="utf-8") as handle:
            return read_messages(handle, keep_usage=keep_usage)
    except OSError as error:
        raise ReplayFileError(f"cannot read {path}: {error.strerror}") from None


def steps(messages: list[t.Message]) -> list[list[t.Message]]:
    """Messages grouped as an agent appends them: tool results ride with their call."""
    grouped: list[list[t.Message]] = []
    for message in messages:
        if message.get("role") == "toolResult" and grouped:
            grouped[-1].append(message)
        else:
            grouped.append([message])
    return grouped


class UsageDisplay:
    """The live usage bar. On a terminal it redraws in place; otherwise it prints a line each
    time the fill crosses another tenth, so logs stay short."""

    def __init__(self, stream: IO[str] = sys.stdout) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.last: dict[str, Any] | None = None
        self._printed_bucket: int | None = None

    def usage(self, body: dict[str, Any]) -> None:
        self.last = body
        if self.live:
            self.stream.write("\r\033[K" + render.usage_bar(body))
            self.stream.flush()
            return
        bucket = int(body["percent"] // 10)
        if bucket != self._printed_bucket:
            self._printed_bucket = bucket
            self.stream.write(render.usage_bar(body) + "\n")
            self.stream.flush()

    def event(self, line: str) -> None:
        if self.live:
            self.stream.write("\r\033[K" + line + "\n")
            if self.last is not None:
                self.stream.write(render.usage_bar(self.last))
        else:
            self.stream.write(line + "\n")
            self._printed_bucket = None
        self.stream.flush()

    def finish(self) -> None:
        if self.live:
            self.stream.write("\n")
        elif self.last is not None and self._printed_bucket is not None:
            self.stream.write(render.usage_bar(self.last) + "\n")
        self.stream.flush()


@dataclass
class ReplayReport:
    session_id: str
    appended: int = 0
    compactions: list[dict[str, Any]] = field(default_factory=list)
    last_usage: dict[str, Any] | None = None


class _CompactionTracker:
    """Follows the compactions of one session through their notifications."""

    def __init__(self, client: ContextdClient, session_id: str, display: UsageDisplay | None) -> None:
        self.session_id = session_id
        self.display = display
        self.running: set[str] = set()
        self.started_count = 0
        self.finished: list[dict[str, Any]] = []
        self.last_usage: dict[str, Any] | None = None
        self.none_came = False
        self.changed = asyncio.Event()
        self._remove = client.on(None, self._on_notification)

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if params.get("sessionId") != self.session_id:
            return
        if method == t.TOKEN_USAGE:
            self.last_usage = params
            if self.display:
                self.display.usage(params)
        elif method == t.COMPACTION_STARTED:
            self.running.add(params["compactionId"])
            self.started_count += 1
            if self.display:
                self.display.event(render.compaction_started(params))
        elif method == t.COMPACTION_FINISHED:
            self.running.discard(params["compactionId"])
            self.finished.append(params)
            if self.display:
                self.display.event(render.compaction_finished(params))
        self.changed.set()

    async def wait_for(self, condition: Any, timeout: float) -> bool:
        async def until() -> None:
            while not condition():
                self.changed.clear()
                await self.changed.wait()

        try:
            await asyncio.wait_for(until(), timeout)
        except TimeoutError:
            return False
        return True

    async def settle(self, usage: Mapping[str, Any], started_before: int) -> None:
        """Wait for the compaction this append set off, if it set one off."""
        over = usage["tokens"] >= usage["thresholdTokens"]
        if not over:
            self.none_came = False
        elif self.started_count == started_before and not self.running and not self.none_came:
            # Past the threshold the daemon should compact; when it does not (compaction
            # off, nothing to compact) waiting again on every append would only slow down.
            came = await self.wait_for(
                lambda: self.started_count > started_before, COMPACTION_START_GRACE_SECONDS
            )
            self.none_came = not came
        if self.running:
            await self.wait_for(lambda: not self.running, COMPACTION_TIMEOUT_SECONDS)

    def close(self) -> None:
        self._remove()


async def replay(
    client: ContextdClient,
    session_id: str,
    messages: list[t.Message],
    *,
    display: UsageDisplay | None,
    delay: float = 0.0,
) -> ReplayReport:
    report = ReplayReport(session_id)
    tracker = _CompactionTracker(client, session_id, display)
    try:
        for step in steps(messages):
            started_before = tracker.started_count
            result = await client.append(session_id, step)
            report.appended += len(step)
            await tracker.settle(result["usage"], started_before)
            if delay:
                await asyncio.sleep(delay)
        await tracker.wait_for(lambda: not tracker.running, COMPACTION_TIMEOUT_SECONDS)
    finally:
        tracker.close()
    report.compactions = tracker.finished
    report.last_usage = tracker.last_usage
    return report
