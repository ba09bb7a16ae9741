"""The daemon: one SessionManager for every connection, and who hears what.

A session's notifications go to every connection that has it open (that opened it, or
made any request on it) and to the connection whose request caused them. Settings come in
two kinds: per-connection keys (`PER_CONNECTION_KEYS`) apply to the connection that sent
them; every other key governs the sessions, which connections share, and is daemon-wide.
A dedicated daemon (`contextd serve` on stdio: one client) takes its client's daemon-wide
keys too; a daemon that serves many connections takes them from `--settings` only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from contextd.deprecations import warn_deprecated_models
from contextd.model import MAX_CONTENT_DEPTH, FollowedAgent, Settings, too_deep_setting
from contextd.results import (
    BeforeCompactAnswer,
    BeforeCompactParams,
    BeforeNavigateAnswer,
    BeforeNavigateParams,
    ChangeCause,
    CompactionFinished,
    CompactionStarted,
    ConnectionRow,
    DaemonStatus,
    IdleTimer,
    LoadedSession,
    MessageType,
    SessionChanged,
    TokenUsage,
    WorkDoneProgressBegin,
    WorkDoneProgressEnd,
    WorkDoneProgressReport,
    WorkDoneProgressValue,
    WorkspaceActivity,
)
from contextd.settings import (
    Layer,
    SettingsFile,
    covers,
    describe_unknown,
    explicit_part,
    is_known,
    is_owner_only,
    is_per_connection,
    keep_keys,
    leaves,
    resolve,
    set_key,
    unknown_keys,
    user_settings_path,
)
from contextd.rpc.access import TcpToken
from contextd.rpc.connection import Connection, ConnectionLost, Handler, WriteLimit, current_connection
from contextd.rpc.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_TOTAL_WRITE_BUFFER_BYTES,
    DEFAULT_MAX_WRITE_BUFFER_BYTES,
)
from contextd.rpc.lsp import create_progress, report_progress, show_message
from contextd.rpc.messages import INVALID_PARAMS, RpcError
from contextd.session import HookAnswer, LiveSession, SessionManager
from contextd.store import Store, default_data_dir
from contextd.tokens import get_encoding, resolve_model
from contextd.tokens.encodings import cache_ranks_in

if TYPE_CHECKING:  # imported when used: a daemon that follows nothing never loads them
    from contextd.follow import Follower
    from contextd.history import IndexWriter

log = logging.getLogger(__name__)

SessionBody = TokenUsage | SessionChanged | CompactionStarted | CompactionFinished | IdleTimer
"""A notification about one session, for the connections watching it."""

USER_FILE_POLL_SECONDS = 1.0


def utc_time(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def inside(workspace: str, folder: str) -> bool:
    return workspace == folder or workspace.startswith(folder.rstrip(os.sep) + os.sep)

def field_errors(error: ValidationError, prefix: str = "") -> list[dict[str, str]]:
    return [
        {
            "field": prefix + (".".join(str(part) for part in item["loc"]) or "params"),
            "message": item["msg"],
        }
        for item in error.errors(include_url=False, include_input=False)
    ]


def invalid_params(errors: list[dict[str, str]]) -> RpcError:
    summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
    return RpcError(INVALID_PARAMS, f"invalid params: {summary}", {"errors": errors})


def parse_settings(raw: Any) -> Layer:
    """A client's settings as a layer of explicit keys, or -32602 naming the bad keys."""
    layer = raw if isinstance(raw, dict) else {}
    if raw is not None and not isinstance(raw, dict):
        raise invalid_params([{"field": "settings", "message": "settings must be an object"}])
    too_deep = too_deep_setting(raw)
    if too_deep is not None:
        message = f"nests deeper than {MAX_CONTENT_DEPTH} levels"
        raise invalid_params([{"field": f"settings.{too_deep}", "message": message}])
    try:
        settings = Settings.model_validate(layer)
    except ValidationError as error:
        raise invalid_params(field_errors(error, "settings.")) from None
    warn_deprecated_models(settings)
    return layer


