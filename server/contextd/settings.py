"""Where a setting comes from, and which one wins.

Settings come in layers, each holding only the keys someone set explicitly (never a copy of
the defaults), lowest first:

    built-in < user file < start file (`--settings`) < run time < workspace < session

The user file is `$XDG_CONFIG_HOME/contextd/settings.json` (`contextd config set` writes it);
"run time" holds what `contextd/idle/configure` and `contextd/follow` change daemon-wide;
"workspace" is what the editors that have a workspace open answer to `workspace/configuration`
for it; a session's own choices (its model, its idle override) stand above them all.
Layers merge key by key: nested objects merge, a scalar or a list replaces.

Which layer a key may come from is part of the contract: an editor's workspace settings may
set how the sessions of that workspace are compacted, not where the daemon stores or reads
files, which models exist, or where a summarizer sends the conversation and with which key
(a cloned repository's `.vscode/settings.json` is not trusted with those): `OWNER_ONLY`.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contextd.model import MAX_CONTENT_DEPTH, Settings, too_deep_setting, unknown_setting_keys

Layer = dict[str, Any]

PER_CONNECTION_KEYS = ("defaultModel", "compaction.hookTimeoutSeconds")
"""Keys a connection sends for itself alone: the model its new sessions get, how long its hooks may take."""

OWNER_ONLY = (
    "storage", "follow", "models",
    "summarizer.baseUrl", "summarizer.apiKeyEnv", "summarizer.remoteEndpoint",
)
"""Keys (and groups) that only the user file and the daemon's own start settings set."""

OPEN_ENDED = ("models", "follow.roots")
"""Objects whose keys are names the user chooses (a model id, an agent), not setting names."""


def user_settings_path() -> Path:
    config_home = os.environ.get("XDG_CONFIG_HOME") or "~/.config"
    return Path(config_home).expanduser() / "contextd" / "settings.json"


def merged(layers: Iterable[Layer]) -> Layer:
    """The layers merged, later ones winning key by key."""
    result: Layer = {}
    for layer in layers:
        _merge_into(result, layer)
    return result


def _merge_into(target: Layer, layer: Layer) -> None:
    for key, value in layer.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge_into(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def leaves(layer: Layer, prefix: str = "") -> dict[str, Any]:
    """Every set value by its dotted key (`compaction.thresholdPercent`)."""
    found: dict[str, Any] = {}
    for key, value in layer.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            found.update(leaves(value, f"{dotted}."))
        else:
            found[dotted] = value
    return found


def resolve(layers: Iterable[Layer]) -> Settings:
    return Settings.model_validate(merged(layers))


def explicit_part(settings: Settings) -> Layer:
    """The keys a Settings object was given (not its defaults), as a layer."""
    return settings.model_dump(mode="json", by_alias=True, exclude_unset=True)


def covers(key: str, dotted: str) -> bool:
    """Whether `key` names `dotted` or a group holding it."""
    return dotted == key or dotted.startswith(f"{key}.")


def is_owner_only(dotted: str) -> bool:
    return any(covers(key, dotted) for key in OWNER_ONLY)


def is_per_connection(dotted: str) -> bool:
    return dotted in PER_CONNECTION_KEYS


def keep_keys(layer: Layer, keep: Callable[[str], bool]) -> Layer:
    """The layer with only the dotted keys `keep(dotted)` accepts."""
    result: Layer = {}
    for dotted, value in leaves(layer).items():
        if keep(dotted):
            set_key(result, dotted, value)
    return result


def set_key(layer: Layer, dotted: str, value: Any) -> None:
    *groups, name = dotted.split(".")
    holder = layer
    for group in groups:
        if not isinstance(holder.get(group), dict):
            holder[group] = {}
        holder = holder[group]
    holder[name] = value


def unset_key(layer: Layer, dotted: str) -> bool:
    """Remove a key (and the groups it leaves empty); whether it was there."""
    *groups, name = dotted.split(".")
    trail = [layer]
    for group in groups:
        child = trail[-1].get(group)
        if not isinstance(child, dict):
            return False
        trail.append(child)
    if name not in trail[-1]:
        return False
    del trail[-1][name]
    for holder, group in zip(reversed(trail[:-1]), reversed(groups), strict=True):
        if holder[group]:
            break
        del holder[group]
    return True


KNOWN_KEYS = tuple(
    key for key in leaves(Settings().model_dump(by_alias=True)) if not key.startswith(OPEN_ENDED)
) + OPEN_ENDED


def is_known(dotted: str) -> bool:
    return any(covers(key, dotted) or covers(dotted, key) for key in KNOWN_KEYS)


def suggestion(dotted: str) -> str | None:
    close = difflib.get_close_matches(dotted, KNOWN_KEYS, n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_keys(layer: Layer) -> list[str]:
    """Dotted keys no setting knows (typos), in the order they appear."""
    try:
        return unknown_setting_keys(Settings.model_validate(layer))
    except ValidationError:
        return [key for key in leaves(layer) if not is_known(key)]


def describe_unknown(dotted: str) -> str:
    close = suggestion(dotted)
    return f"unknown setting {dotted} ignored" + (f" (did you mean {close}?)" if close else "")


class SettingsFileError(Exception):
    """A settings file that cannot be used: unreadable, not JSON, or a bad value (named)."""


def read_layer_file(path: Path) -> Layer:
    """The explicit settings a file holds, checked; a missing file is an empty layer."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise SettingsFileError(f"{path}: {error.strerror or error}") from None
    return parse_layer(text, str(path))


def read_settings_option(path: str) -> Layer:
    """The settings of a `--settings FILE`, checked: here a missing file is an error too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise SettingsFileError(f"{path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise SettingsFileError(f"{path}: not a UTF-8 text file") from None
    return parse_layer(text, path)


def parse_layer(text: str, where: str) -> Layer:
    try:
        layer = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise SettingsFileError(f"{where} line {error.lineno}: not valid JSON ({error.msg})") from None
    if not isinstance(layer, dict):
        raise SettingsFileError(f"{where}: must hold a JSON object of settings")
    too_deep = too_deep_setting(layer)
    if too_deep is not None:
        raise SettingsFileError(f"{where}: {too_deep}: nests deeper than {MAX_CONTENT_DEPTH} levels")
    check_layer(layer, where)
    return layer


def check_layer(layer: Layer, where: str) -> None:
    try:
        Settings.model_validate(layer)
    except ValidationError as error:
        first = error.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(part) for part in first["loc"])
        raise SettingsFileError(f"{where}: {field}: {first['msg']}") from None


def write_layer_file(path: Path, layer: Layer) -> None:
    """Replace the file at once (a daemon reloading it never reads half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(layer, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)


def parse_value(text: str) -> Any:
    """A value from the command line: JSON when it reads as JSON (0.5, true, ["a"]), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


class SettingsFile:
    """A settings file read now and again when it changes; one that cannot be used keeps
    the layer read before and says why (`error`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.layer: Layer = {}
        self.error: str | None = None
        self._stamp: tuple[int, int, int] | None = None
        self.reload()

    def _current_stamp(self) -> tuple[int, int, int] | None:
        try:
            status = self.path.stat()
        except OSError:
            return None
        return (status.st_mtime_ns, status.st_size, status.st_ino)

    def reload(self) -> bool:
        """Read the file again if it changed since; whether it did."""
        stamp = self._current_stamp()
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            self.layer = read_layer_file(self.path)
        except SettingsFileError as error:
            self.error = f"the settings file {error} (the settings before it stay)"
            return True
        self.error = None
        return True
