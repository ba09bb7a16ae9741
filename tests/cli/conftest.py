"""Fixtures of the CLI tests: a data directory and a conversation file to replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.client.helpers import long_conversation


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    """A conversation of 14 tool-reading turns: enough to compact an 8,000-token window."""
    path = tmp_path / "conversation.jsonl"
    path.write_text("".join(json.dumps(message) + "\n" for message in long_conversation(14)))
    return path
