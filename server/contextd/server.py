"""JSON-RPC methods -> session calls: the one module that maps each method to its function.

Framing, envelopes and the lifecycle are `contextd.rpc`'s; every function here takes the
connection that asked and its params as plain data, validated with pydantic, so a bad
request is a -32602 naming the field and a request that fails changes nothing.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from pydantic import ValidationError

from contextd import __version__
from contextd.formats import render_context
from contextd.model import IdleSettings, Settings
from contextd.results import (
    AbortResult,
    AppendParams,
    AppendResult,
    CloseResult,
    CompactParams,
    CompactPreview,
    CompactResult,
    ConfigurationItem,
    ContextParams,
    ContextResult,
    ContextdCapability,
    DaemonStatus,
    DeleteResult,
    EmptyResult,
    ExperimentalCapabilities,
    FollowEnvironmentParams,
    FollowEnvironmentResult,
    FollowParams,
    FollowResult,
    ForkParams,
    ForkResult,
    HandoffParams,
    HandoffResult,
    HistoryEntries,
    HistoryGetParams,
    HistorySearchParams,
    HistorySourcesParams,
    HistorySummarizeParams,
    IdleConfigureParams,
    IdleConfigureResult,
    InitializeParams,
    InitializeResult,
    LabelParams,
    LabelResult,
    ListParams,
    ListResult,
    NavigateParams,
    NavigateResult,
    OpenParams,
    OpenResult,
    Params,
    Result,
    SearchResult,
    ServerCapabilities,
    ServerInfo,
    SessionParams,
    SessionSummary,
    SetInstructionsParams,
    SetInstructionsResult,
    SetModelParams,
    SetModelResult,
    SettingsParams,
    SettingsResult,
    SourcesResult,
    SpanSummary,
    StateResult,
    StatsResult,
    TreeResult,
    WorkspaceWatchParams,
)
from contextd.rpc.connection import ConnectionLost, Handler
from contextd.rpc.daemon import ClientConnection, Daemon, check_follow_roots, field_errors, invalid_params
from contextd.rpc.lsp import request_configuration
from contextd.rpc.messages import REQUEST_CANCELLED, RpcError
from contextd.session import (
    ClientVetoed,
    CompactionFailed,
    CompactionRunning,
    EntryNotFound,
    InvalidAppend,
    NothingToCompactError,
)
from contextd.session import history
from contextd.session.agent_settings import remember_agent_environment
from contextd.session.errors import ReadOnlyMirror
from contextd.store import (
    InvalidSessionId,
    SessionDamaged,
    SessionLocked,
    SessionNotFound,
    StorageFailed,
)
from contextd.summarizers.errors import redact

log = logging.getLogger(__name__)

SESSION_NOT_FOUND = -32001
SESSION_LOCKED = -32003
COMPACTION_RUNNING = -32004
NOTHING_TO_COMPACT = -32005
SUMMARIZER_FAILED = -32006
ENTRY_NOT_FOUND = -32007
READ_ONLY_MIRROR = -32008
SESSION_DAMAGED = -32009
STORAGE_FAILED = -32010

# --- errors -------------------------------------------------------------------------------


def to_rpc_error(error: Exception) -> RpcError:
    """The one place where a domain error becomes a JSON-RPC error. Messages and data say
    what went wrong in the request's terms: no traceback, no file path, no key."""
    if isinstance(error, ValidationError):
        return invalid_params(field_errors(error))
    if isinstance(error, InvalidAppend):
        return invalid_params([{"field": error.field, "message": str(error)}])
    if isinstance(error, InvalidSessionId):
        return invalid_params([{"field": "sessionId", "message": str(error)}])
    if isinstance(error, SessionNotFound):
        return RpcError(SESSION_NOT_FOUND, str(error), {"sessionId": error.session_id})
    if isinstance(error, SessionLocked):
        return RpcError(SESSION_LOCKED, str(error), {"sessionId": error.session_id, "pid": error.pid})
    if isinstance(error, CompactionRunning):
        return RpcError(COMPACTION_RUNNING, str(error), {"sessionId": error.session_id})
    if isinstance(error, NothingToCompactError):
        return RpcError(NOTHING_TO_COMPACT, str(error), {"sessionId": error.session_id})
    if isinstance(error, ClientVetoed):
        return RpcError(REQUEST_CANCELLED, str(error))
    if isinstance(error, CompactionFailed):
        return RpcError(SUMMARIZER_FAILED, redact(str(error)), {"provider": error.provider})
    if isinstance(error, EntryNotFound):
        return RpcError(ENTRY_NOT_FOUND, str(error), {"entryId": error.entry_id})
    if isinstance(error, ReadOnlyMirror):
        return RpcError(READ_ONLY_MIRROR, str(error), {"sessionId": error.session_id})
    if isinstance(error, SessionDamaged):
        return RpcError(SESSION_DAMAGED, str(error), {"sessionId": error.session_id, "damaged": error.why})
    if isinstance(error, StorageFailed):
        return RpcError(STORAGE_FAILED, str(error), {"reason": error.reason})
    if isinstance(error, RpcError):
        return error
    raise error


