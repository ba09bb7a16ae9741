"""The Python client against a real `contextd serve` child, over real stdio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from contextd_client import ContextdClient


SETTINGS = {"compaction": {"keepRecentTokens": 2000}}
"""Default settings but for a short kept tail, so a test conversation has something to compact."""


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[ContextdClient]:
    async with await ContextdClient.spawn(
        data_dir=tmp_path / "data", workspace=tmp_path, settings=SETTINGS
    ) as running:
        yield running
