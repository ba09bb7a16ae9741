"""The pygls adapter: JSON-RPC methods in, session calls out, notifications back.

Every handler takes its params as plain data and validates them with pydantic here, because
pygls sends no reply at all when its own structuring of params fails.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from lsprotocol import types as lsp
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)
from pygls.uris import to_fs_path

from contextd import __version__
from contextd.formats import to_format
from contextd.model import IdleSettings, Message, Settings, unknown_setting_keys
from contextd.session import (
    CompactionFailed,
    CompactionRunning,
    CompactionVetoed,
    EntryNotFound,
    HookAnswer,
    InvalidAppend,
    NothingToCompactError,
    SessionManager,
)
from contextd.store import (
    InvalidSessionId,
    SessionLocked,
    SessionNotFound,
    Store,
    default_data_dir,
)

log = logging.getLogger(__name__)

SESSION_NOT_FOUND = -32001
SESSION_LOCKED = -32003
COMPACTION_RUNNING = -32004
NOTHING_TO_COMPACT = -32005
SUMMARIZER_FAILED = -32006
ENTRY_NOT_FOUND = -32007
REQUEST_CANCELLED = -32800

MAX_MESSAGES_PER_APPEND = 10_000


# --- params -------------------------------------------------------------------------------


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


SessionId = Field(min_length=1, max_length=128)


class SessionParams(Params):
    sessionId: str = SessionId


class OpenParams(Params):
    workspace: str | None = Field(default=None, min_length=1, max_length=4096)
    sessionId: str | None = Field(default=None, min_length=1, max_length=128)
    name: str | None = Field(default=None, max_length=256)
    model: str | None = Field(default=None, min_length=1, max_length=256)


class ListParams(Params):
    workspace: str | None = Field(default=None, min_length=1, max_length=4096)


class AppendParams(SessionParams):
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES_PER_APPEND)


class ContextParams(SessionParams):
    format: Literal["neutral", "anthropic", "openai"] = "neutral"


class SetModelParams(SessionParams):
    model: str = Field(min_length=1, max_length=256)


class LabelParams(SessionParams):
    entryId: str = Field(min_length=1, max_length=64)
    label: str | None = Field(max_length=200)


class NavigateParams(SessionParams):
    targetId: str = Field(min_length=1, max_length=64)
    summarize: bool = False
    instructions: str | None = Field(default=None, max_length=20_000)


class ForkParams(SessionParams):
    entryId: str = Field(min_length=1, max_length=64)


class HandoffParams(SessionParams):
    goal: str | None = Field(default=None, max_length=20_000)


class IdleConfigureParams(Params):
    sessionId: str | None = Field(default=None, min_length=1, max_length=128)
    enabled: bool
    timeoutSeconds: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    thresholdTokens: int | None = Field(default=None, gt=0)
    thresholdPercent: float | None = Field(default=None, gt=0, le=1)


class BeforeCompactAnswer(BaseModel):
    """A client's answer to contextd/beforeCompact; null or {} lets the compaction proceed."""

    model_config = ConfigDict(extra="forbid")
    cancel: bool = False
    summary: str | None = Field(default=None, min_length=1, max_length=400_000)
    instructions: str | None = Field(default=None, max_length=20_000)


class CompactParams(SessionParams):
    instructions: str | None = Field(default=None, max_length=20_000)
    dryRun: bool = False


# --- errors -------------------------------------------------------------------------------


def field_errors(error: ValidationError) -> list[dict[str, str]]:
    return [
        {"field": ".".join(str(part) for part in item["loc"]) or "params", "message": item["msg"]}
        for item in error.errors(include_url=False, include_input=False)
    ]


def invalid_params(errors: list[dict[str, str]]) -> JsonRpcInvalidParams:
    summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
    return JsonRpcInvalidParams(message=f"invalid params: {summary}", data={"errors": errors})


