"""`SessionManager`: every session a daemon has open, created, found, loaded and evicted."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress

from contextd import results
from contextd.collector import collector_paused
from contextd.compaction.short_summary import clip
from contextd.model import (
    Entry,
    HandoffEntry,
    MirrorSource,
    ParentSession,
    SessionHeader,
    SessionInfoEntry,
    Settings,
)
from contextd.session.counts import NOTHING_KEPT, read_kept
from contextd.session.events import SessionEvents, SilentEvents
from contextd.session.index import (
    ListingIndex,
    SessionSummary,
    counting_key,
    listing_row,
)
from contextd.session.live import LiveSession
from contextd.session.figure import SESSION_NAME_CHARS
from contextd.store import (
    EntryTree,
    LoadedFile,
    SessionDamaged,
    SessionFile,
    SessionListing,
    Store,
    StoreError,
    new_session_id,
)

log = logging.getLogger(__name__)


class SessionManager:
    """Every session this daemon has open, loaded on demand and evicted when unused."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        events: SessionEvents,
        settings_for: Callable[[str], Settings] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.settings_for = settings_for or (lambda workspace: self.settings)
        """The settings of a workspace's sessions (its editors' settings over the daemon's)."""
        self.events = events
        self.storage = settings.storage
        """How many sessions and entries are kept in memory; the least recently used beyond
        either bound without work under way are unloaded (their files already hold
        everything) and reloaded on their next request. An unloaded session stays open:
        this daemon keeps its lock until it is closed."""
        self._loaded: OrderedDict[str, LiveSession] = OrderedDict()
        self._loading: dict[str, asyncio.Future[LiveSession]] = {}
        self._let_go_entries = 0
        """Entries of the sessions that left memory since the last full collection."""
        self.index = ListingIndex(store, self.summarize_file)
        self.index.set_counting(counting_key(settings))

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
        session = LiveSession(self.store.create(header), EntryTree(), self.settings_for(workspace), self.events)
        with self._removed_on_failure(session.file):
            session.record_model(model or self.settings.defaultModel)
            if name:
                session.append_node(SessionInfoEntry, name=name)
        self._remember(session)
        return session

    def create_mirror(self, session_id: str, workspace: str, source: MirrorSource) -> LiveSession:
        """An empty session that will mirror another agent's transcript (contextd.follow):
        its file is made with its first entries (`write_mirrored`, after the announcement),
        and a daemon stopped before reads that part of the transcript again."""
        header = SessionHeader(id=session_id, workspace=workspace, source=source)
        session = LiveSession(self.store.create_at_first_write(header), EntryTree(), self.settings_for(workspace), self.events)
        self._remember(session)
        return session

    def fork(self, source: LiveSession, entry_id: str) -> LiveSession:
        """A new session whose history is the path from the root through `entry_id` (and the
        results of its tool calls, when it called tools)."""
        path = source.fork_history(entry_id)
        header = SessionHeader(
            id=new_session_id(),
            workspace=source.header.workspace,
            name=f"{source.name} (fork)" if source.name else None,
            parentSession=ParentSession(id=source.session_id, entryId=entry_id),
        )
        file = self.store.create(header)
        with self._removed_on_failure(file):
            file.append_all(path)
        session = LiveSession(file, tree_of(path), self.settings_for(header.workspace), self.events)
        self._remember(session)
        return session

    async def handoff(self, source: LiveSession, goal: str | None) -> tuple[LiveSession, HandoffEntry]:
        """Write a handoff document with the summarizer and start a new session with it."""
        name = handoff_name(goal, source.name or source.session_id)
        return await source.handoff(
            goal,
            lambda parent: self.create(source.header.workspace, name=name, model=source.model_id, parent=parent),
        )

    @contextmanager
    def _removed_on_failure(self, file: SessionFile) -> Iterator[None]:
        """A session being made whose first entries cannot be stored (a full disk) is
        removed again: a failed request leaves nothing behind."""
        try:
            yield
        except BaseException:
            file.close()
            with suppress(OSError, StoreError):
                self.store.remove(SessionListing(file.session_id, file.path, ""))
            raise

    def get(self, session_id: str) -> LiveSession:
        """The live session, loading it from disk when it is not in memory."""
        session = self._loaded.get(session_id)
        if session is not None:
            self._loaded.move_to_end(session_id)
            self._unload_beyond_bounds(keep=session_id)  # it may have grown since
            return session
        return self._remember(self._read(session_id))

    async def load(self, session_id: str) -> None:
        """Bring a session into memory without holding up the event loop: the file is read
        and counted in a worker thread. Concurrent loads of one session share one read, and
        the session joins the others even if the request that started the read is cancelled."""
        if session_id in self._loaded:
            return
        pending = self._loading.get(session_id)
        if pending is None:
            pending = asyncio.ensure_future(asyncio.to_thread(self._read, session_id))
            self._loading[session_id] = pending
            pending.add_done_callback(lambda done: self._loaded_from_disk(session_id, done))
        await asyncio.shield(pending)

    def _loaded_from_disk(self, session_id: str, done: asyncio.Future[LiveSession]) -> None:
        del self._loading[session_id]
        if done.cancelled() or done.exception() is not None:
            return
        if session_id not in self._loaded:  # else a synchronous `get` was quicker
            self._remember(done.result())

    def _read(self, session_id: str) -> LiveSession:
        """Load a session from its file: under the lock this daemon still holds when the
        session was only unloaded from memory, else under a lock taken now."""
        listing = self.store.find_session(session_id)
        with collector_paused():  # all that a load makes survives: nothing to collect
            kept = read_kept(listing.path)
            known = kept.lines if kept is not None else None
            if self.store.holds(session_id):
                file, loaded = self.store.reload(listing, known)
            else:
                file, loaded = self.store.open(listing, known)
            kept = kept if kept is not None and kept.fits(loaded.stamp) else NOTHING_KEPT
            return LiveSession(file, loaded_tree(loaded), self.settings_for(file.header.workspace), self.events, kept)

    def _remember(self, session: LiveSession) -> LiveSession:
        session.hand_off = lambda: self.handoff(session, None)
        self._loaded[session.session_id] = session
        self._unload_beyond_bounds(keep=session.session_id)
        return session

    def _unload_beyond_bounds(self, keep: str) -> None:
        """Unload the least recently used idle sessions but `keep` while more sessions or
        entries than the storage settings allow are in memory."""
        sessions = len(self._loaded)
        entries = sum(len(live.tree.entries) for live in self._loaded.values())
        for session_id, live in list(self._loaded.items()):
            if sessions <= self.storage.maxLoadedSessions and entries <= self.storage.maxLoadedEntries:
                return
            held = len(live.tree.entries)
            if session_id != keep and self.unload(session_id):
                sessions, entries = sessions - 1, entries - held

    def unload(self, session_id: str) -> bool:
        """A loaded session without work under way leaves memory; it stays open (this
        daemon keeps its lock) and reloads on its next request. Returns whether it left."""
        session = self._loaded.get(session_id)
        if session is None or session.has_pending_work():
            return False
        del self._loaded[session_id]
        self._keep_row(session)
        session.unload()
        self._let_go(session)
        log.info("session %s unloaded from memory (still locked); it reloads on its next request", session_id)
        return True

    def close(self, session_id: str) -> bool:
        """The client is done with the session: it leaves memory and its lock is released."""
        session = self._loaded.pop(session_id, None)
        if session is not None:
            self._keep_row(session)
            session.close()
            self._let_go(session)
            return True
        if self.store.holds(session_id):
            self.store.release(session_id)
            return True
        self.store.find_session(session_id)  # unknown ids still answer "not found"
        return False

    def _let_go(self, session: LiveSession) -> None:
        """A session that left memory is freed as its last reference goes: its hand-off
        (which holds it) goes with it, and its calibration holds it only weakly
        (counting.py). What a load makes is promoted straight to the collector's oldest
        generation (collector.py), whose full passes CPython runs only when its younger
        passes kept a quarter as many objects, which such objects never count: a session
        held in a cycle stayed in memory, and sessions unloaded and reloaded in turn (more
        in use than maxLoadedEntries holds) grew a daemon by a session at every reload (20
        clients on 2,000-entry sessions beyond a 10,000-entry bound: 10 GB in 2,000
        appends). Should a cycle still hold one, a full pass runs once the entries let go
        reach maxLoadedEntries: that garbage stays within the bound."""
        session.hand_off = None
        self._let_go_entries += len(session.tree.entries)
        if self._let_go_entries >= self.storage.maxLoadedEntries:
            self._let_go_entries = 0
            gc.collect()

    def _keep_row(self, session: LiveSession) -> None:
        """The listing's row of a session leaving memory, taken from memory unless memory
        holds entries the file does not (then the row is made from the file when listed)."""
        if not session.unsaved:
            self.index.remember(session.file.path, summary_of(session))

    async def delete(self, session_id: str) -> LiveSession:
        """Delete a session's files, whether this daemon has it open or not (SessionLocked
        when another daemon does): its work stops, its row leaves the index, and it is
        announced as deleted. Returns the session as it was."""
        pending = self._loading.get(session_id)
        if pending is not None:
            await asyncio.shield(pending)  # a load under way would bring it back otherwise
        listing = self.store.find_session(session_id)
        session = self._loaded.get(session_id) or self._view(listing)
        self.store.remove(listing)
        self._loaded.pop(session_id, None)
        session.close()
        await asyncio.to_thread(self.index.forget, listing.path)
        session.announce_deletion()
        return session

    def _view(self, listing: SessionListing) -> LiveSession:
        """A session as its file holds it, without its lock; a damaged one as empty (it can
        still be deleted)."""
        try:
            file, loaded = self.store.peek(listing)
            tree = glanced_tree(loaded)
        except SessionDamaged:
            file = SessionFile.read_only(listing.path, SessionHeader(id=listing.session_id, workspace=listing.workspace))
            tree = EntryTree()
        return LiveSession(file, tree, self.settings, self.events)

    def close_all(self) -> None:
        while self._loaded:
            _, session = self._loaded.popitem()
            session.close()
        self.store.release_all()

    def loaded_session(self, session_id: str) -> LiveSession | None:
        return self._loaded.get(session_id)

    def loaded(self) -> list[LiveSession]:
        return list(self._loaded.values())

    def apply_settings(self, settings: Settings) -> None:
        self.settings = settings
        self.storage = settings.storage
        self.index.set_counting(counting_key(settings))
        for session in self._loaded.values():
            own = self.settings_for(session.header.workspace)
            if own != session.settings:
                session.apply_settings(own)
                session.events.token_usage(session.usage())
                session.touch()  # the idle timer as the new settings have it: armed, or no more

    async def listing(self, workspace: str | None) -> list[results.SessionSummary]:
        """Every session, most recently updated first. Live sessions are listed from memory;
        the others from the index, brought up to date in a worker thread."""
        directories = set(self.store.workspace_dirs(workspace))
        rows = [
            listing_row(session.session_id, summary_of(session), session.updated_at())
            for session in self._loaded.values()
            if session.file.path.parent.parent in directories
        ]
        rows += await asyncio.to_thread(self.index.rows, workspace, set(self._loaded))
        rows.sort(key=lambda row: row["updatedAt"], reverse=True)
        return rows

    def summarize_file(self, listing: SessionListing) -> SessionSummary:
        """A session read from disk without taking its lock, for listing only."""
        return summary_of(self.peek(listing))

    def peek(self, listing: SessionListing) -> LiveSession:
        """A session read from disk without taking its lock, to read its figures only."""
        file, loaded = self.store.peek(listing)
        return LiveSession(file, glanced_tree(loaded), self.settings, SilentEvents())


