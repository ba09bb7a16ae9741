"""`SessionManager`: every session a daemon has open, created, found, loaded and evicted."""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextd.model import (
    Entry,
    HandoffEntry,
    ParentSession,
    SessionHeader,
    SessionInfoEntry,
    Settings,
)
from contextd.session.events import SessionEvents, SilentEvents
from contextd.session.live import LiveSession
from contextd.store import EntryTree, SessionListing, Store, new_session_id

log = logging.getLogger(__name__)


class SessionManager:
    """Every session this daemon has open, loaded on demand and evicted when unused."""

    max_loaded = 64
    """Open sessions kept in memory; the least recently used beyond this are written off to
    disk (they already are) and reloaded on their next request."""

    def __init__(self, store: Store, settings: Settings, events: SessionEvents) -> None:
        self.store = store
        self.settings = settings
        self.events = events
        self._loaded: OrderedDict[str, LiveSession] = OrderedDict()

    def create(
        self,
        workspace: str,
        *,
        name: str | None = None,
        model: str | None = None,
        parent: ParentSession | None = None,
    ) -> LiveSession:
        header = SessionHeader(
            id=new_session_id(), workspace=workspace, name=name, parentSession=parent
        )
        session = LiveSession(self.store.create(header), EntryTree(), self.settings, self.events)
        session.set_model(model or self.settings.defaultModel)
        if name:
            session.append_node(SessionInfoEntry, name=name)
        self._remember(session)
        return session

    def fork(self, source: LiveSession, entry_id: str) -> LiveSession:
        """A new session whose history is the path from the root through `entry_id` (and the
        results of its tool calls, when it called tools)."""
        path = source.fork_history(entry_id)
        header = SessionHeader(
            id=new_session_id(),
            workspace=source.header.workspace,
            name=source.name,
            parentSession=ParentSession(id=source.session_id, entryId=entry_id),
        )
        file = self.store.create(header)
        for entry in path:
            file.append(entry)
        session = LiveSession(file, tree_of(path), self.settings, self.events)
        self._remember(session)
        return session

    async def handoff(self, source: LiveSession, goal: str | None) -> tuple[LiveSession, HandoffEntry]:
        """Write a handoff document with the summarizer and start a new session with it."""
        return await source.handoff(
            goal,
            lambda parent: self.create(source.header.workspace, model=source.model_id, parent=parent),
        )

    def get(self, session_id: str) -> LiveSession:
        """The live session, loading it from disk when it is not in memory."""
        session = self._loaded.get(session_id)
        if session is not None:
            self._loaded.move_to_end(session_id)
            return session
        listing = self.store.find_session(session_id)
        return self._load(listing)

    def _load(self, listing: SessionListing) -> LiveSession:
        file, loaded = self.store.open(listing)
        session = LiveSession(file, tree_of(loaded.entries), self.settings, self.events)
        self._remember(session)
        return session

    def _remember(self, session: LiveSession) -> None:
        session.hand_off = lambda: self.handoff(session, None)
        self._loaded[session.session_id] = session
        idle = [
            sid
            for sid, live in self._loaded.items()
            if sid != session.session_id and not live.has_pending_work()
        ]
        for evicted_id in idle[: max(0, len(self._loaded) - self.max_loaded)]:
            self._loaded.pop(evicted_id).close()
            log.info("session %s evicted from memory; it reloads on its next request", evicted_id)

    def close(self, session_id: str) -> bool:
        session = self._loaded.pop(session_id, None)
        if session is None:
            self.store.find_session(session_id)  # unknown ids still answer "not found"
            return False
        session.close()
        return True

    def close_all(self) -> None:
        while self._loaded:
            _, session = self._loaded.popitem()
            session.close()

    def loaded_session(self, session_id: str) -> LiveSession | None:
        return self._loaded.get(session_id)

    def loaded(self) -> list[LiveSession]:
        return list(self._loaded.values())

    def apply_settings(self, settings: Settings) -> None:
        self.settings = settings
        for session in self._loaded.values():
            session.apply_settings(settings)
            session.events.token_usage(session.usage_body())

    def listing(self, workspace: str | None) -> list[dict[str, Any]]:
        rows = []
        for listing in self.store.listings(workspace):
            live = self._loaded.get(listing.session_id)
            rows.append(self._listing_row(listing, live))
        rows.sort(key=lambda row: row["updatedAt"], reverse=True)
        return rows

    def _listing_row(self, listing: SessionListing, live: LiveSession | None) -> dict[str, Any]:
        session = live or self._read_only_view(listing)
        header = session.header
        row: dict[str, Any] = {
            "sessionId": listing.session_id,
            "name": session.name,
            "workspace": header.workspace,
            "entries": sum(1 for _ in session.tree.nodes()),
            "tokens": session.tokens,
            "updatedAt": _updated_at(listing.path),
        }
        if header.parentSession is not None:
            row["parentSession"] = header.parentSession.model_dump(exclude_none=True)
        return row

    def _read_only_view(self, listing: SessionListing) -> LiveSession:
        """A session read from disk without taking its lock, for listing only."""
        file, loaded = self.store.peek(listing)
        return LiveSession(file, tree_of(loaded.entries), self.settings, SilentEvents())


def tree_of(entries: Iterable[Entry]) -> EntryTree:
    tree = EntryTree()
    for entry in entries:
        tree.add(entry)
    return tree


def _updated_at(path: Path) -> str:
    stamp = datetime.fromtimestamp(os.stat(path).st_mtime, UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
