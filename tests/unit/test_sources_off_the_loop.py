"""Tracing a summary's items to their entries, and a dry run's summary, run off the event loop.

On a large session the tracing scans every summarized message for every item (about 0.2 s
for 136k tokens): the daemon must answer other requests meanwhile. The tracing function is
gated here until the loop itself releases it; run on the loop, it would wait in vain.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from contextd.compaction import provenance
from contextd.compaction.prepare import offline_summary
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    Settings,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from contextd.results import CompactPreview
from contextd.session import SessionManager, SilentEvents, jobs
from contextd.store import Store

SETTINGS = Settings.model_validate({"compaction": {"keepRecentTokens": 200}, "pruning": {"enabled": False}})
GATE_SECONDS = 30


def turn(index: int) -> list[Any]:
    return [
        UserMessage(content=f"Fix the failing test in src/file_{index}.py please. " + "detail " * 30),
        AssistantMessage(
            content=[TextContent(text="Running it."), ToolCall(id=f"c{index}", name="bash", arguments={"command": "pytest -q"})],
            stopReason="toolUse",
        ),
        ToolResultMessage(toolCallId=f"c{index}", toolName="bash", content=f"FAILED tests/test_{index}.py::test_x - KeyError: 'k{index}'", isError=True),
        AssistantMessage(content=[TextContent(text=f"The cause is a missing key k{index} in src/file_{index}.py.")]),
    ]


def test_a_compaction_traces_its_sources_off_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entered = threading.Event()
    released = threading.Event()
    calls: list[tuple[Any, ...]] = []

    def gated(*args: Any) -> Any:
        calls.append(args)
        entered.set()
        assert released.wait(GATE_SECONDS), "the loop never got to release the tracing: it ran on the loop"
        return provenance.compaction_details(*args)

    monkeypatch.setattr(jobs, "compaction_details", gated)
    sessions = SessionManager(Store(tmp_path), SETTINGS, SilentEvents())

    async def scenario() -> CompactionEntry:
        session = sessions.create("/ws")
        for index in range(4):
            session.append_messages(turn(index))
        compaction = asyncio.ensure_future(session.compact("manual"))
        assert await asyncio.to_thread(entered.wait, GATE_SECONDS)
        released.set()  # only a free loop gets here while the tracing is under way
        return await compaction

    entry = asyncio.run(scenario())
    sessions.close_all()

    assert entry.details == provenance.compaction_details(*calls[0]), "the same details as traced on the loop"
    goal = [item for item in entry.details.sources or [] if item.section == "Goal"]
    assert goal and goal[0].entryIds


def test_a_dry_run_writes_its_preview_summary_off_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entered = threading.Event()
    released = threading.Event()

    def gated(prepared: Any) -> str:
        entered.set()
        assert released.wait(GATE_SECONDS), "the loop never got to release the summary: it ran on the loop"
        return offline_summary(prepared)

    monkeypatch.setattr(jobs, "offline_summary", gated)
    sessions = SessionManager(Store(tmp_path), SETTINGS, SilentEvents())

    async def scenario() -> CompactPreview:
        session = sessions.create("/ws")
        for index in range(4):
            session.append_messages(turn(index))
        preview = asyncio.ensure_future(session.preview_compaction())
        assert await asyncio.to_thread(entered.wait, GATE_SECONDS)
        released.set()
        return await preview

    preview = asyncio.run(scenario())
    sessions.close_all()
    assert "src/file_1.py" in preview.summary, "the preview summarizes what the dry run would fold away"
