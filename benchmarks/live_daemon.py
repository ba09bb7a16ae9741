"""A real `contextd serve` child over stdio, in a throwaway data directory, for benchmarks."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from contextd.rpc.listen import socket_in_use
from contextd_client import ContextdClient

BENCH_MODEL = "bench-model"
APPEND_BATCH = 1000
"""Messages per append while filling a session; the daemon takes at most 10,000."""


@asynccontextmanager
async def running_daemon(settings: dict[str, Any]) -> AsyncIterator[ContextdClient]:
    """The daemon with `settings` as its initializationOptions, stopped and removed after."""
    with tempfile.TemporaryDirectory(prefix="contextd-bench-") as root:
        workspace = Path(root) / "workspace"
        workspace.mkdir()
        client = await ContextdClient.spawn(
            data_dir=Path(root) / "data", settings=settings, workspace=workspace
        )
        try:
            yield client
        finally:
            await client.close()


@asynccontextmanager
async def shared_daemon(settings: dict[str, Any], clients: int) -> AsyncIterator[list[ContextdClient]]:
    """A daemon serving a Unix socket, as the shared one does (its settings from a file),
    with `clients` connections in one workspace: each hears the others' activity."""
    with tempfile.TemporaryDirectory(prefix="contextd-bench-") as root:
        workspace, socket, settings_file = Path(root) / "workspace", Path(root) / "daemon.sock", Path(root) / "settings.json"
        workspace.mkdir()
        settings_file.write_text(json.dumps(settings))
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "contextd", "--data-dir", str(Path(root) / "data"), "--log-level", "WARNING",
            "serve", "--socket", str(socket), "--settings", str(settings_file),
        )
        try:
            while not socket_in_use(socket):
                await asyncio.sleep(0.05)
            async with AsyncExitStack() as stack:
                connected = []
                for _ in range(clients):
                    client = await ContextdClient.connect_unix(socket, workspace=workspace)
                    stack.push_async_callback(client.close)
                    connected.append(client)
                yield connected
        finally:
            process.terminate()
            await process.wait()


def model_settings(context_window: int, **compaction: Any) -> dict[str, Any]:
    """Settings that make `bench-model` (o200k_base) the default, with this window."""
    return {
        "defaultModel": BENCH_MODEL,
        "models": {
            BENCH_MODEL: {
                "contextWindow": context_window,
                "maxOutputTokens": 8192,
                "encoding": "o200k_base",
            }
        },
        "compaction": compaction,
    }


async def fill(client: ContextdClient, session_id: str, messages: list[dict[str, Any]]) -> None:
    """Append `messages` in large batches (a tool call and its result may straddle two)."""
    for start in range(0, len(messages), APPEND_BATCH):
        await client.append(session_id, messages[start : start + APPEND_BATCH])
