"""The asyncio client of contextd: spawn or connect, handshake, typed requests, notifications."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, Self, TypedDict, Unpack, cast, overload

from contextd import __version__
from contextd.rpc.messages import METHOD_NOT_FOUND
from contextd_client import types as t
from contextd_client.daemon import STREAM_LIMIT_BYTES, DaemonProcess, daemon_command, wants_shared_daemon
from contextd_client.rpc import ContextdError, JsonRpcConnection

CLIENT_NAME = "contextd-client"
SHUTDOWN_TIMEOUT_SECONDS = 5.0

HookHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Answers a request of the daemon (contextd/beforeCompact, contextd/beforeNavigate)."""
BeforeCompactHandler = HookHandler
BeforeNavigateHandler = HookHandler


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any]


class NotificationStream:
    """Notifications of the chosen methods (all if none), queued from the moment of creation.

    Iterate with `async for`, or take one with `await stream.get(timeout)`. Close it (or
    use it as a context manager) to stop queueing.
    """

    def __init__(self, client: ContextdClient, methods: Iterable[str]) -> None:
        self._client = client
        self._methods = frozenset(methods)
        self._queue: asyncio.Queue[Notification | None] = asyncio.Queue()
        self._unsubscribe = client.on(None, self._offer)
        self._closed = False

    def _offer(self, method: str, params: dict[str, Any]) -> None:
        if not self._methods or method in self._methods:
            self._queue.put_nowait(Notification(method, params))


    async def get(self, timeout: float | None = None) -> Notification:
        """The next notification; TimeoutError after `timeout`, StopAsyncIteration once closed."""
        item = await asyncio.wait_for(self._queue.get(), timeout)
        if item is None:
            self._queue.put_nowait(None)
            raise StopAsyncIteration
        return item

    def drain(self) -> list[Notification]:
        """Everything queued so far, without waiting."""
        items: list[Notification] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is None:
                self._queue.put_nowait(None)
                break
            items.append(item)
        return items

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        self._client._streams.discard(self)
        self._queue.put_nowait(None)

    def __aiter__(self) -> NotificationStream:
        return self

    async def __anext__(self) -> Notification:
        return await self.get()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _params(**values: Any) -> dict[str, Any]:
    """Request params without the options left unset."""
    return {key: value for key, value in values.items() if value is not None}


def _watch_params(workspace: str | Path | None, all_workspaces: bool) -> dict[str, Any]:
    """contextd/workspace/watch and unwatch: a workspace, every one, or (neither) this client's."""
    return _params(
        workspace=str(workspace) if workspace is not None else None,
        allWorkspaces=all_workspaces or None,
    )


class _ClientOptions(TypedDict, total=False):
    """What every way of reaching a daemon passes on to the client it makes."""

    settings: dict[str, Any] | None
    daemon: DaemonProcess | None
    before_compact: BeforeCompactHandler | None
    before_navigate: BeforeNavigateHandler | None
    work_done_progress: bool


