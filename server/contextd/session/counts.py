"""Each entry's token count and the records of its cold entries, kept beside its session file
so a load neither recounts nor parses what it will not read.

Counting every entry is most of a session's load (tiktoken over all its text). Entries never
change once written, so their counts are kept in `<id>.jsonl.counts` when the session leaves
memory, for the encoding it was counted with. They are used only for the very file they were
taken from (same size and modification time: an append-only file that grew, was repaired or
copied is recounted), and only by the same counting (the counting code's and tiktoken's
versions): a count that could be stale is never used, it is counted again.

Beside them, the records of the message entries that were cold (`ColdMessageEntry`: outside
the live context) by their position in the file: the next load of the very same file takes
each such line as it is, found by its position and its id, instead of parsing it. And what
the walks of a load derive from the counts (`KeptFigures`: the calibration's evidence, the
unseen part), for the same counting. The file is a cache, never the truth: stale, damaged or
foreign, it is ignored and the file is parsed.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Container, Iterable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import cast

from pydantic import BaseModel, ValidationError

from contextd import model
from contextd.compaction import context
from contextd.model import ColdMessageEntry, ColdRecord, Entry, MessageEntry
from contextd.store import KnownLines, file_stamp, write_private
from contextd.tokens import calibration, context_size, counting, images, unseen

log = logging.getLogger(__name__)


@cache
def counting_key() -> str:
    """What the counts, records and figures depend on: the counting code (with the images' and
    the messages it derives from entries), the entries' records (model.py), the calibration's
    and the unseen part's code, and tiktoken's version."""
    digest = hashlib.sha256(version("tiktoken").encode())
    for module in (counting, images, context, model, calibration, unseen, context_size):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:16]


def counts_path(session_path: Path) -> Path:
    return session_path.with_name(session_path.name + ".counts")


class KeptFigures(BaseModel):
    """What a load derives from the counts by walking every node (the calibration's ledger,
    tokens/calibration.py) and the path (the unseen part, tokens/unseen.py), as the session
    had them at `leaf` when it left memory: taken only where the same leaf, root tokenizer
    and model resolutions (`resolved`) make the walks give the same."""

    leaf: str | None
    rootTokenizer: str
    resolved: dict[str, str]
    evidence: dict[str, tuple[int, int]]
    """Per tokenizer: reported and counted growth."""
    since: tuple[int | None, int, str] | None
    """The leaf's calibration state (`Since`)."""
    unseen: tuple[float, tuple[int, int] | None, bool] | None = None
    """The unseen part as learned at the leaf with a calibration factor: the factor, the
    evidence (prompt, counted) and whether its stretch is settled; None: not kept."""


class KeptFile(BaseModel):
    key: str
    encoding: str
    file: tuple[int, int]
    tokens: dict[str, int]
    cold: list[tuple[int, ColdRecord]] = []
    """The records of the cold message entries, each with its position among the entries."""
    figures: KeptFigures | None = None


@dataclass(frozen=True)
class Kept:
    """What the counts file keeps of one session file, as it was read (`file`: its size and
    modification time then)."""

    file: tuple[int, int]
    encoding: str
    tokens: dict[str, int]
    lines: KnownLines
    figures: KeptFigures | None = None

    def fits(self, stamp: tuple[int, int] | None) -> bool:
        """Whether this was kept for the file as it is (`stamp`: as it was read)."""
        return stamp == self.file

    def counts(self, encoding: str) -> dict[str, int]:
        return self.tokens if encoding == self.encoding else {}

    def figures_for(self, encoding: str) -> KeptFigures | None:
        return self.figures if encoding == self.encoding else None


NOTHING_KEPT = Kept((-1, -1), "", {}, KnownLines((-1, -1), {}))
"""What a load passes on when it read the counts file and none of it fits the session file:
checked, so not read again."""


def read_kept(session_path: Path) -> Kept | None:
    """What is kept beside the file, for the counting of this version; None when nothing fits
    (absent, damaged, another version's)."""
    try:
        with open(os.open(counts_path(session_path), os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
            kept = KeptFile.model_validate_json(handle.read())
    except (OSError, ValueError, ValidationError):
        return None
    if kept.key != counting_key():
        return None
    return Kept(kept.file, kept.encoding, kept.tokens, KnownLines(kept.file, dict(kept.cold)), kept.figures)


def read_counts(session_path: Path, encoding: str) -> dict[str, int]:
    """The counts kept for this very file (as it is now) and encoding; {} when there are none that fit."""
    kept = read_kept(session_path)
    try:
        return kept.counts(encoding) if kept is not None and kept.fits(file_stamp(session_path)) else {}
    except OSError:
        return {}


def cold_records(entries: Iterable[Entry], live: Container[str]) -> list[tuple[int, ColdRecord]]:
    """The record of each message entry outside `live`, with its position among `entries`."""
    records = []
    for position, entry in enumerate(entries):
        if entry.type == "message" and entry.id not in live:
            cold = entry if type(entry) is ColdMessageEntry else ColdMessageEntry(cast(MessageEntry, entry), b"")
            records.append((position, cast(ColdMessageEntry, cold).record()))
    return records


def keep_counts(
    session_path: Path, encoding: str, tokens: dict[str, int], cold: list[tuple[int, ColdRecord]],
    figures: KeptFigures | None = None,
) -> None:
    """Keep `tokens`, the `cold` records and the `figures` for the file as it is now; a
    failure only costs the next load a count, a parse and its walks."""
    try:
        kept = KeptFile(
            key=counting_key(), encoding=encoding, file=file_stamp(session_path), tokens=tokens, cold=cold, figures=figures
        )
        write_private(counts_path(session_path), kept.model_dump_json().encode())
    except OSError as error:
        log.info("token counts of %s not kept (%s): its next load counts them", session_path.name, error.strerror)