def to_rpc_error(error: Exception) -> JsonRpcException:
    """The one place where a domain error becomes a JSON-RPC error."""
    if isinstance(error, ValidationError):
        return invalid_params(field_errors(error))
    if isinstance(error, InvalidAppend):
        return invalid_params([{"field": error.field, "message": str(error)}])
    if isinstance(error, InvalidSessionId):
        return invalid_params([{"field": "sessionId", "message": str(error)}])
    if isinstance(error, SessionNotFound):
        return JsonRpcException(str(error), SESSION_NOT_FOUND, {"sessionId": error.session_id})
    if isinstance(error, SessionLocked):
        data = {"sessionId": error.session_id, "pid": error.pid}
        return JsonRpcException(str(error), SESSION_LOCKED, data)
    if isinstance(error, CompactionRunning):
        return JsonRpcException(str(error), COMPACTION_RUNNING, {"sessionId": error.session_id})
    if isinstance(error, NothingToCompactError):
        return JsonRpcException(str(error), NOTHING_TO_COMPACT, {"sessionId": error.session_id})
    if isinstance(error, CompactionVetoed):
        return JsonRpcException(str(error), REQUEST_CANCELLED)
    if isinstance(error, CompactionFailed):
        return JsonRpcException(str(error), SUMMARIZER_FAILED, {"provider": error.provider})
    if isinstance(error, EntryNotFound):
        return JsonRpcException(str(error), ENTRY_NOT_FOUND, {"entryId": error.entry_id})
    if isinstance(error, JsonRpcException):
        return error
    raise error


P = TypeVar("P", bound=Params)


def parse_params(model: type[P], raw: Any) -> P:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid_params([{"field": "params", "message": "params must be an object"}])
    return model.model_validate(raw)


# --- the server ---------------------------------------------------------------------------


def plain_params_converter():
    """pygls' default turns unknown methods' params into namedtuples, renaming keys that are
    not identifiers; we want the client's JSON exactly as sent."""
    converter = default_converter()
    for message_type in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(message_type, lambda obj, cls: cls(**obj))
    return converter


class ContextdServer(LanguageServer):
    def __init__(self, data_dir: str | None = None) -> None:
        super().__init__("contextd", __version__, converter_factory=plain_params_converter)
        self.cli_data_dir = data_dir
        self.settings = Settings()
        self.default_workspace = os.getcwd()
        self._sessions: SessionManager | None = None

    @property
    def sessions(self) -> SessionManager:
        if self._sessions is None:
            self._sessions = SessionManager(self._store(), self.settings, ServerEvents(self))
        return self._sessions

    def _store(self) -> Store:
        chosen = self.cli_data_dir or self.settings.storage.dataDir
        return Store(Path(chosen).expanduser() if chosen else default_data_dir())

    def apply_settings(self, raw: Any) -> None:
        settings = parse_settings(raw)
        self.settings = settings
        if self._sessions is not None:
            self._sessions.apply_settings(settings)

    def notify(self, method: str, body: dict[str, Any]) -> None:
        self.protocol.notify(method, body)

    def can_pull_configuration(self) -> bool:
        capabilities = self.protocol.client_capabilities
        workspace = capabilities.workspace if capabilities else None
        return bool(workspace and workspace.configuration)

    def wants_before_compact(self) -> bool:
        capabilities = self.protocol.client_capabilities
        experimental = capabilities.experimental if capabilities else None
        if not isinstance(experimental, dict):
            return False
        contextd = experimental.get("contextd")
        return isinstance(contextd, dict) and contextd.get("beforeCompact") is True

    def supports_progress(self) -> bool:
        capabilities = self.protocol.client_capabilities
        window = capabilities.window if capabilities else None
        return bool(window and window.work_done_progress)


def parse_settings(raw: Any) -> Settings:
    try:
        settings = Settings.model_validate(raw or {})
    except ValidationError as error:
        errors = [{**e, "field": f"settings.{e['field']}"} for e in field_errors(error)]
        raise invalid_params(errors) from None
    for key in unknown_setting_keys(settings):
        log.warning("unknown setting %r ignored", key)
    return settings


