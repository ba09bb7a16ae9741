"""The daemon's side of following: a polling loop that keeps every mirror current.

Each round stats the agents' transcript folders in a worker thread, reads what the changed
files appended (in that thread too), then writes the new entries into their mirror sessions
on the event loop and announces them like any change: `sessionChanged`, `tokenUsage`,
`contextd/workspace/activity` (with the session's `source`), and for each compaction the
agent made a `compactionStarted`/`compactionFinished` pair with reason `agent`. Rounds are
`follow.intervalSeconds` apart; there is no busy loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from contextd.follow.memory import return_freed_memory
from contextd.follow.mirror import (
    READ_BUDGET,
    Change,
    Mirror,
    forget_state,
    forget_vanished,
    peek_workspace,
)
from contextd.follow.transcripts import FileStamp, TranscriptScan, root_of
from contextd.model import CompactionEntry, FollowSettings, MirrorSource
from contextd.results import CompactionFinished, CompactionStarted, FollowResult
from contextd.session.live import LiveSession
from contextd.store import SessionNotFound, Store, StoreError

if TYPE_CHECKING:
    from contextd.session.manager import SessionManager

log = logging.getLogger(__name__)

AGENT_COMPACTION: Final = "agent"
"""The reason of a compaction the followed agent made itself."""


class Follower:
    """Takes from its daemon only what following needs, each asked anew when used: the data
    directory and the session manager (settings can move or remake them), the workspaces the
    connections watch (None: all of them) and how a session is deleted for every connection."""

    def __init__(
        self,
        data_dir: Callable[[], Path],
        sessions: Callable[[], SessionManager],
        watched_workspaces: Callable[[], set[str] | None],
        delete_session: Callable[[str], Awaitable[object]],
    ) -> None:
        self._data_dir = data_dir
        self._sessions = sessions
        self._watched_workspaces = watched_workspaces
        self._delete_session = delete_session
        self.settings = FollowSettings()
        self.mirrors: dict[str, Mirror] = {}
        self._elsewhere: dict[str, tuple[FileStamp, str | None]] = {}
        """Transcripts not followed: their stamp and working directory (None: not named yet)."""
        self._scans: dict[str, TranscriptScan] = {}
        self._failing: set[str] = set()
        """Transcripts whose mirror could not be written (said once in the log)."""
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._swept = False
        """Whether the saved states of vanished transcripts were removed (once per daemon)."""

    @property
    def state_dir(self) -> Path:
        return self._data_dir() / "follow"

    # --- settings ---------------------------------------------------------------------

    def apply(self, settings: FollowSettings) -> None:
        """Follow as `settings` say from now on (a running loop picks them up at once)."""
        if settings != self.settings:
            self._scans.clear()
            self._elsewhere.clear()
            roots = {agent: root_of(agent, settings.roots) for agent in settings.agents}
            self.mirrors = {
                path: mirror
                for path, mirror in self.mirrors.items()
                if mirror.agent in roots and Path(path).is_relative_to(roots[mirror.agent])
            }
        self.settings = settings
        if settings.enabled and self._task is None:
            try:
                self._task = asyncio.get_running_loop().create_task(self._run())
            except RuntimeError:
                return  # no loop yet: started when the daemon serves (see Daemon.attach)
        elif not settings.enabled and self._task is not None:
            self.stop()
        self._wake.set()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def describe(self) -> FollowResult:
        settings = self.settings
        return FollowResult(
            enabled=settings.enabled,
            agents=list(settings.agents),
            roots={agent: root for agent, root in settings.roots.items()},
            allWorkspaces=settings.allWorkspaces,
            mirrors=len(self.mirrors),
        )

    # --- the loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception:  # a bad file must not end following
                log.exception("following: a round failed; the next one tries again")
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self.settings.intervalSeconds)
            except TimeoutError:
                pass

    async def round(self) -> None:
        """One look at every transcript, and every change written into its mirror: read
        READ_BUDGET bytes at a time, each part written before the next is read. Then the
        sessions of quiet mirrors leave memory (they reload on their next request), and
        once much was let go it is given back to the system."""
        settings, workspaces = self.settings, self._wanted_workspaces()
        store = self._sessions().store  # the manager is made on the loop, not in the thread
        grown = await asyncio.to_thread(self._look, settings, workspaces, store)
        read = sum(mirror.unread_bytes(stamp) for mirror, stamp in grown)
        while grown:
            changes, grown = await asyncio.to_thread(self._read_some, grown)
            failed = await self._write_all(changes)
            grown = [  # a failed mirror is tried again in the next round
                (mirror, stamp) for mirror, stamp in grown
                if mirror.path not in failed and self.mirrors.get(mirror.path) is mirror
            ]
        sessions = self._sessions()
        unloaded = [mirror for mirror in list(self.mirrors.values()) if mirror.quiet and sessions.unload(mirror.session_id)]
        if read >= READ_BUDGET or unloaded:
            return_freed_memory()

    async def _write_all(self, changes: list[Change]) -> set[str]:
        """Write each change into its mirror; returns the transcripts whose mirror failed."""
        failed = set()
        for change in changes:
            try:
                await self._write(change)
            except StoreError as error:  # e.g. another contextd process holds the mirror
                change.mirror.start_over()
                if change.mirror.path not in self._failing:
                    log.warning("following %s: %s; trying again in the next rounds", change.mirror.path, error)
                self._failing.add(change.mirror.path)
                failed.add(change.mirror.path)
            else:
                self._failing.discard(change.mirror.path)
        return failed

    def _wanted_workspaces(self) -> set[str] | None:
        """The workspaces whose transcripts are followed; None for every one."""
        return None if self.settings.allWorkspaces else self._watched_workspaces()

    # --- in the worker thread ---------------------------------------------------------

    def _look(
        self, settings: FollowSettings, workspaces: set[str] | None, store: Store
    ) -> list[tuple[Mirror, FileStamp]]:
        """The followed transcripts that changed since the last look, with their stamps."""
        if not self._swept:
            forget_vanished(self.state_dir)
            self._swept = True
        grown = []
        for agent in settings.agents:
            root = root_of(agent, settings.roots)
            scan = self._scans.setdefault(agent, TranscriptScan(agent, root))
            found = scan.scan()
            for path in [path for path, mirror in self.mirrors.items() if mirror.agent == agent and path not in found]:
                self.mirrors.pop(path).forget()  # the transcript is gone; its mirror stays as it was
            for path, stamp in found.items():
                mirror = self.mirrors.get(path) or self._start(agent, path, stamp, workspaces, store)
                if mirror is not None and not mirror.unchanged(stamp):
                    grown.append((mirror, stamp))
        return grown

    @staticmethod
    def _read_some(grown: list[tuple[Mirror, FileStamp]]) -> tuple[list[Change], list[tuple[Mirror, FileStamp]]]:
        """What the first of `grown` appended, READ_BUDGET bytes in all (at least one file's
        worth); returns the changes and the files left, and those not read to their end."""
        changes, left, budget = [], [], READ_BUDGET
        for index, (mirror, stamp) in enumerate(grown):
            if budget <= 0:
                left += grown[index:]
                break
            budget -= mirror.unread_bytes(stamp)
            try:
                change = mirror.catch_up(stamp)
            except OSError as error:
                log.warning("following %s: %s", mirror.path, error.strerror)
                continue
            if change is not None:
                changes.append(change)
            if mirror.seen != stamp:
                left.append((mirror, stamp))  # longer than the budget: more of it next
        return changes, left

    def _start(
        self, agent: Any, path: str, stamp: FileStamp, workspaces: set[str] | None, store: Store
    ) -> Mirror | None:
        """A mirror for a transcript seen for the first time (or changed since it was left
        aside), when its working directory is one followed."""
        seen = self._elsewhere.get(path)
        workspace = seen[1] if seen is not None else None
        if workspace is None and (seen is None or seen[0] != stamp):
            workspace = peek_workspace(agent, path)
        self._elsewhere[path] = (stamp, workspace)
        if workspace is None or not _followed(workspace, workspaces):
            return None
        del self._elsewhere[path]
        mirror = Mirror(agent, path, workspace, self.state_dir)
        if mirror.stored is not None and not _exists(store, mirror.session_id):
            mirror.start_over()  # its session was deleted while no daemon followed it
        self.mirrors[path] = mirror
        return mirror

    # --- on the event loop ------------------------------------------------------------

    async def _write(self, change: Change) -> None:
        mirror = change.mirror
        if self.mirrors.get(mirror.path) is not mirror:
            return  # no longer followed (the settings changed while the files were read)
        sessions = self._sessions()
        if change.reset:
            log.info("following %s: the file was rewritten; importing it again", mirror.path)
            with contextlib.suppress(SessionNotFound):
                await self._delete_session(mirror.session_id)  # its saved state is written anew below
        created = False
        try:
            await sessions.load(mirror.session_id)
            session = sessions.get(mirror.session_id)
        except SessionNotFound:
            if not change.from_start:  # the mirror was deleted: make it again from the start
                mirror.start_over()
                return
            source = MirrorSource(agent=mirror.agent, path=mirror.path)
            session = sessions.create_mirror(mirror.session_id, mirror.workspace, source)
            created = True
        fresh = [entry for entry in change.entries if entry.id not in session.tree.entries]
        leaf_before, tokens_before = session.leaf_id, session.tokens
        compactions = session.mirror_in_memory(fresh, change.leaf_id, change.pending_usage)
        for compaction in compactions:
            announce_compaction(session, compaction)
        if created:
            session.announce("open")
        elif fresh or session.leaf_id != leaf_before or session.tokens != tokens_before:
            session.announce("compaction" if compactions else "append")
        # The figure is out (sent as it is told); then the entries go into the mirror's file.
        # No request runs in between (nothing here awaits), so every request sees them
        # written. Then how far the transcript was read is saved: a crash before that reads
        # its part of the transcript again, and the ids already mirrored are not written twice.
        try:
            session.write_mirrored()
        except StoreError:
            sessions.close(mirror.session_id)  # what memory holds that the file does not goes
            raise
        mirror.written()
        session.count_in_background()


    def session_deleted(self, session_id: str) -> None:
        """A session was deleted: if it was a mirror, what was saved of its transcript goes
        too (the mirror is made again, whole, when the transcript next grows)."""
        forget_state(self.state_dir, session_id)


def _exists(store: Store, session_id: str) -> bool:
    try:
        store.find_session(session_id)
    except SessionNotFound:
        return False
    except StoreError:  # damaged: it is there, and writing it says why
        return True
    return True


def _followed(workspace: str, workspaces: set[str] | None) -> bool:
    if workspaces is None:
        return True
    return any(workspace == wanted or workspace.startswith(wanted.rstrip("/") + "/") for wanted in workspaces)


def announce_compaction(session: LiveSession, compaction: CompactionEntry) -> None:
    """The agent's own compaction, reported as contextd reports its own (reason `agent`)."""
    started = CompactionStarted(
        sessionId=session.session_id,
        compactionId=secrets.token_hex(6),
        reason=AGENT_COMPACTION,
        tokensBefore=compaction.tokensBefore,
    )
    session.events.compaction_started(started)
    session.events.compaction_finished(
        CompactionFinished(
            **dict(started),
            outcome="compacted",
            tokensAfter=compaction.tokensAfter,
            entryId=compaction.id,
            willRetry=False,
        )
    )
