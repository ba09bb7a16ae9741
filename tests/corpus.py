"""The real agent transcripts of tests/fixtures/real (its README says where each comes from),
for the tests and the benchmarks: the folder, its MANIFEST by file name, and the files' text.

Plain standard library, so a benchmark run as a script imports it too (with the repository
root on its path)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
MANIFEST: dict[str, dict[str, Any]] = {item["file"]: item for item in json.loads((REAL / "MANIFEST.json").read_text())}
"""Each transcript's MANIFEST item (agent, repository, commit, path, ...) by its file name."""
NAMES = sorted(MANIFEST)
"""The transcripts' file names (`<name>.jsonl.gz`), sorted."""


def agent_of(name: str) -> str:
    """The agent that wrote the transcript: claude-code, codex or pi."""
    return str(MANIFEST[name]["agent"])


def read_bytes(name: str) -> bytes:
    """The transcript's bytes as the agent wrote them (uncompressed)."""
    return gzip.decompress((REAL / name).read_bytes())


def read_text(name: str) -> str:
    return read_bytes(name).decode("utf-8")
