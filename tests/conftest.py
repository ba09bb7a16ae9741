"""Shared fixtures: a real contextd daemon over real stdio, driven by pytest-lsp's client."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from contextd.follow.transcripts import AGENT_HOMES
from contextd_client import ContextdClient
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from tests.shared_daemon import shared_command, shared_environment, stop_daemon


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _skip_reason(longrepr: Any) -> str:
    return str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Under CI a skipped test fails: a missing editor, npm or Neovim 0.11 must not turn a
    suite into a row of skips that still reads as green."""
    outcome = yield
    report = outcome.get_result()
    if running_in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, where every suite must run: {_skip_reason(report.longrepr)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """The same for a whole module that skips itself (no npm, no Neovim, no pynvim)."""
    outcome = yield
    report = outcome.get_result()
    if running_in_ci() and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, where every suite must run: {_skip_reason(report.longrepr)}"


# Clients and CLI commands under test get a daemon of their own, as before the shared
# daemon; tests that want the shared one take the `shared_env` fixture.
os.environ.setdefault("CONTEXTD_SHARED", "0")
# No test reads the user settings file of whoever runs the suite; tests that want one write it here.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="contextd-config-")
# Nor the agents' folders: a daemon follows where these variables point (tests that move a
# HOME mean the agents' folders under it; tests that want a variable set it themselves).
for _variable, _ in (pair for pairs in AGENT_HOMES.values() for pair in pairs):
    os.environ.pop(_variable, None)


@pytest.fixture
def shared_env() -> Iterator[dict[str, str]]:
    """The environment of a shared daemon of the test's own (see tests/shared_daemon.py)."""
    with shared_environment() as env:
        yield env


@pytest_asyncio.fixture
async def shared_clients(tmp_path: Path, shared_env: dict[str, str]) -> AsyncIterator[Callable[..., Any]]:
    """`await shared_clients(workspace)`: a Python client of the test's shared daemon, which
    compacts small sessions (its own settings file); all are closed and the daemon stopped."""
    data_dir = tmp_path / "data"
    settings = tmp_path / "daemon-settings.json"
    settings.write_text(json.dumps({"compaction": {"reserveTokens": 2_000, "keepRecentTokens": 3_000}}))
    clients: list[ContextdClient] = []

    async def start(workspace: Path, **options: Any) -> ContextdClient:
        """`options`: more of ContextdClient.spawn's (hooks such as `before_navigate`)."""
        workspace.mkdir(parents=True, exist_ok=True)
        client = await ContextdClient.spawn(
            data_dir=data_dir, workspace=workspace, env=shared_env,
            command=shared_command(data_dir, "--settings", str(settings)), **options,
        )
        clients.append(client)
        return client

    yield start
    pid = (await clients[0].daemon_status())["pid"] if clients else None
    for client in clients:
        await client.close()
    if pid is not None:
        stop_daemon(pid)

NOTIFICATIONS = (
    "contextd/tokenUsage",
    "contextd/sessionChanged",
    "contextd/compactionStarted",
    "contextd/compactionFinished",
    "contextd/idleTimer",
)


def plain_converter():
    """Keep results and notification params as the JSON the daemon sent (pygls' default
    turns them into namedtuples)."""
    converter = default_converter()
    for message_type in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(message_type, lambda obj, cls: cls(**obj))
    return converter


class Daemon:
    """A running `contextd serve` and the client talking to it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.client: LanguageClient | None = None
        self.notifications: list[tuple[str, dict[str, Any]]] = []
        self._arrived = asyncio.Event()

    def _make_client(self) -> LanguageClient:
        client = LanguageClient(converter_factory=plain_converter)
        register_lsp_features(client)
        for method in NOTIFICATIONS:
            client.feature(method)(self._recorder(method))
        return client

    def _recorder(self, method: str) -> Callable[[Any], None]:
        def record(params: Any) -> None:
            self.notifications.append((method, params))
            self._arrived.set()

        return record

    async def start(
        self,
        settings: dict[str, Any] | None = None,
        capabilities: lsp.ClientCapabilities | None = None,
        env: dict[str, str] | None = None,
        pulled_settings: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`pulled_settings`: what this client answers to `workspace/configuration`."""
        config = ClientServerConfig(
            server_command=[sys.executable, "-m", "contextd", "--data-dir", str(self.data_dir), "serve"],
            client_factory=self._make_client,
            server_env=env,
        )
        self.client = await config.start()
        if pulled_settings is not None:
            self.client.set_configuration(pulled_settings, section="contextd")
        result = await self.client.initialize_session(
            lsp.InitializeParams(
                capabilities=capabilities or lsp.ClientCapabilities(),
                initialization_options=settings or {},
                workspace_folders=[lsp.WorkspaceFolder(uri="file:///tmp/contextd-ws", name="ws")],
            )
        )
        return result

    async def stop(self) -> None:
        if self.client is not None:
            try:
                await asyncio.wait_for(self.client.shutdown_session(), 10)
            except Exception:  # noqa: BLE001 -- a daemon that will not shut down is stopped
                await self.client.stop()
            self.client = None
            # pygls leaves a failed task behind when the server exits ("Task exception was
            # never retrieved"): collected here, not inside a later test's ast.parse, where
            # CPython 3.11.7 formats its traceback with a nested parse and fails the outer
            # one ("AST constructor recursion depth mismatch").
            gc.collect()

    async def request(self, method: str, params: Any = None) -> Any:
        assert self.client is not None
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), 30)

    async def error_of(self, method: str, params: Any = None) -> JsonRpcException:
        """The error a request must fail with; a success fails the test."""
        try:
            result = await self.request(method, params)
        except JsonRpcException as error:
            return error
        raise AssertionError(f"{method} should have failed but returned {result!r}")

    def notify(self, method: str, params: Any) -> None:
        assert self.client is not None
        self.client.protocol.notify(method, params)

    def received(self, method: str, **match: Any) -> list[dict[str, Any]]:
        return [
            params
            for name, params in self.notifications
            if name == method and all(params.get(k) == v for k, v in match.items())
        ]

    async def wait_for(
        self, method: str, timeout: float = 10, **match: Any
    ) -> dict[str, Any]:
        """The first notification of `method` (since the start) whose fields equal `match`."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            found = self.received(method, **match)
            if found:
                return found[0]
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"no {method} matching {match} within {timeout}s")
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                pass

    async def open_session(self, **params: Any) -> dict[str, Any]:
        return await self.request("contextd/session/open", params)


@pytest_asyncio.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    running = Daemon(tmp_path / "data")
    await running.start()
    yield running
    await running.stop()


@pytest_asyncio.fixture
async def make_daemon(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Start daemons with chosen settings or capabilities; all are stopped afterwards."""
    started: list[Daemon] = []

    async def make(data_dir: Path | None = None, **start: Any) -> Daemon:
        running = Daemon(data_dir or tmp_path / "data")
        await running.start(**start)
        started.append(running)
        return running

    yield make
    for running in started:
        await running.stop()
