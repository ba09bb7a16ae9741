"""A blocking client for scripts: the asyncio client on a private event-loop thread.

    with SyncContextdClient.spawn(data_dir="/tmp/ctx") as client:
        session = client.session_open(name="script")
        client.append(session["sessionId"], [{"role": "user", "content": "hi"}])

Notification callbacks registered with `on` run on the private thread; `notifications()`
gives a thread-safe queue instead.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Self, TypeVar

from contextd_client import types as t
from contextd_client.client import ContextdClient, Notification

T = TypeVar("T")


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="contextd-client", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            # Cancelling the task makes the client send $/cancelRequest.
            future.cancel()
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class SyncContextdClient:
    """The same requests as ContextdClient, blocking; `timeout` (seconds) applies to each."""

    def __init__(self, loop: _LoopThread, client: ContextdClient, timeout: float | None) -> None:
        self._loop = loop
        self.client = client
        self.timeout = timeout

    @classmethod
    def spawn(cls, *, timeout: float | None = 120.0, **options: Any) -> SyncContextdClient:
        """Start a daemon; `options` are those of ContextdClient.spawn."""
        loop = _LoopThread()
        try:
            client = loop.run(ContextdClient.spawn(**options), timeout)
        except BaseException:
            loop.stop()
            raise
        return cls(loop, client, timeout)

    @classmethod
    def connect(
        cls, host: str, port: int, *, timeout: float | None = 120.0, **options: Any
    ) -> SyncContextdClient:
        loop = _LoopThread()
        try:
            client = loop.run(ContextdClient.connect(host, port, **options), timeout)
        except BaseException:
            loop.stop()
            raise
        return cls(loop, client, timeout)

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._loop.run(coroutine, self.timeout)

    def close(self) -> None:
        try:
            self._loop.run(self.client.close(), None)
        finally:
            self._loop.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- notifications -------------------------------------------------------------

    def on(
        self, method: str | None, callback: Callable[[str, dict[str, Any]], None]
    ) -> Callable[[], None]:
        """Like ContextdClient.on; the callback runs on the client's thread."""
        return self.client.on(method, callback)

    def notifications(self, *methods: str) -> queue.Queue[Notification]:
        """A queue that receives the notifications of `methods` (all if none) from now on."""
        received: queue.Queue[Notification] = queue.Queue()

        def offer(method: str, params: dict[str, Any]) -> None:
            if not methods or method in methods:
                received.put(Notification(method, params))

        self.client.on(None, offer)
        return received

    # --- requests ------------------------------------------------------------------

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self._run(self.client.request(method, params))

    def change_settings(self, settings: dict[str, Any]) -> None:
        self._run(self.client.change_settings(settings))

    def session_open(
        self,
        *,
        workspace: str | Path | None = None,
        session_id: str | None = None,
        name: str | None = None,
        model: str | None = None,
    ) -> t.OpenResult:
        return self._run(
            self.client.session_open(
                workspace=workspace, session_id=session_id, name=name, model=model
            )
        )

    def session_list(self, *, workspace: str | Path | None = None) -> t.ListResult:
        return self._run(self.client.session_list(workspace=workspace))

    def append(self, session_id: str, messages: list[t.Message]) -> t.AppendResult:
        return self._run(self.client.append(session_id, messages))

    def context(
        self, session_id: str, format: t.ContextFormat = "neutral", model: str | None = None
    ) -> t.ContextResult:
        return self._run(self.client.context(session_id, format, model))

    def state(self, session_id: str) -> t.StateResult:
        return self._run(self.client.state(session_id))

    def stats(self, session_id: str) -> t.StatsResult:
        return self._run(self.client.stats(session_id))

    def set_model(self, session_id: str, model: str) -> t.SetModelResult:
        return self._run(self.client.set_model(session_id, model))

    def set_instructions(
        self, session_id: str, text: str, *, source: str | None = None
    ) -> t.SetInstructionsResult:
        return self._run(self.client.set_instructions(session_id, text, source=source))

    def close_session(self, session_id: str) -> t.CloseResult:
        return self._run(self.client.close_session(session_id))

    def delete_session(self, session_id: str) -> t.DeleteResult:
        return self._run(self.client.delete_session(session_id))

    def compact(
        self, session_id: str, *, instructions: str | None = None, dry_run: bool = False
    ) -> t.CompactResult | t.CompactPreview:
        return self._run(
            self.client.compact(session_id, instructions=instructions, dry_run=dry_run)  # type: ignore[call-overload]
        )

    def compact_abort(self, session_id: str) -> t.AbortResult:
        return self._run(self.client.compact_abort(session_id))

    def handoff(self, session_id: str, *, goal: str | None = None) -> t.HandoffResult:
        return self._run(self.client.handoff(session_id, goal=goal))

    def tree(self, session_id: str) -> t.TreeResult:
        return self._run(self.client.tree(session_id))

    def navigate(
        self,
        session_id: str,
        target_id: str,
        *,
        summarize: bool = False,
        instructions: str | None = None,
    ) -> t.NavigateResult:
        return self._run(
            self.client.navigate(
                session_id, target_id, summarize=summarize, instructions=instructions
            )
        )

    def fork(self, session_id: str, entry_id: str) -> t.ForkResult:
        return self._run(self.client.fork(session_id, entry_id))

    def label(self, session_id: str, entry_id: str, label: str | None) -> t.LabelResult:
        return self._run(self.client.label(session_id, entry_id, label))

    def idle_configure(
        self,
        *,
        enabled: bool,
        session_id: str | None = None,
        timeout_seconds: float | None = None,
        threshold_tokens: int | None = None,
        threshold_percent: float | None = None,
    ) -> t.IdleConfigureResult:
        return self._run(
            self.client.idle_configure(
                enabled=enabled,
                session_id=session_id,
                timeout_seconds=timeout_seconds,
                threshold_tokens=threshold_tokens,
                threshold_percent=threshold_percent,
            )
        )

    def watch_workspace(
        self, workspace: str | Path | None = None, *, all_workspaces: bool = False
    ) -> t.ListResult:
        return self._run(self.client.watch_workspace(workspace, all_workspaces=all_workspaces))

    def unwatch_workspace(
        self, workspace: str | Path | None = None, *, all_workspaces: bool = False
    ) -> None:
        self._run(self.client.unwatch_workspace(workspace, all_workspaces=all_workspaces))

    def follow(
        self,
        *,
        enabled: bool | None = None,
        agents: list[str] | None = None,
        roots: dict[str, str] | None = None,
        all_workspaces: bool | None = None,
    ) -> t.FollowResult:
        return self._run(
            self.client.follow(enabled=enabled, agents=agents, roots=roots, all_workspaces=all_workspaces)
        )

    def daemon_status(self) -> dict[str, Any]:
        return self._run(self.client.daemon_status())
