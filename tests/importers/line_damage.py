"""A transcript line with one field of a type no agent writes, and what importing it does:
the whole file (`contextd import`) and a follower's path (parts, the importer's state saved
and restored between them), each as data to compare (entries, leaf, usage, problems)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from contextd.importers import STREAMING_IMPORTERS
from contextd.importers.common import Problem, restore_importer
from contextd.model import utc_now

WRONG_VALUES: dict[str, Any] = {"number": 7, "list": ["x"], "null": None, "string": "wrong"}
"""A value of each JSON type a field may wrongly hold."""

Path = tuple[str | int, ...]


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "object"}[type(value)]


def wrong_values_for(value: Any) -> list[str]:
    """The names of the WRONG_VALUES of another type than `value`'s."""
    return [name for name in WRONG_VALUES if name != type_name(value)]


def children(value: Any) -> list[tuple[str | int, Any]]:
    """A field's own fields: an object's keys, and the objects a list holds (a list's items
    are reached through the fields of the objects in it)."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        return [(index, item) for index, item in enumerate(value) if isinstance(item, (dict, list))]
    return []


def replaced(record: Any, path: Path, value: Any) -> Any:
    """`record` with the field at `path` replaced by `value` (a copy: `record` is untouched)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(record, dict):
        return {**record, head: replaced(record[head], rest, value)}
    copy = list(record)
    copy[head] = replaced(record[head], rest, value)  # type: ignore[index]
    return copy


def field_at(record: Any, path: Path) -> Any:
    for part in path:
        record = record[part]
    return record


@dataclass
class Outcome:
    """What an import made, as data to compare."""

    entries: list[dict[str, Any]]
    leaf: str | None
    pending_usage: list[Any]
    """The usage the importer reported pending (the figure's input) after every part."""
    problems: list[Problem]
    described: tuple[Any, ...]
    """The session's source id, workspace, start and name."""


def whole_file(agent: str, lines: list[str]) -> Outcome:
    """`contextd import` of `lines`."""
    return in_parts(agent, lines, [len(lines)], restart=False)


def in_parts(agent: str, lines: list[str], cuts: list[int], *, restart: bool = True) -> Outcome:
    """`lines` as a follower reads them: fed up to each cut, the settled entries taken, and
    (where `restart`) the importer's state saved as JSON and restored, as after a restart."""
    importer_class = STREAMING_IMPORTERS[agent]
    importer = importer_class(reports_every_line=not restart)
    started = utc_now()
    taken, pending, problems, fed = [], [], [], 0
    for cut in [*sorted(min(cut, len(lines)) for cut in cuts), len(lines)]:
        for number in range(fed + 1, cut + 1):
            importer.feed(number, lines[number - 1])
        fed = max(cut, fed)
        pending.append(_dumped(importer.pending_usage()))
        problems += importer.problems
        if restart:
            taken += importer.take_settled()
            importer = restore_importer(importer_class, json.loads(json.dumps(importer.snapshot())), reports_every_line=False)
    result = importer.finish()
    problems += result.problems
    now = (started, utc_now())
    entries = [_timeless(entry.model_dump(mode="json"), now) for entry in [*taken, *result.entries]]
    described = (result.source_id, result.workspace, result.created_at, result.name)
    return Outcome(entries, result.leaf_id, pending, sorted(set(problems), key=str), described)


def _dumped(usage: Any) -> Any:
    return usage.model_dump(mode="json") if usage is not None else None


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _timeless(value: Any, now: tuple[str, str]) -> Any:
    """`value` with the timestamps made while importing (`utc_now`, where a record had none
    to give) written as "now": two imports made at different moments compare equal."""
    if isinstance(value, dict):
        return {key: _timeless(item, now) for key, item in value.items()}
    if isinstance(value, list):
        return [_timeless(item, now) for item in value]
    if isinstance(value, str) and _STAMP.fullmatch(value) and now[0] <= value <= now[1]:
        return "now"
    return value
