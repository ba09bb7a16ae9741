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
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from contextd_client import render
from contextd_client import types as t
from contextd_client.client import ContextdClient
from contextd_client.rpc import ContextdError

INVALID_PARAMS = -32602
MESSAGE_FIELD = re.compile(r"messages\.(\d+)")

COMPACTION_START_GRACE_SECONDS = 1.0
COMPACTION_TIMEOUT_SECONDS = 300.0


class ReplayFileError(ValueError):
    """The replay file cannot be read or holds something that is not a message; the message
    names the file and the line."""


@dataclass
class ReplayFile:
    """The messages of a replay file and the line each came from."""

    path: str
    messages: list[t.Message]
    lines: list[int]

    def line_of(self, index: int) -> int:
        return self.lines[index]


def _message_adapter() -> Any:
    from contextd.model import Message
    from pydantic import TypeAdapter

    return TypeAdapter(Message)


def read_messages(lines: Iterable[str], *, keep_usage: bool = True, source: str = "", check: bool = True) -> ReplayFile:
    """Messages checked against the daemon's own model, so a bad line is reported with its
    number before any session exists; `check=False` for a file contextd ships, which its
    tests check (the daemon checks every message it is sent anyway)."""
    adapter = _message_adapter() if check else None
    where = f"{source} " if source else ""
    found = ReplayFile(source, [], [])
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as error:
            raise ReplayFileError(f"{where}line {number}: not valid JSON ({error})") from None
        if not isinstance(value, dict):
            raise ReplayFileError(f"{where}line {number}: not a JSON object")
        if value.get("type") == "message" and isinstance(value.get("message"), dict):
            value = value["message"]
        elif "role" not in value:
            continue  # a session header or a non-message entry of a session file
        if not keep_usage:
            value = {key: item for key, item in value.items() if key != "usage"}
        if adapter is not None and (problems := _problems(adapter, value)):
            raise ReplayFileError(f"{where}line {number}: not a message ({problems})")
        found.messages.append(value)
        found.lines.append(number)
    return found


def _problems(adapter: Any, value: Any) -> str | None:
    """Why `value` is not a message (its first three problems), or None."""
    from pydantic import ValidationError

    try:
        adapter.validate_python(value)
    except ValidationError as error:
        return "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'message'}: {item['msg']}"
            for item in error.errors(include_url=False, include_input=False)[:3]
        )
    return None


def read_file(path: Path, *, keep_usage: bool = True) -> ReplayFile:
    try:
        with path.open(encoding="utf-8") as handle:
            return read_messages(handle, keep_usage=keep_usage, source=str(path))
    except UnicodeDecodeError as error:
        raise ReplayFileError(
            f"{path} is not a UTF-8 text file (byte {error.start}); a replay file is JSONL"
        ) from None
    except OSError as error:
        raise ReplayFileError(f"cannot read {path}: {error.strerror}") from None


def with_window(settings: dict[str, Any], model: str, window: int | None) -> dict[str, Any]:
    """Settings that give `model` a context window of `window` tokens.

    The compaction reserve and kept tail scale down with the window (a tenth and a fifth of
    it) unless the settings choose them: the defaults (16,384 and 20,000) would leave no room
    for compaction in a small window.
    """
    if window is None:
        return settings
    models = dict(settings.get("models") or {})
    models[model] = {**models.get(model, {}), "contextWindow": window}
    scaled = {"reserveTokens": max(window // 10, 1), "keepRecentTokens": max(window // 5, 1)}
    compaction = {**scaled, **(settings.get("compaction") or {})}
    return {**settings, "models": models, "compaction": compaction}


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
    """The live usage line. On a terminal, rich redraws it in place at the terminal's width and
    prints events above it; otherwise a line is printed each time the fill crosses another
    tenth, so logs stay short."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        from rich.console import Console

        # soft_wrap: lines that stay are left whole for the terminal (or a log) to wrap; only
        # the live line must fit the width, and UsageLine draws it to fit.
        self.console = Console(file=stream or sys.stdout, highlight=False, soft_wrap=True)
        self.live_display: Any = None
        self.last: dict[str, Any] | None = None
        self._printed_bucket: int | None = None
        if self.console.is_terminal:
            from rich.live import Live

            self.live_display = Live(
                render.UsageLine(self), console=self.console, auto_refresh=False, transient=True
            )
            self.live_display.start()

    def note(self, line: str) -> None:
        """A line of text that stays (printed above the live line)."""
        self.console.print(line, markup=False)

    def usage(self, body: dict[str, Any]) -> None:
        self.last = body
        if self.live_display is not None:
            self.live_display.refresh()
            return
        bucket = int(body["percent"] // 10)
        if bucket != self._printed_bucket:
            self._printed_bucket = bucket
            self.note(render.usage_line(body, self.console.width))

    def event(self, line: str) -> None:
        self.note(line)
        if self.live_display is None:
            self._printed_bucket = None
        else:
            self.live_display.refresh()

    def finish(self) -> None:
        """Stop redrawing; the last figure stays on screen as a plain line."""
        if self.live_display is not None:
            self.live_display.stop()
            self.live_display = None
            if self.last is not None:
                self.note(render.usage_line(self.last, self.console.width))
        elif self.last is not None and self._printed_bucket is not None:
            self.note(render.usage_line(self.last, self.console.width))
            self._printed_bucket = None


@dataclass
class ReplayReport:
    session_id: str
    appended: int = 0
    compactions: list[t.CompactionFinished] = field(default_factory=list)
    last_usage: dict[str, Any] | None = None


class _CompactionTracker:
    """Follows the compactions of one session through their notifications."""

    def __init__(self, client: ContextdClient, session_id: str, display: UsageDisplay | None) -> None:
        self.session_id = session_id
        self.display = display
        self.running: set[str] = set()
        self.started_count = 0
        self.finished: list[t.CompactionFinished] = []
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
            started = cast(t.CompactionStarted, params)
            self.running.add(started["compactionId"])
            self.started_count += 1
            if self.display:
                self.display.event(render.compaction_started(started))
        elif method == t.COMPACTION_FINISHED:
            finished = cast(t.CompactionFinished, params)
            self.running.discard(finished["compactionId"])
            self.finished.append(finished)
            if self.display:
                self.display.event(render.compaction_finished(finished))
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
    source: ReplayFile,
    *,
    display: UsageDisplay | None,
    delay: float = 0.0,
) -> ReplayReport:
    """Append `source` step by step; a refused step's error names the file's line."""
    report = ReplayReport(session_id)
    tracker = _CompactionTracker(client, session_id, display)
    try:
        for step in steps(source.messages):
            started_before = tracker.started_count
            try:
                result = await client.append(session_id, step)
            except ContextdError as error:
                raise at_line(error, source, report.appended) from None
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


def at_line(error: ContextdError, source: ReplayFile, first: int) -> ContextdError:
    """The daemon's refusal of a step, pointing at the file's line instead of `messages.N`."""
    if error.code != INVALID_PARAMS:
        return error
    fields = [str(item.get("field", "")) for item in (error.data or {}).get("errors", [])]
    indices = [int(match.group(1)) for text in fields if (match := MESSAGE_FIELD.match(text))]
    index = first + (indices[0] if indices else 0)
    line = source.line_of(min(index, len(source.lines) - 1))
    message = MESSAGE_FIELD.sub("message", error.message)
    return ContextdError(error.code, f"{source.path or 'input'} line {line}: {message}", error.data)