class ServerEvents:
    """SessionEvents as JSON-RPC notifications."""

    def __init__(self, server: ContextdServer) -> None:
        self.server = server

    def token_usage(self, body: dict[str, Any]) -> None:
        self.server.notify("contextd/tokenUsage", body)

    def session_changed(self, session_id: str, leaf_id: str | None, cause: str) -> None:
        self.server.notify(
            "contextd/sessionChanged", {"sessionId": session_id, "leafId": leaf_id, "cause": cause}
        )

    def compaction_started(self, body: dict[str, Any]) -> None:
        self.server.notify("contextd/compactionStarted", body)

    def compaction_finished(self, body: dict[str, Any]) -> None:
        self.server.notify("contextd/compactionFinished", body)

    def idle_timer(self, body: dict[str, Any]) -> None:
        self.server.notify("contextd/idleTimer", body)

    async def before_compact(self, body: dict[str, Any]) -> HookAnswer:
        """Ask the client, if it asked to be asked. Silence or nonsense never stalls us."""
        if not self.server.wants_before_compact():
            return HookAnswer()
        timeout = self.server.settings.compaction.hookTimeoutSeconds
        try:
            raw = await asyncio.wait_for(
                self.server.protocol.send_request_async("contextd/beforeCompact", body), timeout
            )
            answer = BeforeCompactAnswer.model_validate(raw or {})
        except TimeoutError:
            log.warning("beforeCompact: no answer within %gs; compacting as configured", timeout)
            return HookAnswer()
        except JsonRpcException as error:
            log.warning("beforeCompact: the client answered an error (%s); compacting as configured", error)
            return HookAnswer()
        except ValidationError as error:
            log.warning("beforeCompact: unusable answer (%s); compacting as configured",
                        "; ".join(f"{e['field']}: {e['message']}" for e in field_errors(error)))
            return HookAnswer()
        return HookAnswer(cancel=answer.cancel, summary=answer.summary, instructions=answer.instructions)

    def compaction_progress(self, compaction_id: str, stage: str, message: str) -> None:
        """`$/progress` for clients that show work-done progress; the token is the
        compaction id, created on the client before `begin`."""
        if not self.server.supports_progress():
            return
        progress = self.server.work_done_progress
        token = f"contextd-compaction-{compaction_id}"
        if stage == "begin":
            progress.create(token)
            progress.begin(token, lsp.WorkDoneProgressBegin(title="Compacting context", message=message, cancellable=False))
        elif stage == "report":
            progress.report(token, lsp.WorkDoneProgressReport(message=message))
        else:
            progress.end(token, lsp.WorkDoneProgressEnd(message=message))


def touch(server: ContextdServer, params: Params) -> None:
    """A request on a session is activity: it re-arms or cancels that session's idle timer."""
    session_id = getattr(params, "sessionId", None)
    if session_id is not None:
        session = server.sessions.loaded_session(session_id)
        if session is not None:
            session.touch()


def request(server: ContextdServer, method: str, params_model: type[Params], function: Any) -> None:
    """Register `function(server, params)` for `method`, validating params and mapping errors.

    A session the request names is loaded first, off the event loop when it is not in
    memory, so a cold load never holds up the requests of other sessions. The handlers'
    first parameter is named `ls` so that pygls passes the server in."""

    async def handle(ls: ContextdServer, raw: Any) -> Any:
        try:
            params = parse_params(params_model, raw)
            session_id = getattr(params, "sessionId", None)
            if session_id is not None:
                await ls.sessions.load(session_id)
            result = function(ls, params)
            if inspect.isawaitable(result):
                result = await result
        except Exception as error:
            raise to_rpc_error(error) from None
        touch(ls, params)
        return result

    server.feature(method)(handle)


# --- lifecycle ----------------------------------------------------------------------------


def initialize(ls: ContextdServer, params: lsp.InitializeParams) -> None:
    ls.apply_settings(params.initialization_options)
    folders = params.workspace_folders or []
    if folders:
        ls.default_workspace = to_fs_path(folders[0].uri) or ls.default_workspace
    elif params.root_uri:
        ls.default_workspace = to_fs_path(params.root_uri) or ls.default_workspace


