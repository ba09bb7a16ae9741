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
        self.keep_counts()
        self.file.close()

    def unload(self) -> None:
        """Leave memory but stay open: the lock is kept, so nobody else writes the file
        before this daemon reloads it. Only a session without work under way is unloaded."""
        self.keep_counts()
        self.file.unload()

    def has_pending_work(self) -> bool:
        """A job running, a navigation summarizing or a timer armed: such a session
        stays in memory, since that work will still write to it."""
        return self._busy() or self.navigating or self.idle_timer_armed