def check_follow_roots(requested: dict[FollowedAgent, str], owner: Settings) -> None:
    """Roots a client asks to follow must be the user's own agent folders (the defaults, the
    ones the agents' variables name in the daemon's environment, or inside them) or roots
    the owner's own settings name: any other folder could be one only
    the daemon's user can read, whose files a mirror would then show. -32602 naming it."""
    from contextd.follow.transcripts import DEFAULT_ROOTS, agent_root

    own = [agent_root(agent, os.environ) for agent in DEFAULT_ROOTS]  # $CODEX_HOME/sessions and the like
    allowed = [real_path(root) for root in (*DEFAULT_ROOTS.values(), *own, *owner.follow.roots.values())]
    for agent, root in requested.items():
        path = real_path(root)
        if path is None or not any(base and (path == base or path.startswith(base + os.sep)) for base in allowed):
            defaults = ", ".join(DEFAULT_ROOTS.values())
            raise invalid_params([{
                "field": f"roots.{agent}",
                "message": f"{root!r} is outside this user's agent folders ({defaults}); only the "
                "daemon owner's settings (the user settings file, or serve --settings) can name it",
            }])


def real_path(root: str) -> str | None:
    """`root` with `~` and symlinks resolved; None for a path no file system can hold."""
    try:
        return os.path.realpath(os.path.expanduser(root))
    except ValueError:  # a NUL byte, a lone surrogate
        return None


