"""Where each followed agent compacts its own session: Claude Code, Codex and pi decide it
themselves, by their own rules and their user's configuration, and contextd never compacts
a mirror. Pure knowledge: the configuration comes in as the texts of the agent's files and
its environment (session/agent_settings.py reads them); nothing here touches a file.

The rules, from each agent's code (versions: Claude Code 2.1, Codex 0.169, pi 0.73):

- **Claude Code** compacts once the context reaches its effective window — the model's
  window (lowered by `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, at least 100k) minus the smaller
  of the model's output limit and 20,000 kept for the summary — minus a 13,000-token buffer
  (83.5% of a 200k window). `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` (0–100] lowers it to that
  percent of the effective window, never raises it. `autoCompactEnabled: false` (its
  `/config`, kept in `~/.claude.json`, or a settings file) or `DISABLE_AUTO_COMPACT` /
  `DISABLE_COMPACT` turn it off. Variables come from its environment, overlaid by the `env`
  of its settings files (user, project, local: the later wins).
- **Codex** compacts at `model_auto_compact_token_limit` of `$CODEX_HOME/config.toml`,
  capped at 90% of the model's window, which is also the default. The window Codex records
  in its transcript is the usable 95% of the model's (`model_context_window` in the config
  sets the whole). Its other triggers (`model_auto_compact_token_limit_scope`,
  `model_post_turn_compact_threshold_percent`) are named when set, not computed.
- **pi** compacts when the context exceeds the window minus `compaction.reserveTokens`
  (16,384 by default) of its `settings.json` (`$PI_CODING_AGENT_DIR`, default
  `~/.pi/agent`, overlaid by the project's `.pi/settings.json`); `compaction.enabled: false`
  turns it off.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CLAUDE_SUMMARY_OUTPUT = 20_000
"""Claude Code keeps this much of the window (or the model's output limit, if smaller) for
the summary it writes when it compacts."""
CLAUDE_BUFFER = 13_000
"""Claude Code compacts this far below its effective window."""
CLAUDE_WINDOW_MINIMUM = 100_000
"""The smallest window `CLAUDE_CODE_AUTO_COMPACT_WINDOW` sets (a smaller one reads as this)."""
CODEX_LIMIT_PERCENT = 90
"""Codex compacts at 90% of the model's window at most."""
CODEX_USABLE_PERCENT = 95
"""The part of the model's window Codex records as its window (`model_context_window`)."""
CODEX_OTHER_TRIGGERS = {
    "model_auto_compact_token_limit_scope": "changes what Codex measures against its limit",
    "model_post_turn_compact_threshold_percent": "also compacts after a turn past that percent",
}
"""Codex 0.169's other compaction settings, whose effect its configuration names only."""
PI_RESERVE_TOKENS = 16_384
"""pi's default `compaction.reserveTokens`."""

CLAUDE_PERCENT_VARIABLE = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"
CLAUDE_WINDOW_VARIABLE = "CLAUDE_CODE_AUTO_COMPACT_WINDOW"
CLAUDE_OFF_VARIABLES = ("DISABLE_AUTO_COMPACT", "DISABLE_COMPACT")
CLAUDE_RULE_VARIABLES = (CLAUDE_PERCENT_VARIABLE, CLAUDE_WINDOW_VARIABLE, *CLAUDE_OFF_VARIABLES)
FOLDER_VARIABLES = {"claude-code": ("HOME", "CLAUDE_CONFIG_DIR"), "codex": ("HOME", "CODEX_HOME"), "pi": ("HOME", "PI_CODING_AGENT_DIR")}
"""The variables session/agent_settings.py finds each agent's configuration files by."""
AGENT_VARIABLES: dict[str, tuple[str, ...]] = {
    "claude-code": (*FOLDER_VARIABLES["claude-code"], *CLAUDE_RULE_VARIABLES),
    "codex": FOLDER_VARIABLES["codex"],
    "pi": FOLDER_VARIABLES["pi"],
}
"""Every variable of an agent's environment its compaction point is worked out from: all
that an agent's hook reports of its environment (never the rest: its keys stay with it)."""


@dataclass(frozen=True)
class ConfigFile:
    """One file an agent reads its configuration from, in the order the agent applies them
    (a later file's settings win)."""

    where: str
    """How the user knows it: `~/.claude/settings.json`."""
    text: str | None
    """None: there is no such file, or it could not be read (`problem` says why)."""
    problem: str | None = None
    usual: bool = False
    """The file a user sets the agent's options in (`~/.claude/settings.json`): the one named
    when none is found."""


@dataclass(frozen=True)
class ModelWindow:
    """The mirror's model, as contextd has it."""

    window: int
    """The window contextd shows the figure against."""
    max_output_tokens: int
    recorded: bool = False
    """`window` is the one the agent recorded in its transcript (Codex records its usable part)."""


@dataclass(frozen=True)
class AgentCompactionPoint:
    """Where the agent compacts its session, and how contextd worked it out."""

    enabled: bool
    tokens: int | None
    """None when the agent does not compact on its own."""
    basis: str
    """The rule, the settings it took from where, the defaults it assumed, the files it
    could not read: one sentence a user can check."""

    def body(self, window: int) -> dict[str, Any]:
        """`agentCompaction` of a mirror's tokenUsage (protocol.md)."""
        percent = round(100 * self.tokens / window, 1) if self.tokens is not None else None
        return {"enabled": self.enabled, "tokens": self.tokens, "percent": percent, "basis": self.basis}


@dataclass(frozen=True)
class Found:
    value: Any
    where: str


@dataclass
class Settings:
    """An agent's configuration files as read: the tables of those that could be, in the
    agent's order, and what became of the others."""

    tables: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    """(where, why) of each file that is there but could not be read."""
    absent: list[ConfigFile] = field(default_factory=list)

    def latest(self, *path: str) -> Found | None:
        """The value at `path` in the last file that sets it."""
        for where, table in reversed(self.tables):
            value = _lookup(table, path)
            if value is not None:
                return Found(value, where)
        return None

    def notes(self) -> str:
        """"; ~/.codex/config.toml not found" and the like: what the point could not rest on.
        A damaged file is named with why; missing ones, which are usual, only counted."""
        parts = [f"{where} could not be read ({why}), so its settings were not used" for where, why in self.unreadable]
        if self.absent:
            parts.append(self._absent_note())
        return "".join(f"; {part}" for part in parts)

    def _absent_note(self) -> str:
        named = next((file for file in self.absent if file.usual), self.absent[0]).where
        more = f" and {len(self.absent) - 1} more" if len(self.absent) > 1 else ""
        if self.tables or self.unreadable:
            return f"{named}{more} not found"
        return f"no settings file found (looked in {named}{more})"


def agent_compaction_point(
    agent: str, files: Sequence[ConfigFile], env: Mapping[str, str], model: ModelWindow,
    env_where: str = "the environment",
) -> AgentCompactionPoint:
    """Where `agent` compacts a session of `model`, given its configuration files (in the
    order it applies them) and its environment (`env_where` says whose, in the basis)."""
    settings = _read(files)
    if agent == "claude-code":
        return _claude_code(settings, env, env_where, model)
    if agent == "codex":
        return _codex(settings, model)
    if agent == "pi":
        return _pi(settings, model)
    raise ValueError(f"no compaction rule for agent {agent!r}")


# --- reading the files -------------------------------------------------------------------


def _read(files: Sequence[ConfigFile]) -> Settings:
    settings = Settings()
    for file in files:
        if file.problem is not None:
            settings.unreadable.append((file.where, file.problem))
            continue
        if file.text is None:
            settings.absent.append(file)
            continue
        try:
            table = tomllib.loads(file.text) if file.where.endswith(".toml") else json.loads(file.text)
        except ValueError as error:  # tomllib.TOMLDecodeError is one
            settings.unreadable.append((file.where, _first_line(error)))
            continue
        if isinstance(table, dict):
            settings.tables.append((file.where, table))
        else:
            settings.unreadable.append((file.where, "not a table of settings"))
    return settings


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _lookup(table: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = table
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _token_setting(settings: Settings, name: str, *path: str) -> tuple[int | None, str]:
    """A token count the agent takes from its files (a positive whole number), and how it
    reads in the basis."""
    found = settings.latest(*path)
    if found is None:
        return None, f"{name} not set (default assumed)"
    value = found.value
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None, f"{name} = {json.dumps(value)} in {found.where} is not a positive whole number (default assumed)"
    return value, f"{name} = {value} in {found.where}"


def _tokens(tokens: int) -> str:
    return f"{tokens:,}"


# --- Claude Code --------------------------------------------------------------------------


def _claude_variables(settings: Settings, env: Mapping[str, str], env_where: str) -> dict[str, Found]:
    """The variables of its rule Claude Code sees: its environment, overlaid by the `env` of
    each settings file."""
    seen = {name: Found(env[name], env_where) for name in CLAUDE_RULE_VARIABLES if name in env}
    for where, table in settings.tables:
        overlay = table.get("env")
        if isinstance(overlay, Mapping):
            seen.update({name: Found(str(value), f"{where} (env)") for name, value in overlay.items()})
    return seen


def _claude_code(settings: Settings, env: Mapping[str, str], env_where: str, model: ModelWindow) -> AgentCompactionPoint:
    variables = _claude_variables(settings, env, env_where)
    off = _claude_switched_off(settings.latest("autoCompactEnabled"), variables)
    if off:
        return AgentCompactionPoint(False, None, f"{off}: Claude Code does not compact on its own (/compact still does){settings.notes()}")
    window, window_note = _claude_window(model.window, variables.get(CLAUDE_WINDOW_VARIABLE))
    effective = window - min(model.max_output_tokens, CLAUDE_SUMMARY_OUTPUT)
    default = effective - CLAUDE_BUFFER
    rule = (
        f"Claude Code's rule: its effective window ({_tokens(window)} − {_tokens(window - effective)} kept for the summary)"
        f" − {_tokens(CLAUDE_BUFFER)}{window_note}"
    )
    percent, percent_note = _claude_percent(variables.get(CLAUDE_PERCENT_VARIABLE))
    tokens = default if percent is None else min(math.floor(effective * percent / 100), default)
    if percent is not None:
        percent_note += f", which lowers it to {percent:g}% of the effective window" if tokens < default else ", which cannot raise it"
    return AgentCompactionPoint(True, tokens, f"{rule}; {percent_note}{settings.notes()}")


def _claude_switched_off(enabled: Found | None, variables: Mapping[str, Found]) -> str | None:
    for name in CLAUDE_OFF_VARIABLES:
        found = variables.get(name)
        if found is not None and _truthy(found.value):
            return f"{name} is set in {found.where}"
    if enabled is not None and enabled.value is False:
        return f"autoCompactEnabled is false in {enabled.where}"
    return None


def _truthy(value: str) -> bool:
    """As Claude Code reads a switch variable: set to anything but an explicit no."""
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def _claude_window(model_window: int, found: Found | None) -> tuple[int, str]:
    """The window Claude Code compacts within: the model's, or `CLAUDE_CODE_AUTO_COMPACT_WINDOW`
    ("200k", "1m", 150000) where that is smaller; one it cannot read is ignored."""
    if found is None:
        return model_window, ""
    tokens = _window_tokens(found.value)
    if tokens is None:
        return model_window, f" ({CLAUDE_WINDOW_VARIABLE} = {found.value!r} in {found.where} is not a size, so ignored)"
    return min(model_window, tokens), f" ({CLAUDE_WINDOW_VARIABLE} = {found.value} in {found.where})"


def _window_tokens(text: str) -> int | None:
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    try:
        tokens = float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        return None
    if not math.isfinite(tokens) or tokens < 1:
        return None
    return max(round(tokens), CLAUDE_WINDOW_MINIMUM)


def _claude_percent(found: Found | None) -> tuple[float | None, str]:
    if found is None:
        return None, f"{CLAUDE_PERCENT_VARIABLE} not set (default assumed)"
    try:
        percent = float(found.value)
    except ValueError:
        percent = math.nan
    if not 0 < percent <= 100:
        return None, f"{CLAUDE_PERCENT_VARIABLE} = {found.value!r} in {found.where} is not a percent in (0, 100], so ignored"
    return percent, f"{CLAUDE_PERCENT_VARIABLE} = {found.value} in {found.where}"


# --- Codex --------------------------------------------------------------------------------


def _codex(settings: Settings, model: ModelWindow) -> AgentCompactionPoint:
    configured_window, _ = _token_setting(settings, "model_context_window", "model_context_window")
    if configured_window is not None:
        full, whence = configured_window, "model_context_window in the config"
    elif model.recorded:
        full = model.window * 100 // CODEX_USABLE_PERCENT
        whence = f"its transcript records the usable {CODEX_USABLE_PERCENT}%, {_tokens(model.window)}"
    else:
        full, whence = model.window, "the model's"
    cap = full * CODEX_LIMIT_PERCENT // 100
    limit, configured = _token_setting(settings, "model_auto_compact_token_limit", "model_auto_compact_token_limit")
    tokens = cap if limit is None else min(limit, cap)
    rule = f"Codex's rule: model_auto_compact_token_limit, at most {CODEX_LIMIT_PERCENT}% of the model's window ({_tokens(full)}: {whence})"
    return AgentCompactionPoint(True, tokens, f"{rule}; {configured}{_codex_unaccounted(settings)}{settings.notes()}")


def _codex_unaccounted(settings: Settings) -> str:
    """Codex settings that move its point in ways this rule does not follow: said, not guessed."""
    notes = ""
    for key, effect in CODEX_OTHER_TRIGGERS.items():
        found = settings.latest(key)
        if found is not None:
            notes += f"; {key} = {json.dumps(found.value)} in {found.where} {effect}, which this point leaves out"
    return notes


# --- pi -----------------------------------------------------------------------------------


def _pi(settings: Settings, model: ModelWindow) -> AgentCompactionPoint:
    enabled = settings.latest("compaction", "enabled")
    if enabled is not None and enabled.value in (False, 0, ""):  # pi tests it for truth
        return AgentCompactionPoint(False, None, f"compaction.enabled is false in {enabled.where}: pi does not compact on its own{settings.notes()}")
    reserve, configured = _token_setting(settings, "compaction.reserveTokens", "compaction", "reserveTokens")
    reserved = reserve if reserve is not None else PI_RESERVE_TOKENS
    rule = f"pi's rule: the window ({_tokens(model.window)}) − compaction.reserveTokens ({_tokens(reserved)})"
    return AgentCompactionPoint(True, max(model.window - reserved, 0), f"{rule}; {configured}{settings.notes()}")
