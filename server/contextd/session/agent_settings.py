"""Reads a followed agent's configuration — its files and the environment — for
compaction/agent_points.py, which works out where the agent compacts its mirror.

A file is read again only when its size or mtime changed: a mirror's figure is reported on
every change of its transcript, and Claude Code's `~/.claude.json` can be large.

The environment is the agent's own where its hook reported it for the mirror's transcript
(`contextd/follow/environment`: the agent may run with variables the shared daemon never
had); until then, and after a restart of the daemon (it is kept in memory only), the
daemon's stands in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextd.compaction.agent_points import AGENT_VARIABLES, ConfigFile, ModelWindow, agent_compaction_point

_texts: dict[Path, tuple[tuple[int, int], ConfigFile]] = {}
"""Each file read: its (size, mtime) then, and what was read."""

Stamp = tuple[int, int] | None
"""A file's (size, mtime), None where there is none."""
_points: dict[tuple[object, ...], tuple[list[Path], list[Stamp], dict[str, Any]]] = {}
"""What a point is worked out from (agent, workspace, model, whose environment and its
variables, the daemon's HOME the files are shown under) -> its files, their stamps then,
and the point: a new mirror's figure, and each later one, costs a stat of each file."""
POINTS_LIMIT = 10_000
"""Points kept (past that, the oldest goes)."""

_reported: dict[tuple[str, str], dict[str, str]] = {}
"""(agent, transcript path) -> the variables its hook last reported, oldest report first."""
REPORTED_LIMIT = 10_000
"""Transcripts whose agent's environment is kept (past that, the oldest report goes)."""
HOOK_ENVIRONMENT = "the agent's environment (its hook)"
DAEMON_ENVIRONMENT = "the daemon's environment"


def mirror_compaction_point(agent: str, workspace: str, model: ModelWindow, transcript: str | None = None) -> dict[str, Any]:
    """`agentCompaction` of a mirror's tokenUsage (protocol.md): `transcript` is the file
    the mirror follows, whose agent's hook may have reported its environment."""
    reported = _reported.get((agent, transcript)) if transcript is not None else None
    env, whose = (reported, HOOK_ENVIRONMENT) if reported is not None else (os.environ, DAEMON_ENVIRONMENT)
    inputs = (agent, workspace, model, whose, os.environ.get("HOME"), *(env.get(name) for name in AGENT_VARIABLES[agent]))
    known = _points.get(inputs)
    if known is not None and _stamps(known[0]) == known[1]:
        return dict(known[2])
    paths = config_paths(agent, workspace, env)
    stamps = _stamps(paths)  # before the files are read: a change while they are is read again
    files = [_config_file(path, usual=index == USUAL_FILE[agent]) for index, path in enumerate(paths)]
    point = agent_compaction_point(agent, files, env, model, whose).body(model.window)
    if stamps is not None and not any(file.problem for file in files):  # one that could not be read is tried again
        _points.pop(inputs, None)
        _points[inputs] = (paths, stamps, point)
        while len(_points) > POINTS_LIMIT:
            del _points[next(iter(_points))]
    return dict(point)


def _stamps(paths: list[Path]) -> list[Stamp] | None:
    """Each file's stamp; None if one could not be looked at (nothing is kept then)."""
    stamps: list[Stamp] = []
    for path in paths:
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            stamps.append(None)
        except OSError:
            return None
        else:
            stamps.append((stat.st_size, stat.st_mtime_ns))
    return stamps


def remember_agent_environment(agent: str, transcript: str, variables: Mapping[str, str]) -> set[str]:
    """What the agent's hook reported of its environment (only variables the point is worked
    out from, validated by the request): a variable it leaves out is one the agent has not
    set. Kept under the path as the hook gave it and as resolved, so a mirror followed
    through a symbolic link finds it too; those paths are returned."""
    paths = {os.path.normpath(transcript), os.path.realpath(transcript)}
    for path in paths:
        _reported.pop((agent, path), None)  # a new report is the newest
        _reported[(agent, path)] = dict(variables)
    while len(_reported) > REPORTED_LIMIT:
        del _reported[next(iter(_reported))]
    return paths


USUAL_FILE = {"claude-code": 1, "codex": 0, "pi": 0}
"""Which of `config_paths` the user sets the agent's options in: Claude Code's settings.json
(its `~/.claude.json` is mostly state), Codex's config.toml, pi's global settings.json."""


def config_paths(agent: str, workspace: str, env: Mapping[str, str]) -> list[Path]:
    """The files `agent` takes its settings from, in the order it applies them."""
    home = Path(env.get("HOME") or Path.home())
    project = Path(workspace)
    if agent == "claude-code":
        folder = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        global_config = folder / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else home / ".claude.json"
        return [global_config, folder / "settings.json", project / ".claude/settings.json", project / ".claude/settings.local.json"]
    if agent == "codex":
        return [Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml"]
    if agent == "pi":
        return [Path(env.get("PI_CODING_AGENT_DIR") or home / ".pi/agent") / "settings.json", project / ".pi/settings.json"]
    raise ValueError(f"no configuration files known for agent {agent!r}")


def _config_file(path: Path, *, usual: bool) -> ConfigFile:
    where = _shown(path)
    try:
        stat = path.stat()
    except FileNotFoundError:
        return ConfigFile(where, None, usual=usual)
    except OSError as error:
        return ConfigFile(where, None, problem=error.strerror or str(error), usual=usual)
    stamp = (stat.st_size, stat.st_mtime_ns)
    cached = _texts.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        read = ConfigFile(where, path.read_text(encoding="utf-8", errors="replace"), usual=usual)
    except OSError as error:
        read = ConfigFile(where, None, problem=error.strerror or str(error), usual=usual)
    _texts[path] = (stamp, read)
    return read


def _shown(path: Path) -> str:
    """`~/.claude/settings.json`: as the user knows the file."""
    home = os.path.expanduser("~")
    text = str(path)
    return "~" + text[len(home):] if text.startswith(home + os.sep) else text
