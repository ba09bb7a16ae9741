"""Importers of other coding agents' session files: Claude Code, Codex CLI and pi.

Each importer is a pure function from the file's lines to an `ImportedSession`: contextd
entries (ids kept from the source where it has them), the leaf to resume at, and a report
of every line that was not imported as it stood. `save` writes one as a contextd session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from contextd.importers import claude_code, codex, pi
from contextd.importers.common import ImportedSession, Problem
from contextd.importers.save import save

IMPORTERS: dict[str, Callable[[Iterable[str]], ImportedSession]] = {
    claude_code.SOURCE: claude_code.parse,
    codex.SOURCE: codex.parse,
    pi.SOURCE: pi.parse,
}

__all__ = ["IMPORTERS", "ImportedSession", "Problem", "save"]
