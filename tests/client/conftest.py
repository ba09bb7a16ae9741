"""The Python client against a real `contextd serve` child, over real stdio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from contextd_client import ContextdClient

from tests.client.helpers import SETTINGS


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[ContextdClient]:
    async with await ContextdClient.spawn(
        data_dir=tmp_path / "data", workspace=tmp_path, settings=SETTINGS
    ) as running:
        yield running