def did_change_configuration(ls: ContextdServer, params: lsp.DidChangeConfigurationParams) -> None:
    raw = params.settings
    if isinstance(raw, dict) and "contextd" in raw:
        apply_notified_settings(ls, raw["contextd"])
    elif ls.can_pull_configuration():
        # Clients of the pull model send an empty notification: ask for the section.
        asyncio.ensure_future(pull_configuration(ls))
    else:
        apply_notified_settings(ls, raw)


async def initialized(ls: ContextdServer, params: lsp.InitializedParams) -> None:
    if ls.can_pull_configuration():
        await pull_configuration(ls)


async def pull_configuration(ls: ContextdServer) -> None:
    """`workspace/configuration` for section `contextd`; nothing (null or {}) keeps what we have."""
    try:
        answer = await ls.protocol.send_request_async(
            lsp.WORKSPACE_CONFIGURATION,
            lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="contextd")]),
        )
    except JsonRpcException as error:
        log.warning("workspace/configuration failed: %s", error)
        return
    section = answer[0] if isinstance(answer, (list, tuple)) and answer else None
    if isinstance(section, dict) and section:
        apply_notified_settings(ls, section)


def apply_notified_settings(ls: ContextdServer, raw: Any) -> None:
    try:
        ls.apply_settings(raw)
    except JsonRpcException as error:
        # A notification has no reply: say it where the user will see it.
        log.error("settings not applied: %s", error.message)
        ls.window_show_message(
            lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"contextd: {error.message}")
        )


def shutdown(ls: ContextdServer, *_: Any) -> None:
    if ls._sessions is not None:
        ls._sessions.close_all()


# --- session methods ----------------------------------------------------------------------


def session_open(server: ContextdServer, params: OpenParams) -> dict[str, Any]:
    sessions = server.sessions
    if params.sessionId is not None:
        session = sessions.get(params.sessionId)
        if params.model and params.model != session.model_id:
            session.set_model(params.model)
    else:
        workspace = params.workspace or server.default_workspace
        session = sessions.create(workspace, name=params.name, model=params.model)
    session.announce("open")
    return {
        "sessionId": session.session_id,
        "name": session.name,
        "leafId": session.leaf_id,
        "model": session.model_id,
        "contextWindow": session.model_info.context_window,
        "usage": session.usage_body(),
        "path": str(session.file.path),
    }


async def session_list(server: ContextdServer, params: ListParams) -> dict[str, Any]:
    return {"sessions": await server.sessions.listing(params.workspace)}


def session_append(server: ContextdServer, params: AppendParams) -> dict[str, Any]:
    session = server.sessions.get(params.sessionId)
    entry_ids = session.append_messages(params.messages)
    return {"entryIds": entry_ids, "leafId": session.leaf_id, "usage": session.usage_body()}


def session_context(server: ContextdServer, params: ContextParams) -> dict[str, Any]:
    session = server.sessions.get(params.sessionId)
    return {
        "messages": to_format(session.context_messages(), params.format),
        "tokens": session.tokens,
    }


def session_state(server: ContextdServer, params: SessionParams) -> dict[str, Any]:
    return server.sessions.get(params.sessionId).state()


def session_stats(server: ContextdServer, params: SessionParams) -> dict[str, Any]:
    return server.sessions.get(params.sessionId).stats()


def session_set_model(server: ContextdServer, params: SetModelParams) -> dict[str, Any]:
    session = server.sessions.get(params.sessionId)
    session.set_model(params.model)
    return {
        "model": session.model_id,
        "contextWindow": session.model_info.context_window,
        "usage": session.usage_body(),
    }


def session_close(server: ContextdServer, params: SessionParams) -> dict[str, Any]:
    server.sessions.close(params.sessionId)
    return {"closed": True}


