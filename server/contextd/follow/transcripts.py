"""Where each agent keeps its transcripts, and a scan of them that only stats files.

A directory is listed again only when its own mtime changed (a file or folder was added or
removed); the files found are stat'ed on every scan. Nothing is read here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from contextd.model import FollowedAgent

DEFAULT_ROOTS: dict[FollowedAgent, str] = {
    "claude-code": "~/.claude/projects",
    "codex": "~/.codex/sessions",
    "pi": "~/.pi/agent/sessions",
}
DEPTH: dict[FollowedAgent, int] = {"claude-code": 1, "codex": 3, "pi": 1}
"""How many folders deep below the root transcripts lie: Claude Code and pi keep one folder
per working directory, Codex one per day (YYYY/MM/DD). Claude Code's subagent transcripts,
deeper down, are not conversations of their own."""


def root_of(agent: FollowedAgent, overrides: dict[FollowedAgent, str]) -> Path:
    return Path(os.path.expanduser(overrides.get(agent, DEFAULT_ROOTS[agent])))


FileStamp = tuple[int, int]
"""(size, mtime in ns): what tells that a file changed."""


@dataclass
class _Listing:
    mtime_ns: int
    folders: list[str]
    transcripts: list[str]


@dataclass
class TranscriptScan:
    """The transcripts under one agent's root, kept current from one scan to the next."""

    agent: FollowedAgent
    root: Path
    _listings: dict[str, _Listing] = field(default_factory=dict)

    def scan(self) -> dict[str, FileStamp]:
        """Every transcript file with its stamp."""
        found: dict[str, FileStamp] = {}
        self._walk(str(self.root), DEPTH[self.agent], found)
        return found

    def _walk(self, folder: str, depth: int, found: dict[str, FileStamp]) -> None:
        try:
            mtime_ns = os.stat(folder).st_mtime_ns
        except OSError:
            self._listings.pop(folder, None)
            return
        listing = self._listings.get(folder)
        if listing is None or listing.mtime_ns != mtime_ns:
            listing = self._list(folder, mtime_ns)
            self._listings[folder] = listing
        for path in listing.transcripts:
            try:
                stat = os.stat(path)
            except OSError:
                continue
            found[path] = (stat.st_size, stat.st_mtime_ns)
        if depth > 0:
            for child in listing.folders:
                self._walk(child, depth - 1, found)

    @staticmethod
    def _list(folder: str, mtime_ns: int) -> _Listing:
        folders, transcripts = [], []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.name.endswith(".jsonl") and entry.is_file():
                        transcripts.append(entry.path)
        except OSError:
            pass
        return _Listing(mtime_ns, sorted(folders), sorted(transcripts))
