"""`LiveSession`: one open session, its state with every job that acts on it."""

from __future__ import annotations

from contextd.session.idle import IdleTimer
from contextd.session.navigation import Navigation


class LiveSession(IdleTimer, Navigation):
    """The live state (state.py) with its running job (jobs.py), automatic triggers
    (triggers.py), idle timer (idle.py) and navigation (navigation.py)."""

    def close(self) -> None:
        self.cancel_idle_timer()
        for task in list(self._tasks):
            task.cancel()
        self.abort_compaction()
        self.file.close()