P = TypeVar("P", bound=Params)


def parse_params(model: type[P], raw: Any) -> P:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid_params([{"field": "params", "message": "params must be an object"}])
    return model.model_validate(raw)


def touch(connection: ClientConnection, params: Params) -> None:
    """A request on a session is activity: it re-arms or cancels that session's idle timer."""
    session_id = getattr(params, "sessionId", None)
    if session_id is not None:
        session = connection.daemon.sessions.loaded_session(session_id)
        if session is not None:
            session.touch()


def watch_what_was_used(connection: ClientConnection, params: Params, result: Result) -> None:
    """The connection hears from now on about every session its request named or made."""
    daemon = connection.daemon
    for session_id in (getattr(params, "sessionId", None), getattr(result, "sessionId", None)):
        if isinstance(session_id, str) and daemon.sessions.loaded_session(session_id) is not None:
            daemon.watch(connection, session_id)


def request(params_model: type[Params], function: Callable[..., Result | Awaitable[Result]], *, opens: bool = True) -> Handler:
    """`function(connection, params)` as a handler: params validated, errors mapped.

    A session the request names is loaded first, off the event loop when it is not in
    memory, so a cold load never holds up the requests of other sessions; the connection
    then hears about it. `opens=False` for a request that must find the session as it is
    (close, delete)."""

    async def handle(connection: ClientConnection, raw: Any) -> Result:
        try:
            params = parse_params(params_model, raw)
            session_id = getattr(params, "sessionId", None)
            if session_id is not None and opens:
                await connection.daemon.sessions.load(session_id)
            result = function(connection, params)
            if inspect.isawaitable(result):
                result = await result
        except Exception as error:  # noqa: BLE001 - to_rpc_error re-raises what it does not know
            raise to_rpc_error(error) from None
        touch(connection, params)
        if opens:
            watch_what_was_used(connection, params, result)
        return result

    return handle


# --- lifecycle ----------------------------------------------------------------------------


def path_of_uri(uri: str) -> str | None:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" and parsed.path else None


def initialize(connection: ClientConnection, raw: Any) -> InitializeResult:
    if not isinstance(raw, dict):
        raise invalid_params([{"field": "params", "message": "params must be an object"}])
    try:
        params = InitializeParams.model_validate(raw)
    except ValidationError as error:
        raise invalid_params(field_errors(error)) from None
    connection.client_info = params.clientInfo.model_dump() if params.clientInfo else {}
    connection.capabilities = params.capabilities
    folders = params.workspaceFolders or []
    workspace = path_of_uri(folders[0].uri) if folders else path_of_uri(params.rootUri or "")
    if workspace:
        connection.default_workspace = workspace
    opened = [path_of_uri(folder.uri) for folder in folders] or [workspace]
    connection.open_workspaces = {path for path in opened if path}
    connection.daemon.apply_settings(connection, params.initializationOptions)
    return InitializeResult(
        capabilities=ServerCapabilities(
            experimental=ExperimentalCapabilities(contextd=ContextdCapability(version=__version__))
        ),
        serverInfo=ServerInfo(name="contextd", version=__version__),
    )


