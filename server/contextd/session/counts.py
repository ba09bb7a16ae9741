"""Each entry's token count, kept beside its session file so a load does not recount.

Counting every entry is most of a session's load (tiktoken over all its text). Entries never
change once written, so their counts are kept in `<id>.jsonl.counts` when the session leaves
memory, for the encoding it was counted with. They are used only for the very file they were
taken from (same size and modification time: an append-only file that grew, was repaired or
copied is recounted), and only by the same counting (the counting code's and tiktoken's
versions): a count that could be stale is never used, it is counted again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from functools import cache
from importlib.metadata import version
from pathlib import Path

from contextd.compaction import context
from contextd.store import write_private
from contextd.tokens import counting, images

log = logging.getLogger(__name__)


@cache
def counting_key() -> str:
    """What the counts depend on: the counting code (with the images' and the messages it
    derives from entries) and tiktoken's version."""
    digest = hashlib.sha256(version("tiktoken").encode())
    for module in (counting, images, context):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:16]


def counts_path(session_path: Path) -> Path:
    return session_path.with_name(session_path.name + ".counts")


def _file_stamp(session_path: Path) -> list[int]:
    stat = os.stat(session_path)
    return [stat.st_size, stat.st_mtime_ns]


def read_counts(session_path: Path, encoding: str) -> dict[str, int]:
    """The counts kept for this very file and encoding; {} when there are none that fit."""
    try:
        with open(os.open(counts_path(session_path), os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
            kept = json.load(handle)
        fits = (
            kept["key"] == counting_key()
            and kept["encoding"] == encoding
            and kept["file"] == _file_stamp(session_path)
        )
        tokens = kept["tokens"] if fits else {}
        return {entry_id: count for entry_id, count in tokens.items() if type(count) is int}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def keep_counts(session_path: Path, encoding: str, tokens: dict[str, int]) -> None:
    """Keep `tokens` for the file as it is now; a failure only costs the next load a count."""
    try:
        kept = {"key": counting_key(), "encoding": encoding, "file": _file_stamp(session_path), "tokens": tokens}
        write_private(counts_path(session_path), json.dumps(kept, separators=(",", ":")).encode())
    except OSError as error:
        log.info("token counts of %s not kept (%s): its next load counts them", session_path.name, error.strerror)
