"""Importers of other coding agents' session files: Claude Code, Codex CLI and pi.

Each importer reads a file's lines, one at a time (`STREAMING_IMPORTERS`; a followed file is
fed as it grows), into an `ImportedSession`: contextd entries (ids kept from the source
where it has them), the leaf to resume at, and a report of every line that was not imported
as it stood. `IMPORTERS` import a whole file. `save` writes one as a contextd session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from contextd.importers import claude_code, codex, pi
from contextd.importers.common import ImportedSession, Problem, StreamingImporter
from contextd.importers.save import save

IMPORTERS: dict[str, Callable[[Iterable[str]], ImportedSession]] = {
    claude_code.SOURCE: claude_code.parse,
    codex.SOURCE: codex.parse,
    pi.SOURCE: pi.parse,
}

STREAMING_IMPORTERS: dict[str, type[StreamingImporter]] = {
    claude_code.SOURCE: claude_code.ClaudeCodeImporter,
    codex.SOURCE: codex.CodexImporter,
    pi.SOURCE: pi.PiImporter,
}

__all__ = ["IMPORTERS", "STREAMING_IMPORTERS", "ImportedSession", "Problem", "StreamingImporter", "save"]
