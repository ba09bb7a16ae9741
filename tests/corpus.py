"""The real agent transcripts of tests/fixtures/real (its README says where each comes from),
for the tests and the benchmarks: the folder, its MANIFEST by file name, and the files' text.

Plain standard library, so a benchmark run as a script imports it too (with the repository
root on its path)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
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


# --- sessions in pi's format, of any size (pi-10000: bench_load.py, bench_follow.py) ---


def corpus_entries() -> list[dict[str, Any]]:
    """Every entry (not the headers) of the pi transcripts of the corpus, in order."""
    entries = []
    for name in NAMES:
        if agent_of(name) == "pi":
            lines = read_text(name).splitlines()
            entries += [entry for entry in map(json.loads, lines) if entry.get("type") != "session"]
    return entries


def renamed_calls(value: Any, suffix: str) -> Any:
    """`value` with its tool call ids made unique to one repetition of the corpus."""
    if isinstance(value, dict):
        call_id = "id" if value.get("type") == "toolCall" else "toolCallId"
        return {key: f"{item}-{suffix}" if key == call_id else renamed_calls(item, suffix) for key, item in value.items()}
    if isinstance(value, list):
        return [renamed_calls(item, suffix) for item in value]
    return value


def pi_lines(size: int) -> Iterator[str]:
    """A pi session file of `size` entries, line by line."""
    yield json.dumps({"type": "session", "version": 3, "id": f"bench-{size}", "timestamp": "2026-11-25T00:00:00.000Z", "cwd": "/bench"})
    corpus = corpus_entries()
    parent = None
    for number in range(size):
        repetition, index = divmod(number, len(corpus))
        entry = dict(corpus[index], id=f"{number:08x}", parentId=parent)
        if "message" in entry:
            entry["message"] = renamed_calls(entry["message"], str(repetition))
        parent = entry["id"]
        yield json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
