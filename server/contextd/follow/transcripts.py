"""Where each agent keeps its transcripts, and a scan of them that only stats files.

A directory is listed again only when its own mtime changed (a file or folder was added or
removed). A file written in the last hour is stat'ed on every scan; an older one (a
finished session, which an agent may still resume) on every tenth, so years of old
transcripts cost little. No transcript is read here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
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


AGENT_HOMES: dict[FollowedAgent, tuple[tuple[str, str], ...]] = {
    "claude-code": (("CLAUDE_CONFIG_DIR", "projects"),),
    "codex": (("CODEX_HOME", "sessions"),),
    "pi": (("PI_CODING_AGENT_SESSION_DIR", ""), ("PI_CODING_AGENT_DIR", "sessions")),
}
"""The environment variables each agent takes its transcripts' folder from, first set wins,
with the folder below it (read from the agents themselves: Claude Code 2.1.328 writes under
`$CLAUDE_CONFIG_DIR/projects`, Codex 0.169 under `$CODEX_HOME/sessions`, pi 0.73 under
`$PI_CODING_AGENT_SESSION_DIR`, else its settings' `sessionDir`, else
`$PI_CODING_AGENT_DIR/sessions`, `~` expanded)."""


def agent_root(agent: FollowedAgent, env: Mapping[str, str]) -> str:
    """Where `agent` keeps its transcripts in the environment `env`, as it decides itself."""
    homes = [(variable, below) for variable, below in AGENT_HOMES[agent] if env.get(variable, "").strip()]
    if agent == "pi" and not env.get("PI_CODING_AGENT_SESSION_DIR", "").strip():
        configured = pi_settings_session_dir(env)  # before $PI_CODING_AGENT_DIR/sessions, as pi reads it
        if configured is not None:
            return configured
    if homes:
        variable, below = homes[0]
        return os.path.join(os.path.expanduser(env[variable].strip()), below)
    return DEFAULT_ROOTS[agent]


def pi_settings_session_dir(env: Mapping[str, str]) -> str | None:
    """The `sessionDir` of pi's settings.json (in `$PI_CODING_AGENT_DIR`, else ~/.pi/agent),
    where pi 0.73 writes every session (flat, no folder per project), `~` expanded as pi
    does. A relative one names a folder inside each project pi runs in, which no one root
    holds: None then, as for a missing or unreadable file."""
    agent_dir = env.get("PI_CODING_AGENT_DIR", "").strip() or "~/.pi/agent"
    try:
        value = json.loads((Path(os.path.expanduser(agent_dir)) / "settings.json").read_bytes()).get("sessionDir")
    except (OSError, ValueError, AttributeError):  # AttributeError: not a JSON object
        return None
    if not isinstance(value, str) or not value:
        return None
    expanded = os.path.expanduser(value) if value == "~" or value.startswith("~/") else value
    return expanded if os.path.isabs(expanded) else None


def root_of(agent: FollowedAgent, overrides: dict[FollowedAgent, str], env: Mapping[str, str] = os.environ) -> Path:
    """The folder followed for `agent`: the settings' root, else the agent's own."""
    return Path(os.path.expanduser(overrides.get(agent) or agent_root(agent, env)))


FileStamp = tuple[int, int]
"""(size, mtime in ns): what tells that a file changed."""

RECENT_NS = 3600 * 10**9
"""A transcript written within this long is looked at on every scan."""
OLD_EVERY = 10
"""An older one on every OLD_EVERY-th scan."""


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
    _stamps: dict[str, FileStamp] = field(default_factory=dict)
    _count: int = 0

    def scan(self) -> dict[str, FileStamp]:
        """Every transcript file with its stamp."""
        found: dict[str, FileStamp] = {}
        self._count += 1
        recent_since = time.time_ns() - RECENT_NS
        look_at_old = self._count % OLD_EVERY == 1
        self._walk(str(self.root), DEPTH[self.agent], found, recent_since, look_at_old)
        self._stamps = found
        return found

    def _walk(
        self, folder: str, depth: int, found: dict[str, FileStamp], recent_since: int, look_at_old: bool
    ) -> None:
        try:
            mtime_ns = os.stat(folder).st_mtime_ns
        except (OSError, ValueError):  # ValueError: a name the system cannot take (NUL)
            self._listings.pop(folder, None)
            return
        listing = self._listings.get(folder)
        if listing is None or listing.mtime_ns != mtime_ns:
            listing = self._list(folder, mtime_ns)
            self._listings[folder] = listing
        for path in listing.transcripts:
            known = self._stamps.get(path)
            if known is not None and known[1] < recent_since and not look_at_old:
                found[path] = known
                continue
            try:
                stat = os.stat(path)
            except OSError:
                continue
            found[path] = (stat.st_size, stat.st_mtime_ns)
        if depth > 0:
            for child in listing.folders:
                self._walk(child, depth - 1, found, recent_since, look_at_old)

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