class ContextdClient:
    """A connection to one contextd daemon, spawned over stdio or reached over TCP.

    Use `await ContextdClient.spawn(...)` or `await ContextdClient.connect(host, port)`, and
    `await client.close()` (or `async with`) when done: that sends shutdown/exit and, for a
    spawned daemon, waits for it to exit.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        settings: dict[str, Any] | None = None,
        daemon: DaemonProcess | None = None,
        before_compact: BeforeCompactHandler | None = None,
        before_navigate: BeforeNavigateHandler | None = None,
        work_done_progress: bool = False,
    ) -> None:
        self.settings: dict[str, Any] = dict(settings or {})
        self._work_done_progress = work_done_progress
        self.daemon = daemon
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        hooks = {"beforeCompact": before_compact, "beforeNavigate": before_navigate}
        self._hooks: dict[str, HookHandler] = {name: hook for name, hook in hooks.items() if hook is not None}
        self._handlers: dict[str | None, list[Callable[[str, dict[str, Any]], None]]] = {}
        self._streams: set[NotificationStream] = set()
        self._rpc = JsonRpcConnection(
            reader, writer, self._dispatch, self._serve_request, self._end_streams
        )
        self._closed = False
        self._token: str | None = None
        """What `initialize` carries for a daemon on TCP."""

    # --- lifecycle -----------------------------------------------------------------

    @classmethod
    async def spawn(
        cls,
        *,
        data_dir: str | Path | None = None,
        settings: dict[str, Any] | None = None,
        workspace: str | Path | None = None,
        log_level: str = "WARNING",
        stderr: IO[Any] | int | None = None,
        env: dict[str, str] | None = None,
        command: list[str] | None = None,
        before_compact: BeforeCompactHandler | None = None,
        before_navigate: BeforeNavigateHandler | None = None,
        work_done_progress: bool = False,
        shared: bool | None = None,
    ) -> ContextdClient:
        """Start `contextd serve` as a child of this process and complete the handshake.

        `shared` (the default unless CONTEXTD_SHARED=0 or `settings` carry daemon-wide keys)
        starts `contextd serve --shared`: the child forwards to the per-user shared daemon,
        so editors and other scripts see this client's sessions; False gives the client a
        daemon of its own, which ends with it.

        `before_compact(params)` answers the daemon's contextd/beforeCompact requests (None
        lets the compaction proceed), `before_navigate(params)` its contextd/beforeNavigate
        requests before each of this client's navigations (None lets it proceed);
        `work_done_progress` asks for `$/progress` during compactions, delivered like any
        notification.
        """
        daemon = await DaemonProcess.start(
            command
            or daemon_command(
                data_dir, log_level, wants_shared_daemon(settings) if shared is None else shared
            ),
            cwd=workspace,
            env=env,
            stderr=stderr,
        )
        return await cls._attach(
            (daemon.reader, daemon.writer), workspace, settings=settings, daemon=daemon,
            before_compact=before_compact, before_navigate=before_navigate,
            work_done_progress=work_done_progress,
        )

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        settings: dict[str, Any] | None = None,
        workspace: str | Path | None = None,
        before_compact: BeforeCompactHandler | None = None,
        before_navigate: BeforeNavigateHandler | None = None,
        work_done_progress: bool = False,
        token: str | None = None,
    ) -> ContextdClient:
        """Connect to a daemon started with `contextd serve --tcp HOST:PORT`. `token` is the
        one it wrote for its user; by default it is read from that daemon's token file
        (`contextd.rpc.access.tcp_token_path(port)`)."""
        from contextd.rpc.access import read_tcp_token

        opened = await asyncio.open_connection(host, port, limit=STREAM_LIMIT_BYTES)
        return await cls._attach(
            opened, workspace, token=token if token is not None else read_tcp_token(port),
            settings=settings, before_compact=before_compact, before_navigate=before_navigate,
            work_done_progress=work_done_progress,
        )

    @classmethod
    async def connect_unix(
        cls,
        path: str | Path,
        *,
        settings: dict[str, Any] | None = None,
        workspace: str | Path | None = None,
        before_compact: BeforeCompactHandler | None = None,
        before_navigate: BeforeNavigateHandler | None = None,
        work_done_progress: bool = False,
    ) -> ContextdClient:
        """Connect to a daemon on a Unix socket (`contextd serve --socket PATH`, or the
        shared daemon's socket) without starting one; the hooks as for `spawn`."""
        from contextd.rpc.access import check_same_user

        opened = await asyncio.open_unix_connection(str(path), limit=STREAM_LIMIT_BYTES)
        try:
            check_same_user(opened[1].get_extra_info("socket"), f"the daemon on {path}")
        except Exception:
            opened[1].close()
            raise
        return await cls._attach(
            opened, workspace, settings=settings, before_compact=before_compact,
            before_navigate=before_navigate, work_done_progress=work_done_progress,
        )

    @classmethod
    async def _attach(
        cls,
        opened: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        workspace: str | Path | None,
        *,
        token: str | None = None,
        **options: Unpack[_ClientOptions],
    ) -> ContextdClient:
        """A client on a stream just opened (a spawned daemon's stdio, a TCP or Unix socket)
        and its handshake: what spawn, connect and connect_unix differ in ends here."""
        client = cls(*opened, **options)
        client._token = token
        return await client._handshake(workspace)

    async def daemon_status(self) -> dict[str, Any]:
        """contextd/daemon/status: the daemon's pid, address, connections and sessions."""
        return cast(dict[str, Any], await self._rpc.request("contextd/daemon/status", {}))

    async def _handshake(self, workspace: str | Path | None) -> ContextdClient:
        """initialize/initialized; a client whose handshake fails lets go of its daemon."""
        try:
            await self._initialize(workspace)
        except BaseException:
            await self._abandon()
            raise
        return self

    async def _initialize(self, workspace: str | Path | None) -> None:
        self._rpc.start()
        folders = None
        if workspace is not None:
            path = Path(workspace).resolve()
            folders = [{"uri": path.as_uri(), "name": path.name}]
        result = await self._rpc.request(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": CLIENT_NAME, "version": __version__},
                "rootUri": folders[0]["uri"] if folders else None,
                "workspaceFolders": folders,
                "capabilities": {
                    "window": {"workDoneProgress": self._work_done_progress},
                    "workspace": {"configuration": True},
                    "experimental": {
                        "contextd": {hook: hook in self._hooks for hook in ("beforeCompact", "beforeNavigate")}
                    },
                },
                "initializationOptions": self.settings,
                **({"authToken": self._token} if self._token is not None else {}),
            },
        )
        self.server_info = result.get("serverInfo") or {}
        self.server_capabilities = result.get("capabilities") or {}
        await self._rpc.notify("initialized", {})

    async def close(self) -> None:
        """shutdown, exit, and for a spawned daemon wait until it has exited."""
        if self._closed:
            return
        self._closed = True
        if not self._rpc.closed:
            try:
                await asyncio.wait_for(self._rpc.request("shutdown"), SHUTDOWN_TIMEOUT_SECONDS)
                await self._rpc.notify("exit")
            except (TimeoutError, ContextdError, ConnectionError):
                pass
        await self._abandon()

    async def _abandon(self) -> None:
        self._closed = True
        if self.daemon is not None:
            # Closing its stdin is the daemon's cue to leave if it ignored `exit`.
            self.daemon.writer.close()
            await self.daemon.stop(SHUTDOWN_TIMEOUT_SECONDS)
        await self._rpc.close()

    def _end_streams(self, reason: str) -> None:
        for stream in list(self._streams):
            stream.close()

    @property
    def closed_reason(self) -> str | None:
        """Why the connection ended (None while it is open)."""
        return self._rpc.closed_reason

    async def wait_closed(self) -> None:
        """Wait until the daemon closes the connection (e.g. it crashed or was stopped)."""
        await self._rpc.wait_closed()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- notifications -------------------------------------------------------------

    def on(
        self, method: str | None, callback: Callable[[str, dict[str, Any]], None]
    ) -> Callable[[], None]:
        """Call `callback(method, params)` for each notification of `method` (None: all).

        Returns a function that removes the callback.
        """
        self._handlers.setdefault(method, []).append(callback)

        def remove() -> None:
            handlers = self._handlers.get(method, [])
            if callback in handlers:
                handlers.remove(callback)

        return remove

    def notifications(self, *methods: str) -> NotificationStream:
        """A stream of the notifications of `methods` (all if none) arriving from now on."""
        stream = NotificationStream(self, methods)
        self._streams.add(stream)
        return stream

    async def wait_for(
        self,
        method: str,
        predicate: Callable[[dict[str, Any]], bool] = lambda params: True,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """The params of the next notification of `method` that satisfies `predicate`."""
        with self.notifications(method) as stream:
            async with asyncio.timeout(timeout):
                async for notification in stream:
                    if predicate(notification.params):
                        return notification.params
        raise ConnectionError("the connection closed while waiting for " + method)

    def _dispatch(self, method: str, params: Any) -> None:
        for callback in [*self._handlers.get(method, []), *self._handlers.get(None, [])]:
            callback(method, params or {})

    async def _serve_request(self, method: str, params: Any) -> Any:
        params = params or {}
        if method == "workspace/configuration":
            return [
                self.settings if item.get("section") in (None, "contextd") else None
                for item in params.get("items", [])
            ]
        if method in (
            "window/workDoneProgress/create",
            "client/registerCapability",
            "client/unregisterCapability",
        ):
            return None
        hook = self._hooks.get(method.removeprefix("contextd/")) if method.startswith("contextd/") else None
        if hook is not None:
            return await hook(params)
        raise ContextdError(METHOD_NOT_FOUND, f"the client does not serve {method}")

    # --- requests ------------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Any request by name; the typed methods below are the usual way."""
        return await self._rpc.request(method, params)

    async def change_settings(self, settings: dict[str, Any]) -> None:
        """Replace the daemon's settings (workspace/didChangeConfiguration)."""
        self.settings = dict(settings)
        await self._rpc.notify(
            "workspace/didChangeConfiguration", {"settings": {"contextd": self.settings}}
        )

    async def session_open(
        self,
        *,
        workspace: str | Path | None = None,
        session_id: str | None = None,
        name: str | None = None,
        model: str | None = None,
    ) -> t.OpenResult:
        """Create a session, or resume `session_id` from disk."""
        params = _params(
            workspace=str(workspace) if workspace is not None else None,
            sessionId=session_id,
            name=name,
            model=model,
        )
        return cast(t.OpenResult, await self.request("contextd/session/open", params))

    async def session_list(self, *, workspace: str | Path | None = None) -> t.ListResult:
        params = _params(workspace=str(workspace) if workspace is not None else None)
        return cast(t.ListResult, await self.request("contextd/session/list", params))

    async def append(self, session_id: str, messages: list[t.Message]) -> t.AppendResult:
        params = {"sessionId": session_id, "messages": messages}
        return cast(t.AppendResult, await self.request("contextd/session/append", params))

    async def context(
        self, session_id: str, format: t.ContextFormat = "neutral", model: str | None = None
    ) -> t.ContextResult:
        """`model`: the model the request is for, when not the session's (a provider's
        compaction state is replayed to the model that made it only)."""
        params = {"sessionId": session_id, "format": format}
        if model is not None:
            params["model"] = model
        return cast(t.ContextResult, await self.request("contextd/session/context", params))

    async def state(self, session_id: str) -> t.StateResult:
        params = {"sessionId": session_id}
        return cast(t.StateResult, await self.request("contextd/session/state", params))

    async def stats(self, session_id: str) -> t.StatsResult:
        params = {"sessionId": session_id}
        return cast(t.StatsResult, await self.request("contextd/session/stats", params))

    async def set_model(self, session_id: str, model: str) -> t.SetModelResult:
        params = {"sessionId": session_id, "model": model}
        return cast(t.SetModelResult, await self.request("contextd/session/setModel", params))

    async def set_instructions(
        self, session_id: str, text: str, *, source: str | None = None
    ) -> t.SetInstructionsResult:
        """Set the standing instructions from `source` (default "client"; AGENTS.md, …):
        the `system` of the context from now on, never summarized. Empty `text` withdraws them."""
        params = _params(sessionId=session_id, text=text, source=source)
        return cast(t.SetInstructionsResult, await self.request("contextd/session/setInstructions", params))

    async def close_session(self, session_id: str) -> t.CloseResult:
        params = {"sessionId": session_id}
        return cast(t.CloseResult, await self.request("contextd/session/close", params))

    async def delete_session(self, session_id: str) -> t.DeleteResult:
        """Delete the session's file through the daemon: every client that has it open is
        told (sessionChanged `deleted`) and detached. -32003 when another daemon holds it."""
        params = {"sessionId": session_id}
        return cast(t.DeleteResult, await self.request("contextd/session/delete", params))

    @overload
    async def compact(
        self, session_id: str, *, instructions: str | None = ..., dry_run: Literal[False] = ...
    ) -> t.CompactResult: ...

    @overload
    async def compact(
        self, session_id: str, *, instructions: str | None = ..., dry_run: Literal[True]
    ) -> t.CompactPreview: ...

    async def compact(
        self, session_id: str, *, instructions: str | None = None, dry_run: bool = False
    ) -> t.CompactResult | t.CompactPreview:
        """Compact now; with `dry_run` only report what would be summarized, kept and pruned."""
        params = _params(sessionId=session_id, instructions=instructions, dryRun=dry_run or None)
        return await self.request("contextd/compact", params)  # type: ignore[no-any-return]

    async def compact_abort(self, session_id: str) -> t.AbortResult:
        """Stop the session's running compaction or handoff; `aborted` is false if none ran."""
        return cast(t.AbortResult, await self.request("contextd/compact/abort", {"sessionId": session_id}))

    async def handoff(self, session_id: str, *, goal: str | None = None) -> t.HandoffResult:
        params = _params(sessionId=session_id, goal=goal)
        return cast(t.HandoffResult, await self.request("contextd/handoff", params))

    async def tree(self, session_id: str) -> t.TreeResult:
        return cast(t.TreeResult, await self.request("contextd/tree", {"sessionId": session_id}))

    async def navigate(
        self,
        session_id: str,
        target_id: str,
        *,
        summarize: bool = False,
        instructions: str | None = None,
    ) -> t.NavigateResult:
        params = _params(
            sessionId=session_id,
            targetId=target_id,
            summarize=summarize,
            instructions=instructions,
        )
        return cast(t.NavigateResult, await self.request("contextd/navigate", params))

    async def fork(self, session_id: str, entry_id: str) -> t.ForkResult:
        params = {"sessionId": session_id, "entryId": entry_id}
        return cast(t.ForkResult, await self.request("contextd/fork", params))

    async def label(self, session_id: str, entry_id: str, label: str | None) -> t.LabelResult:
        """Set (or with None clear) the label of an entry."""
        params = {"sessionId": session_id, "entryId": entry_id, "label": label}
        return cast(t.LabelResult, await self.request("contextd/label", params))

    async def watch_workspace(
        self, workspace: str | Path | None = None, *, all_workspaces: bool = False
    ) -> t.ListResult:
        """Hear of every change of the sessions of `workspace` (default: this client's
        workspace; `all_workspaces`: of every one), whoever makes it, as
        `contextd/workspace/activity` notifications (see `activity()`). The result lists the
        workspace's sessions as they are now."""
        params = _watch_params(workspace, all_workspaces)
        return cast(t.ListResult, await self.request("contextd/workspace/watch", params))

    async def follow(
        self,
        *,
        enabled: bool | None = None,
        agents: list[str] | None = None,
        roots: dict[str, str] | None = None,
        all_workspaces: bool | None = None,
    ) -> t.FollowResult:
        """contextd/follow: turn following of other agents' transcripts on or off for the
        whole daemon, or change what it follows; with no argument only reads the settings.
        The result holds the settings in force and `mirrors`, the transcripts followed."""
        params = _params(enabled=enabled, agents=agents, roots=roots, allWorkspaces=all_workspaces)
        return cast(t.FollowResult, await self.request("contextd/follow", params))

    async def unwatch_workspace(
        self, workspace: str | Path | None = None, *, all_workspaces: bool = False
    ) -> None:
        """Stop the watch `watch_workspace` with the same arguments started."""
        await self.request("contextd/workspace/unwatch", _watch_params(workspace, all_workspaces))

    def activity(self) -> NotificationStream:
        """A stream of the workspace activity arriving from now on (their params are
        `types.WorkspaceActivity`)."""
        return self.notifications(t.WORKSPACE_ACTIVITY)

    async def idle_configure(
        self,
        *,
        enabled: bool,
        session_id: str | None = None,
        timeout_seconds: float | None = None,
        threshold_tokens: int | None = None,
        threshold_percent: float | None = None,
    ) -> t.IdleConfigureResult:
        """Idle compaction for one session, or daemon-wide without `session_id`."""
        params = _params(
            sessionId=session_id,
            enabled=enabled,
            timeoutSeconds=timeout_seconds,
            thresholdTokens=threshold_tokens,
            thresholdPercent=threshold_percent,
        )
        return cast(t.IdleConfigureResult, await self.request("contextd/idle/configure", params))
