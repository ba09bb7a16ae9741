"""The compaction or handoff a session is running: the live state holds it, the jobs make it
(a module of its own, so that neither of the two imports the other)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any


@dataclass
class RunningCompaction:
    compaction_id: str
    reason: str
    task: asyncio.Task[Any] | None
    aborted: bool = False
    will_retry: bool = False
    """Whether the client should resend its request once this job is done."""