async def initialized(connection: ClientConnection, params: Any) -> None:
    user_file = connection.daemon.user_file
    if user_file.error is not None:
        connection.tell(user_file.error, error=True)
    if connection.can_pull_configuration:
        await pull_configuration(connection)


def did_change_configuration(connection: ClientConnection, params: Any) -> None:
    raw = params.get("settings") if isinstance(params, dict) else None
    if isinstance(raw, dict) and "contextd" in raw:
        apply_notified_settings(connection, raw["contextd"])
    elif connection.can_pull_configuration:
        # Clients of the pull model send an empty notification: ask for the section.
        connection.start_task(pull_configuration(connection))
    else:
        apply_notified_settings(connection, raw)


async def pull_configuration(connection: ClientConnection) -> None:
    """`workspace/configuration` for section `contextd`, one item per workspace folder the
    client has open (its `scopeUri`), as LSP servers ask; an item answered null keeps what
    that folder had, `{}` means the user set nothing there."""
    folders = sorted(connection.open_workspaces)
    items = [ConfigurationItem(scopeUri=Path(folder).as_uri(), section="contextd") for folder in folders]
    try:
        answer = await request_configuration(connection, items or [ConfigurationItem(section="contextd")])
    except (RpcError, ConnectionLost) as error:
        log.warning("workspace/configuration failed: %s", error)
        return
    answers = answer if isinstance(answer, list) else []
    if not folders:
        if answers and isinstance(answers[0], dict) and answers[0]:
            apply_notified_settings(connection, answers[0])
        return
    for folder, section in zip(folders, answers, strict=False):
        if isinstance(section, dict):
            apply_notified_settings(connection, section, [folder])


def apply_notified_settings(connection: ClientConnection, raw: Any, folders: list[str] | None = None) -> None:
    try:
        connection.daemon.apply_settings(connection, raw, folders)
    except RpcError as error:
        # A notification has no reply: say it where the user will see it.
        connection.tell(error.message, error=True)


def settings_of(connection: ClientConnection, params: SettingsParams) -> SettingsResult:
    """The settings in force for a workspace's sessions, and where each set key came from."""
    daemon = connection.daemon
    workspace = params.workspace or connection.default_workspace
    return SettingsResult(
        workspace=workspace,
        settings=daemon.settings_for(workspace),
        sources=daemon.sources(workspace),
        userFile=str(daemon.user_file.path),
        userFileError=daemon.user_file.error,
    )


def shutdown(connection: ClientConnection, params: Any) -> None:
    """A dedicated daemon closes its sessions; a shared one only lets this connection go."""
    daemon = connection.daemon
    if daemon.dedicated:
        daemon.close_sessions()
    connection.open_sessions.clear()


def daemon_status(connection: ClientConnection, params: Any) -> DaemonStatus:
    return connection.daemon.status(connection)


# --- session methods ----------------------------------------------------------------------


def session_rows(rows: list[SessionSummary]) -> ListResult:
    """Rows the session layer typed (TypedDicts, checked by mypy): not validated again."""
    return ListResult.model_construct(sessions=rows)


def session_open(connection: ClientConnection, params: OpenParams) -> OpenResult:
    sessions = connection.daemon.sessions
    if params.sessionId is not None:
        session = sessions.get(params.sessionId)
        if params.model and params.model != session.model_id:
            session.check_writable()
            session.set_model(params.model)
    else:
        workspace = params.workspace or connection.default_workspace
        model = params.model or connection.settings.defaultModel
        session = sessions.create(workspace, name=params.name, model=model)
    connection.daemon.watch(connection, session.session_id)
    session.announce("open")
    return session.opened()