async def compact(server: ContextdServer, params: CompactParams) -> dict[str, Any]:
    session = server.sessions.get(params.sessionId)
    if params.dryRun:
        return session.preview_compaction(params.instructions)
    entry = await session.compact("manual", params.instructions)
    return {
        "entryId": entry.id,
        "summary": entry.summary,
        "firstKeptEntryId": entry.firstKeptEntryId,
        "tokensBefore": entry.tokensBefore,
        "tokensAfter": entry.tokensAfter,
        "shortSummary": entry.shortSummary,
        "summarizer": entry.summarizer.model_dump(exclude_none=True),
    }


def compact_abort(server: ContextdServer, params: SessionParams) -> dict[str, Any]:
    return {"aborted": server.sessions.get(params.sessionId).abort_compaction()}


def tree(server: ContextdServer, params: SessionParams) -> dict[str, Any]:
    session = server.sessions.get(params.sessionId)
    return {"nodes": session.tree_nodes(), "leafId": session.leaf_id}


def label(server: ContextdServer, params: LabelParams) -> dict[str, Any]:
    session = server.sessions.get(params.sessionId)
    session.set_label(params.entryId, params.label or None)
    return {"entryId": params.entryId, "label": params.label or None}


async def navigate(server: ContextdServer, params: NavigateParams) -> dict[str, Any]:
    session = server.sessions.get(params.sessionId)
    return await session.navigate(
        params.targetId, summarize=params.summarize, instructions=params.instructions
    )


def fork(server: ContextdServer, params: ForkParams) -> dict[str, Any]:
    source = server.sessions.get(params.sessionId)
    forked = server.sessions.fork(source, params.entryId)
    forked.announce("fork")
    return {"sessionId": forked.session_id, "leafId": forked.leaf_id}


async def handoff(server: ContextdServer, params: HandoffParams) -> dict[str, Any]:
    source = server.sessions.get(params.sessionId)
    fresh, entry = await server.sessions.handoff(source, params.goal)
    return {"sessionId": fresh.session_id, "entryId": entry.id, "document": entry.document}


def idle_configure(server: ContextdServer, params: IdleConfigureParams) -> dict[str, Any]:
    changes = params.model_dump(exclude_none=True, exclude={"sessionId"})
    if params.sessionId is None:
        idle = server.settings.idle.model_copy(update=changes)
        server.apply_settings({**server.settings.model_dump(), "idle": idle.model_dump()})
        for session in server.sessions.loaded():
            session.touch()
        return {**idle.model_dump(include=set(IdleSettings.model_fields))}
    session = server.sessions.get(params.sessionId)
    idle = session.idle_settings.model_copy(update=changes)
    session.configure_idle(idle)
    return {
        "sessionId": session.session_id,
        **idle.model_dump(include=set(IdleSettings.model_fields)),
        "effectiveThresholdTokens": session.idle_threshold(),
    }


# --- wiring -------------------------------------------------------------------------------

REQUESTS: list[tuple[str, type[Params], Callable[..., Any]]] = [
    ("contextd/session/open", OpenParams, session_open),
    ("contextd/session/list", ListParams, session_list),
    ("contextd/session/append", AppendParams, session_append),
    ("contextd/session/context", ContextParams, session_context),
    ("contextd/session/state", SessionParams, session_state),
    ("contextd/session/stats", SessionParams, session_stats),
    ("contextd/session/setModel", SetModelParams, session_set_model),
    ("contextd/session/close", SessionParams, session_close),
    ("contextd/compact", CompactParams, compact),
    ("contextd/compact/abort", SessionParams, compact_abort),
    ("contextd/tree", SessionParams, tree),
    ("contextd/label", LabelParams, label),
    ("contextd/navigate", NavigateParams, navigate),
    ("contextd/fork", ForkParams, fork),
    ("contextd/handoff", HandoffParams, handoff),
    ("contextd/idle/configure", IdleConfigureParams, idle_configure),
]


def create_server(data_dir: str | None = None) -> ContextdServer:
    server = ContextdServer(data_dir)
    server.feature(lsp.INITIALIZE)(initialize)
    server.feature(lsp.INITIALIZED)(initialized)
    server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(lsp.SHUTDOWN)(shutdown)
    for method, params_model, function in REQUESTS:
        request(server, method, params_model, function)
    return server