class ClientConnection(Connection):
    """A connection and what its client told us about itself."""

    def __init__(self, daemon: Daemon, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.daemon = daemon
        self.client_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.settings = daemon.settings
        """The daemon's settings with this connection's own keys (PER_CONNECTION_KEYS) on top."""
        self.own_layer: Layer = {}
        self.workspace_layers: dict[str, Layer] = {}
        """Per workspace folder, the keys this client set for it that apply to its sessions."""
        self.told: set[str] = set()
        """Warnings already shown to this client (each is shown once)."""
        self.default_workspace = os.getcwd()
        self.open_workspaces: set[str] = set()
        """The workspace folders (or root) the client named in `initialize`."""
        self.open_sessions: dict[str, None] = {}  # insertion-ordered set
        self.watched_workspaces: set[str] = set()
        self.watches_all_workspaces = False
        self.connected_at = time.time()

    def capability(self, *path: str) -> Any:
        value: Any = self.capabilities
        for part in path:
            if not isinstance(value, dict):
                return None
            value = value.get(part)
        return value

    def declares_hook(self, hook: str) -> bool:
        """Whether the client serves `contextd/<hook>` (`beforeCompact`, `beforeNavigate`)."""
        return self.capability("experimental", "contextd", hook) is True

    @property
    def supports_progress(self) -> bool:
        return self.capability("window", "workDoneProgress") is True

    @property
    def can_pull_configuration(self) -> bool:
        return self.capability("workspace", "configuration") is True

    def tell(self, message: str, *, error: bool = False) -> None:
        """`window/showMessage`, once per message: what the user must see, not a log line."""
        if message in self.told:
            return
        self.told.add(message)
        log.warning("%s: %s", self, message)
        show_message(self, f"contextd: {message}", MessageType.ERROR if error else MessageType.WARNING)

    def watches_workspace(self, workspace: str) -> bool:
        return self.watches_all_workspaces or workspace in self.watched_workspaces

    def describe(self) -> ConnectionRow:
        return ConnectionRow(
            id=self.number,
            client=self.client_info.get("name"),
            sessions=list(self.open_sessions),
            workspaces=sorted(self.watched_workspaces),
            allWorkspaces=self.watches_all_workspaces,
            connectedAt=utc_time(self.connected_at),
        )


class Daemon:
    """Everything the connections of one daemon process share."""

    def __init__(
        self,
        requests: Mapping[str, Handler],
        notifications: Mapping[str, Handler],
        *,
        data_dir: str | None = None,
        settings: Settings | None = None,
        dedicated: bool = True,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_write_buffer_bytes: int = DEFAULT_MAX_WRITE_BUFFER_BYTES,
        max_total_write_buffer_bytes: int = DEFAULT_MAX_TOTAL_WRITE_BUFFER_BYTES,
    ) -> None:
        self.requests = requests
        self.notifications = notifications
        self.cli_data_dir = data_dir
        self.start_layer: Layer = explicit_part(settings) if settings is not None else {}
        """The daemon's `--settings` file."""
        self.client_owner_layer: Layer = {}
        """A dedicated daemon's one client's settings: that client is the owner."""
        self.runtime_layer: Layer = {}
        self.user_file = SettingsFile(user_settings_path())
        if self.user_file.error is not None:
            log.error("%s; built-in settings apply instead", self.user_file.error)
        self.settings = resolve(self.owner_layers())
        warn_deprecated_models(self.settings)
        cache_ranks_in(self.data_dir / "cache")
        self._watching_user_file: asyncio.Task[None] | None = None
        self.dedicated = dedicated
        self.max_frame_bytes = max_frame_bytes
        self.max_write_buffer_bytes = max_write_buffer_bytes
        self.write_limit = WriteLimit(max_total_write_buffer_bytes)
        self.token: TcpToken | None = None
        """On TCP: what every connection's initialize must carry."""
        self.connections: list[ClientConnection] = []
        self.started_at = time.time()
        self.address: str | None = None
        self.on_idle: Callable[[], None] = lambda: None
        self._sessions: SessionManager | None = None
        self._history: IndexWriter | None = None
        self.events = DaemonEvents(self)
        self._follower: Follower | None = None

    # --- sessions ---------------------------------------------------------------------

    @property
    def sessions(self) -> SessionManager:
        if self._sessions is None:
            self._sessions = SessionManager(self._store(), self.settings, self.events, self.settings_for)
        return self._sessions

    @property
    def data_dir(self) -> Path:
        chosen = self.cli_data_dir or self.settings.storage.dataDir
        return Path(chosen).expanduser() if chosen else default_data_dir()

    def _store(self) -> Store:
        return Store(self.data_dir)

    @property
    def history(self) -> IndexWriter:
        """The writer of the data dir's history index (contextd/history/search)."""
        if self._history is None:
            from contextd.history import history_writer_for

            self._history = history_writer_for(self.data_dir)
        return self._history

    @property
    def follower(self) -> Follower:
        """What follows the agents' transcripts: made (and its importers imported) when
        following is first turned on or asked about."""
        if self._follower is None:
            from contextd.follow import Follower

            self._follower = Follower(
                data_dir=lambda: self.data_dir, sessions=lambda: self.sessions,
                watched_workspaces=self.watched_workspaces, delete_session=self.delete_session,
            )
            self._follower.apply(self.settings.follow)  # what it describes is what is set
        return self._follower

    def follow_as_set(self) -> None:
        """Start, change or stop following as the settings say."""
        if self._follower is not None or self.settings.follow.enabled:
            self.follower.apply(self.settings.follow)

    def index_change(self, session_id: str, cause: str) -> None:
        """Hand a session's change to the history index's writer, which writes it on its own
        thread: the change's request does not wait for it."""
        if cause == "deleted":
            self.history.deleted(session_id)
            return
        session = self._sessions.loaded_session(session_id) if self._sessions is not None else None
        if session is not None:
            self.history.changed(session_id, session.header.createdAt, session.tree.entries)

    def watch(self, connection: ClientConnection, session_id: str) -> None:
        connection.open_sessions[session_id] = None

    def unwatch(self, connection: ClientConnection, session_id: str) -> bool:
        """Detach `connection` from a session; True when no other connection has it open."""
        connection.open_sessions.pop(session_id, None)
        return not any(session_id in other.open_sessions for other in self.connections)

    def watchers(self, session_id: str) -> list[ClientConnection]:
        """The connections to tell about a session: those that have it open, and the one
        whose request is running."""
        found = [c for c in self.connections if session_id in c.open_sessions and not c.closed]
        current = current_connection.get()
        if isinstance(current, ClientConnection) and not current.closed and current not in found:
            found.append(current)
        return found

    async def delete_session(self, session_id: str) -> LiveSession:
        """Delete a session for every connection: each that had it open is told (sessionChanged
        `deleted`) and detached from it."""
        deleted = await self.sessions.delete(session_id)
        if self._follower is not None:
            self._follower.session_deleted(session_id)
        for connection in self.connections:
            connection.open_sessions.pop(session_id, None)
        return deleted

    def watched_workspaces(self) -> set[str] | None:
        """The workspaces some connection opened or watches; None when one watches them all."""
        wanted: set[str] = set()
        for connection in self.connections:
            if connection.watches_all_workspaces:
                return None
            wanted |= connection.watched_workspaces | connection.open_workspaces
        return wanted

    def watch_workspace(self, connection: ClientConnection, workspace: str | None) -> None:
        """`connection` hears of every change of the sessions of `workspace` (None: of all)."""
        if workspace is None:
            connection.watches_all_workspaces = True
        else:
            connection.watched_workspaces.add(workspace)

    def unwatch_workspace(self, connection: ClientConnection, workspace: str | None) -> None:
        """Undo that watch (None: the watch of all workspaces; a watch of one stays)."""
        if workspace is None:
            connection.watches_all_workspaces = False
        else:
            connection.watched_workspaces.discard(workspace)

    def workspace_watchers(self, workspace: str) -> list[ClientConnection]:
        return [c for c in self.connections if c.watches_workspace(workspace) and not c.closed]

    # --- settings ---------------------------------------------------------------------

    def owner_file_settings(self) -> Settings:
        """What the owner set where no client reaches: the user settings file and --settings."""
        return resolve([self.user_file.layer, self.start_layer])

    def owner_layers(self) -> list[Layer]:
        """The layers the daemon's owner set, lowest first (contextd.settings)."""
        return [self.user_file.layer, self.start_layer, self.client_owner_layer, self.runtime_layer]

    def workspace_layers(self, workspace: str) -> list[tuple[str, ClientConnection, Layer]]:
        """The layers the editors that have `workspace` (or a folder holding it) open set for
        it, lowest first: a deeper folder wins over one holding it, and for one folder the
        client connected first wins."""
        found = [
            (folder, connection, layer)
            for connection in self.connections
            for folder, layer in connection.workspace_layers.items()
            if layer and not connection.closed and inside(workspace, folder)
        ]
        found.sort(key=lambda item: (len(item[0]), -item[1].number))
        return found

    def settings_for(self, workspace: str) -> Settings:
        """What governs the sessions of `workspace`: the owner's layers and its editors' settings."""
        layers = self.workspace_layers(workspace)
        if not layers:
            return self.settings
        return resolve([*self.owner_layers(), *(layer for _, _, layer in layers)])

    def sources(self, workspace: str | None) -> dict[str, str]:
        """Where each explicitly set key's value for `workspace` comes from (the rest is built in)."""
        named = [
            ("user file", self.user_file.layer), ("--settings", self.start_layer),
            ("client", self.client_owner_layer), ("run time", self.runtime_layer),
        ]
        if workspace is not None:
            named += [
                (f"workspace {folder} ({connection.client_info.get('name') or connection})", layer)
                for folder, connection, layer in self.workspace_layers(workspace)
            ]
        found: dict[str, str] = {}
        for source, layer in named:
            for key in leaves(layer):
                found[key] = source
        return found

    def apply_settings(self, connection: ClientConnection, raw: Any, folders: list[str] | None = None) -> None:
        """A client's settings (`initializationOptions`, `didChangeConfiguration`, or its answer
        to `workspace/configuration` for `folders`; None: every folder it has open).

        Its per-connection keys apply to it; on a dedicated daemon the rest is the owner's;
        on a shared one the rest apply to the sessions of its workspace folders, but for
        the owner-only keys, which it is told cannot apply (as it is of unknown keys)."""
        layer = parse_settings(raw)
        for key in unknown_keys(layer):
            connection.tell(describe_unknown(key))
        layer = keep_keys(layer, is_known)
        connection.own_layer = keep_keys(layer, is_per_connection)
        shared_part = keep_keys(layer, lambda key: not is_per_connection(key))
        if self.dedicated:
            self.client_owner_layer = shared_part
        else:
            self._set_workspace_layers(connection, shared_part, folders)
        self.refresh_settings()
        if not self.dedicated:
            self._warn_conflicts()

    def _set_workspace_layers(self, connection: ClientConnection, layer: Layer, folders: list[str] | None) -> None:
        for key in leaves(layer):
            # follow: any connection changes it with contextd/follow, as the editors do.
            if is_owner_only(key) and not covers("follow", key):
                connection.tell(
                    f"{key} cannot be set by an editor on the shared daemon (it is the daemon "
                    f"owner's): set it in {self.user_file.path} (contextd config set {key} VALUE)"
                )
        layer = keep_keys(layer, lambda key: not is_owner_only(key))
        targets = sorted(connection.open_workspaces) if folders is None else folders
        if layer and not targets:
            connection.tell("settings for sessions ignored: this client has no workspace folder open")
        for folder in targets:
            connection.workspace_layers[folder] = layer

    def _warn_conflicts(self) -> None:
        """Tell each client whose workspace setting loses to another client's for the same
        folder (the one connected first wins), once per key and pair of values."""
        for loser in self.connections:
            for folder, layer in loser.workspace_layers.items():
                for other in self.connections:
                    if other.number >= loser.number or other.closed:
                        continue
                    theirs = leaves(other.workspace_layers.get(folder, {}))
                    for key, value in leaves(layer).items():
                        if key in theirs and theirs[key] != value:
                            loser.tell(
                                f"{key} for {folder}: {json.dumps(value)} from this editor does not "
                                f"apply; {json.dumps(theirs[key])} from "
                                f"{other.client_info.get('name') or other} (connected first) does"
                            )

    def refresh_settings(self) -> None:
        """Recompute every settings object after a layer changed, and apply what changed."""
        self.settings = resolve(self.owner_layers())
        for connection in self.connections:
            connection.settings = resolve([*self.owner_layers(), connection.own_layer])
        # A settings change concerns no session of the connection that caused it: each
        # session's new figure goes to the connections that have it open, and the
        # follower's loop, if this starts it, is no request's own.
        requester = current_connection.set(None)
        try:
            if self._sessions is not None:
                self._sessions.apply_settings(self.settings)
            self.follow_as_set()
        finally:
            current_connection.reset(requester)

    def change_daemon_settings(self, group: str, changes: dict[str, Any]) -> None:
        """Change some keys of one daemon-wide settings group at run time, from any
        connection (`contextd/idle/configure` without a session, `contextd/follow`)."""
        for key, value in changes.items():
            set_key(self.runtime_layer, f"{group}.{key}", value)
        self.refresh_settings()

    async def watch_user_file(self) -> None:
        """The user file is looked at every USER_FILE_POLL_SECONDS; a change applies at once,
        a file that cannot be used is shown to every client and the settings in force stay."""
        while True:
            await asyncio.sleep(USER_FILE_POLL_SECONDS)
            if not self.user_file.reload():
                continue
            if self.user_file.error is not None:
                for connection in self.connections:
                    connection.tell(self.user_file.error, error=True)
                continue
            log.info("settings reloaded from %s", self.user_file.path)
            self.refresh_settings()
            warn_deprecated_models(self.settings)

    def build_tokenizer(self) -> None:
        """Build the encoding of the daemon's default model now. tiktoken holds the GIL for
        the whole build (about 0.3 s for o200k_base), so built at the first count it would
        stall every connection's requests once, even those a worker thread does not touch
        (benchmarks/README.md, bench_listing)."""
        get_encoding(resolve_model(self.settings.defaultModel, self.settings.models).encoding)

    # --- connections ------------------------------------------------------------------

    def attach(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> ClientConnection:
        connection = ClientConnection(
            self,
            reader,
            writer,
            self.requests,
            self.notifications,
            max_frame_bytes=self.max_frame_bytes,
            max_write_buffer_bytes=self.max_write_buffer_bytes,
            write_limit=self.write_limit,
            token=self.token,
            on_close=self._detach,
        )
        self.connections.append(connection)
        if self._watching_user_file is None:
            self._watching_user_file = asyncio.ensure_future(self.watch_user_file())
        log.info("%s attached (%d connected)", connection, len(self.connections))
        self.follow_as_set()  # a daemon started with following on starts it here
        return connection

    def _detach(self, connection: Connection) -> None:
        if connection in self.connections:
            self.connections.remove(connection)  # type: ignore[arg-type]
            if connection.workspace_layers:  # type: ignore[attr-defined]
                self.refresh_settings()  # its workspaces' sessions fall back to the owner's settings
        log.info("%s detached (%d connected)", connection, len(self.connections))
        if not self.connections:
            self.on_idle()

    def close_sessions(self) -> None:
        if self._follower is not None:
            self._follower.stop()
        if self._sessions is not None:
            self._sessions.close_all()
        if self._history is not None:
            self._history.close()

    def status(self, asking: ClientConnection) -> DaemonStatus:
        loaded = self._sessions.loaded() if self._sessions is not None else []
        return DaemonStatus(
            pid=os.getpid(),
            address=self.address,
            dataDir=str(self.data_dir),
            dedicated=self.dedicated,
            startedAt=utc_time(self.started_at),
            connections=[c.describe() for c in self.connections],
            sessions=[
                LoadedSession(
                    sessionId=s.session_id,
                    name=s.name,
                    tokens=s.tokens,
                    connections=[c.number for c in self.connections if s.session_id in c.open_sessions],
                )
                for s in loaded
            ],
            connection=asking.number,
        )


class DaemonEvents:
    """SessionEvents as notifications to each connection watching the session."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self._compacting: dict[str, str] = {}
        """compactionId -> sessionId, from started to finished: `$/progress` names no session."""
        self._progress: dict[str, list[WorkDoneProgress]] = {}
        """A progress token -> the connections that were sent its `begin`."""

    def _tell(self, method: str, body: SessionBody) -> None:
        for connection in self.daemon.watchers(body.sessionId):
            connection.notify(method, body)

    def token_usage(self, usage: TokenUsage) -> None:
        self._tell("contextd/tokenUsage", usage)

    def session_changed(self, session_id: str, leaf_id: str | None, cause: str) -> None:
        self.daemon.index_change(session_id, cause)
        # The model refuses a cause it does not know; SessionEvents passes it as a str.
        changed = SessionChanged(sessionId=session_id, leafId=leaf_id, cause=cast(ChangeCause, cause))
        self._tell("contextd/sessionChanged", changed)

    def compaction_started(self, started: CompactionStarted) -> None:
        self._compacting[started.compactionId] = started.sessionId
        self._tell("contextd/compactionStarted", started)

    def compaction_finished(self, finished: CompactionFinished) -> None:
        from contextd.summarizers.errors import redact

        if finished.error is not None:  # a summarizer's error may quote what it was sent
            finished = finished.model_copy(update={"error": redact(finished.error)})
        self._compacting.pop(finished.compactionId, None)
        self._tell("contextd/compactionFinished", finished)

    def idle_timer(self, timer: IdleTimer) -> None:
        self._tell("contextd/idleTimer", timer)

    def workspace_activity(self, activity: WorkspaceActivity) -> None:
        """To every connection watching the session's workspace, whoever caused the change
        (one notification each, however many of its watches match)."""
        for connection in self.daemon.workspace_watchers(activity.workspace):
            connection.notify("contextd/workspace/activity", activity)

    async def before_compact(self, params: BeforeCompactParams) -> HookAnswer:
        """Ask the connection that declared the hook (the requesting one first, else the
        first to have opened the session)."""
        askable = [c for c in self.daemon.watchers(params.sessionId) if c.declares_hook("beforeCompact")]
        current = current_connection.get()
        askable.sort(key=lambda c: c is not current)
        return await self._ask_hook(askable[:1], "beforeCompact", params, BeforeCompactAnswer, "compacting as configured")

    async def before_navigate(self, params: BeforeNavigateParams) -> HookAnswer:
        """Ask the connection whose navigate request this is, if it declared the hook."""
        current = current_connection.get()
        askable = [current] if isinstance(current, ClientConnection) and current.declares_hook("beforeNavigate") else []
        return await self._ask_hook(askable, "beforeNavigate", params, BeforeNavigateAnswer, "navigating as asked")

    async def _ask_hook(
        self,
        askable: list[ClientConnection],
        hook: str,
        params: BeforeCompactParams | BeforeNavigateParams,
        answer_model: type[BeforeCompactAnswer | BeforeNavigateAnswer],
        going_on: str,
    ) -> HookAnswer:
        """`contextd/<hook>` to the first of `askable`, within its hookTimeoutSeconds. Silence,
        an error or nonsense never stalls us: the job goes on (`going_on`) and the log says why."""
        if not askable or askable[0].closed:
            return HookAnswer()
        connection = askable[0]
        timeout = connection.settings.compaction.hookTimeoutSeconds
        try:
            raw = await asyncio.wait_for(connection.request(f"contextd/{hook}", params), timeout)
            answer = answer_model.model_validate(raw or {})
        except TimeoutError:
            log.warning("%s: no answer within %gs; %s", hook, timeout, going_on)
            return HookAnswer()
        except (RpcError, ConnectionLost) as error:
            log.warning("%s: the client answered an error (%s); %s", hook, error, going_on)
            return HookAnswer()
        except ValidationError as error:
            log.warning(
                "%s: unusable answer (%s); %s",
                hook,
                "; ".join(f"{e['field']}: {e['message']}" for e in field_errors(error)),
                going_on,
            )
            return HookAnswer()
        return HookAnswer(**answer.model_dump())

    def compaction_progress(self, compaction_id: str, stage: str, message: str) -> None:
        """`$/progress` for the connections that show work-done progress; the token is the
        compaction id, created on each client at `begin` (a connection that started watching
        later never got a `begin`, so it gets no `report` or `end` either)."""
        token = f"contextd-compaction-{compaction_id}"
        session_id = self._compacting.get(compaction_id)
        if session_id is None:
            return
        if stage == "begin":
            self._progress[token] = [
                WorkDoneProgress(connection, token)
                for connection in self.daemon.watchers(session_id)
                if connection.supports_progress
            ]
        progresses = self._progress.pop(token, []) if stage == "end" else self._progress.get(token, [])
        value = progress_value(stage, message)
        for progress in progresses:
            progress.send(value)


def progress_value(stage: str, message: str) -> WorkDoneProgressValue:
    if stage == "begin":
        return WorkDoneProgressBegin(kind="begin", title="Compacting context", message=message, cancellable=False)
    if stage == "report":
        return WorkDoneProgressReport(kind="report", message=message)
    return WorkDoneProgressEnd(kind="end", message=message)


class WorkDoneProgress:
    """One `$/progress` token on one connection. LSP forbids using a token whose
    `window/workDoneProgress/create` failed, so nothing is sent until the client has answered
    it; what comes meanwhile waits, in order, and is dropped if the answer is an error."""

    def __init__(self, connection: ClientConnection, token: str) -> None:
        self.connection = connection
        self.token = token
        self.waiting: list[WorkDoneProgressValue] | None = []
        """Values held until the token exists; None once it does."""
        self.refused = False
        create_progress(connection, token).add_done_callback(self._created)

    def send(self, value: WorkDoneProgressValue) -> None:
        if self.refused:
            return
        if self.waiting is not None:
            self.waiting.append(value)
            return
        report_progress(self.connection, self.token, value)

    def _created(self, created: asyncio.Future[Any]) -> None:
        if created.cancelled() or created.exception() is not None:
            self.refused = True
            log.debug("%s: no work-done progress (the token was not created)", self.connection)
            return
        waiting, self.waiting = self.waiting or [], None
        for value in waiting:
            self.send(value)