async def session_list(connection: ClientConnection, params: ListParams) -> ListResult:
    return session_rows(await connection.daemon.sessions.listing(params.workspace))


def session_append(connection: ClientConnection, params: AppendParams) -> AppendResult:
    session = connection.daemon.sessions.get(params.sessionId)
    session.check_writable()
    entry_ids = session.append_messages(params.messages)
    return AppendResult(entryIds=entry_ids, leafId=session.leaf_id, usage=session.usage())


def session_context(connection: ClientConnection, params: ContextParams) -> ContextResult:
    session = connection.daemon.sessions.get(params.sessionId)
    rendered = render_context(
        session.context_messages(),
        session.instructions_text(),
        params.format,
        session.opening_compaction(),
        params.model or session.model_id,
    )
    return ContextResult.rendered(rendered["messages"], rendered.get("system"), session.tokens)


def session_set_instructions(connection: ClientConnection, params: SetInstructionsParams) -> SetInstructionsResult:
    session = connection.daemon.sessions.get(params.sessionId)
    session.check_writable()
    entry_id = session.set_instructions(params.text, params.source)
    return SetInstructionsResult(entryId=entry_id, leafId=session.leaf_id, usage=session.usage())


def session_state(connection: ClientConnection, params: SessionParams) -> StateResult:
    return connection.daemon.sessions.get(params.sessionId).state()


def session_stats(connection: ClientConnection, params: SessionParams) -> StatsResult:
    return connection.daemon.sessions.get(params.sessionId).stats()


def session_set_model(connection: ClientConnection, params: SetModelParams) -> SetModelResult:
    session = connection.daemon.sessions.get(params.sessionId)
    session.check_writable()
    session.set_model(params.model)
    return SetModelResult(
        model=session.model_id, contextWindow=session.model_info.context_window, usage=session.usage()
    )


def session_close(connection: ClientConnection, params: SessionParams) -> CloseResult:
    """`closed: false` when this daemon does not hold the session. A held one stops
    notifying this connection, and is released once no connection has it open."""
    daemon = connection.daemon
    if not daemon.unwatch(connection, params.sessionId):
        return CloseResult(closed=True)  # detached; other connections keep it open
    return CloseResult(closed=daemon.sessions.close(params.sessionId))


async def session_delete(connection: ClientConnection, params: SessionParams) -> DeleteResult:
    """Delete the session's file, closing it for every connection of this daemon first."""
    deleted = await connection.daemon.delete_session(params.sessionId)
    return DeleteResult(deleted=True, sessionId=deleted.session_id, path=str(deleted.file.path))


async def compact(connection: ClientConnection, params: CompactParams) -> CompactResult | CompactPreview:
    session = connection.daemon.sessions.get(params.sessionId)
    if params.dryRun:
        return await session.preview_compaction(params.instructions)
    session.check_writable()
    entry = await session.compact("manual", params.instructions)
    return CompactResult(
        entryId=entry.id,
        summary=entry.summary,
        firstKeptEntryId=entry.firstKeptEntryId,
        tokensBefore=entry.tokensBefore,
        tokensAfter=entry.tokensAfter,
        shortSummary=entry.shortSummary,
        summarizer=entry.summarizer,
    )


def compact_abort(connection: ClientConnection, params: SessionParams) -> AbortResult:
    return AbortResult(aborted=connection.daemon.sessions.get(params.sessionId).abort_compaction())


def tree(connection: ClientConnection, params: SessionParams) -> TreeResult:
    session = connection.daemon.sessions.get(params.sessionId)
    return TreeResult.of(session.leaf_id, session.tree_nodes())


def label(connection: ClientConnection, params: LabelParams) -> LabelResult:
    session = connection.daemon.sessions.get(params.sessionId)
    session.check_writable()
    session.set_label(params.entryId, params.label or None)
    return LabelResult(entryId=params.entryId, label=params.label or None)


