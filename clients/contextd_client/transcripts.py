"""Reading an agent's transcript for `contextd import`: plain or gzip-compressed, and which
agent wrote it, told from the shape of its first records (never from its wording)."""

from __future__ import annotations

import gzip
import io
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

GZIP_MAGIC = b"\x1f\x8b"
RECORDS_LOOKED_AT = 50

CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
PI_TYPES = {"session", "message", "model_change", "thinking_level_change", "compaction", "branch_summary", "label"}
CLAUDE_CODE_TYPES = {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"}


def is_gzip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == GZIP_MAGIC


@contextmanager
def open_transcript(path: Path) -> Iterator[TextIO]:
    """The transcript's lines as text, whether the file is plain or gzip-compressed."""
    if is_gzip(path):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            yield handle
    else:
        with path.open(encoding="utf-8") as handle:
            yield handle


def agent_of_record(record: Any) -> str | None:
    """The agent whose transcript records look like this one, if any."""
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if isinstance(record.get("payload"), dict) and kind in CODEX_TYPES:
        return "codex"
    if "uuid" in record or "parentUuid" in record or "leafUuid" in record or (
        kind in CLAUDE_CODE_TYPES and "sessionId" in record
    ):
        return "claude-code"
    if kind in PI_TYPES and ("parentId" in record or ("version" in record and "cwd" in record)):
        return "pi"
    return None


def detect_agent(handle: io.TextIOBase | TextIO) -> str | None:
    """The agent most of the first records point to; None when none does."""
    votes: Counter[str] = Counter()
    for number, line in enumerate(handle):
        if number >= RECORDS_LOOKED_AT:
            break
        try:
            agent = agent_of_record(json.loads(line))
        except ValueError:
            continue
        if agent is not None:
            votes[agent] += 1
    return votes.most_common(1)[0][0] if votes else None