def summary_of(session: LiveSession) -> SessionSummary:
    parent = session.header.parentSession
    return SessionSummary(
        name=session.name,
        workspace=session.header.workspace,
        entries=session.node_count,
        tokens=session.tokens,
        parentSession=parent.model_dump(exclude_none=True) if parent is not None else None,
        source=session.source,
    )


def tree_of(entries: Iterable[Entry]) -> EntryTree:
    tree = EntryTree()
    for entry in entries:
        tree.add(entry)
    return tree


def loaded_tree(loaded: LoadedFile) -> EntryTree:
    """The tree of a file's entries, their lines kept for the entries that will be cold."""
    tree = EntryTree()
    for entry, line in zip(loaded.entries, loaded.lines):
        tree.add(entry, line)
    return tree


def glanced_tree(loaded: LoadedFile) -> EntryTree:
    """The tree of a file read to be looked at and let go (`EntryTree.glance`)."""
    tree = EntryTree(glance=True)
    for entry in loaded.entries:
        tree.add(entry)
    return tree


def handoff_name(goal: str | None, source_name: str) -> str:
    """A hand-off session is named after its goal (its first line), else after its source."""
    first_line = (goal or "").strip().splitlines()[0:1]
    if first_line and first_line[0].strip():
        text = first_line[0].strip()
        return clip(text, SESSION_NAME_CHARS)
    return f"hand-off of {source_name}"