async def navigate(connection: ClientConnection, params: NavigateParams) -> NavigateResult:
    session = connection.daemon.sessions.get(params.sessionId)
    session.check_writable()
    return await session.navigate(params.targetId, summarize=params.summarize, instructions=params.instructions)


def fork(connection: ClientConnection, params: ForkParams) -> ForkResult:
    sessions = connection.daemon.sessions
    forked = sessions.fork(sessions.get(params.sessionId), params.entryId)
    connection.daemon.watch(connection, forked.session_id)
    forked.announce("fork")
    return ForkResult(sessionId=forked.session_id, leafId=forked.leaf_id)


async def handoff(connection: ClientConnection, params: HandoffParams) -> HandoffResult:
    sessions = connection.daemon.sessions
    fresh, entry = await sessions.handoff(sessions.get(params.sessionId), params.goal)
    return HandoffResult(sessionId=fresh.session_id, entryId=entry.id, document=entry.document)


def idle_configure(connection: ClientConnection, params: IdleConfigureParams) -> IdleConfigureResult:
    daemon = connection.daemon
    changes = params.model_dump(exclude_none=True, exclude={"sessionId"})
    if params.sessionId is None:
        daemon.change_daemon_settings("idle", changes)
        for session in daemon.sessions.loaded():
            session.touch()
        return IdleConfigureResult(**idle_fields(daemon.settings.idle))
    session = daemon.sessions.get(params.sessionId)
    session.check_writable()
    idle = session.idle_settings.model_copy(update=changes)
    session.configure_idle(idle)
    return IdleConfigureResult(
        sessionId=session.session_id, **idle_fields(idle), effectiveThresholdTokens=session.idle_threshold()
    )


def idle_fields(idle: IdleSettings) -> dict[str, Any]:
    return idle.model_dump(include=set(IdleSettings.model_fields))


def watched_workspace(connection: ClientConnection, params: WorkspaceWatchParams) -> str | None:
    """The workspace meant, None for all of them; neither given: the connection's first folder."""
    if params.allWorkspaces:
        return None
    return params.workspace or connection.default_workspace


async def workspace_watch(connection: ClientConnection, params: WorkspaceWatchParams) -> ListResult:
    """From now on the connection hears `contextd/workspace/activity` for every change of
    the workspace's sessions; the result lists them as they are now."""
    workspace = watched_workspace(connection, params)
    connection.daemon.watch_workspace(connection, workspace)
    return session_rows(await connection.daemon.sessions.listing(workspace))


def workspace_unwatch(connection: ClientConnection, params: WorkspaceWatchParams) -> EmptyResult:
    connection.daemon.unwatch_workspace(connection, watched_workspace(connection, params))
    return EmptyResult()


def follow(connection: ClientConnection, params: FollowParams) -> FollowResult:
    """Turn following on or off for the whole daemon, or change what it follows."""
    daemon = connection.daemon
    check_follow_roots(params.roots or {}, daemon.owner_file_settings())
    changes = params.model_dump(exclude_none=True)
    if changes:
        daemon.change_daemon_settings("follow", changes)
    return daemon.follower.describe()


def follow_environment(connection: ClientConnection, params: FollowEnvironmentParams) -> FollowEnvironmentResult:
    """A followed agent's hook reports the agent's environment: its mirror's agentCompaction
    is worked out from it, not from the daemon's, from now on (a loaded mirror says so at once)."""
    from contextd.follow.mirror import mirror_session_id  # loaded once following is on, as the hook has it

    for path in remember_agent_environment(params.agent, params.transcriptPath, params.environment):
        mirror = connection.daemon.sessions.loaded_session(mirror_session_id(params.agent, path))
        if mirror is not None:
            mirror.events.token_usage(mirror.usage())
    return FollowEnvironmentResult(transcriptPath=params.transcriptPath, variables=sorted(params.environment))


async def history_search(connection: ClientConnection, params: HistorySearchParams) -> SearchResult:
    session = connection.daemon.sessions.get(params.sessionId)
    return await history.search(session, connection.daemon.history, params.query, params.limit)


def history_get(connection: ClientConnection, params: HistoryGetParams) -> HistoryEntries:
    session = connection.daemon.sessions.get(params.sessionId)
    return history.get_entries(session, params.entryIds, params.around, params.maxTokens)


def history_sources(connection: ClientConnection, params: HistorySourcesParams) -> SourcesResult:
    session = connection.daemon.sessions.get(params.sessionId)
    return history.summary_sources(session, params.entryId, params.item)


async def history_summarize(connection: ClientConnection, params: HistorySummarizeParams) -> SpanSummary:
    session = connection.daemon.sessions.get(params.sessionId)
    return await history.summarize_span(session, params.throughEntryId, params.firstKeptEntryId, params.afterEntryId)


# --- wiring -------------------------------------------------------------------------------

REQUESTS: dict[str, Handler] = {
    "initialize": initialize,
    "shutdown": shutdown,
    "contextd/daemon/status": daemon_status,
    "contextd/session/open": request(OpenParams, session_open),
    "contextd/session/list": request(ListParams, session_list),
    "contextd/session/append": request(AppendParams, session_append),
    "contextd/session/context": request(ContextParams, session_context),
    "contextd/session/state": request(SessionParams, session_state),
    "contextd/session/stats": request(SessionParams, session_stats),
    "contextd/session/setModel": request(SetModelParams, session_set_model),
    "contextd/session/setInstructions": request(SetInstructionsParams, session_set_instructions),
    "contextd/session/close": request(SessionParams, session_close, opens=False),
    "contextd/session/delete": request(SessionParams, session_delete, opens=False),
    "contextd/compact": request(CompactParams, compact),
    "contextd/compact/abort": request(SessionParams, compact_abort),
    "contextd/tree": request(SessionParams, tree),
    "contextd/label": request(LabelParams, label),
    "contextd/navigate": request(NavigateParams, navigate),
    "contextd/fork": request(ForkParams, fork),
    "contextd/handoff": request(HandoffParams, handoff),
    "contextd/idle/configure": request(IdleConfigureParams, idle_configure),
    "contextd/workspace/watch": request(WorkspaceWatchParams, workspace_watch),
    "contextd/workspace/unwatch": request(WorkspaceWatchParams, workspace_unwatch),
    "contextd/follow": request(FollowParams, follow),
    "contextd/follow/environment": request(FollowEnvironmentParams, follow_environment),
    "contextd/history/search": request(HistorySearchParams, history_search),
    "contextd/history/get": request(HistoryGetParams, history_get),
    "contextd/history/sources": request(HistorySourcesParams, history_sources),
    "contextd/history/summarize": request(HistorySummarizeParams, history_summarize),
    "contextd/settings": request(SettingsParams, settings_of),
}

NOTIFICATIONS: dict[str, Handler] = {
    "initialized": initialized,
    "workspace/didChangeConfiguration": did_change_configuration,
}


def create_daemon(
    data_dir: str | None = None,
    settings: Settings | None = None,
    *,
    dedicated: bool = True,
    max_frame_bytes: int | None = None,
    max_write_buffer_bytes: int | None = None,
    max_total_write_buffer_bytes: int | None = None,
) -> Daemon:
    limits = {
        "max_frame_bytes": max_frame_bytes,
        "max_write_buffer_bytes": max_write_buffer_bytes,
        "max_total_write_buffer_bytes": max_total_write_buffer_bytes,
    }
    options: dict[str, Any] = {name: value for name, value in limits.items() if value is not None}
    return Daemon(REQUESTS, NOTIFICATIONS, data_dir=data_dir, settings=settings, dedicated=dedicated, **options)
