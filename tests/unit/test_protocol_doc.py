"""protocol.md cannot drift from the server: every method of the server's table is
documented, every request example names only fields its params model has and every field
the model requires (the models the server validates params with), and so does every result
example of a method whose result has a model (contextd.results, held to the daemon's
answers by tests/client/test_result_shapes.py), and every notification body shown."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from contextd.model import Settings
from contextd.results import CLIENT_REQUESTS, NOTIFICATION_BODIES, RESULTS
from contextd.server import NOTIFICATIONS, REQUESTS
from pydantic import BaseModel

PROTOCOL = (Path(__file__).resolve().parents[2] / "protocol.md").read_text(encoding="utf-8")


def sections() -> dict[str, str]:
    """Each `### name` heading's text, up to the next heading."""
    parts = re.split(r"^###? (.+)$", PROTOCOL, flags=re.MULTILINE)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def json_blocks(section: str) -> list[str]:
    return re.findall(r"^```json\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)


def request_examples(section: str) -> list[str]:
    """The `→` (client to server) part of each JSON example of a section."""
    return [block.split("→", 1)[1].split("\n←", 1)[0] for block in json_blocks(section) if "→" in block]


def result_examples(section: str) -> list[str]:
    """The `←` (server to client) part of each JSON example of a section."""
    return [block.split("←", 1)[1] for block in json_blocks(section) if "←" in block]


def tokens(text: str) -> list[str]:
    """Strings (as JSON text) and the single characters between them that carry structure."""
    return re.findall(r'"(?:[^"\\]|\\.)*"|[{}\[\],:?|]', text)


Shown = dict[str, list["Shown"]]
"""An object an example shows: each key, and the objects shown in its value."""


def shown_objects(example: str) -> list[Shown]:
    """The objects an example shows (`{"a": 1} or {"b"?}` is two), with their nested ones.
    A key is a string of the object itself (not of a list in it) that opens an item (after
    `{` or `,`), or an alternative's key (`"entryIds": [...] | "around": "e7"`)."""
    found: list[Shown] = []
    open_objects: list[tuple[Shown, list[int], list[str]]] = []
    """Each object being read, how many lists are open in it, and its latest key."""
    parts, previous = tokens(example), ""
    for index, token in enumerate(parts):
        following = parts[index + 1] if index + 1 < len(parts) else ""
        inside = open_objects[-1] if open_objects else None
        if token == "{":
            shown: Shown = {}
            if inside is None:
                found.append(shown)
            elif inside[2]:
                inside[0][inside[2][-1]].append(shown)
            open_objects.append((shown, [0], []))
        elif token == "}" and inside is not None:
            open_objects.pop()
        elif token in "[]" and inside is not None:
            inside[1][0] += 1 if token == "[" else -1
        elif token.startswith('"') and inside is not None and inside[1][0] == 0:
            opens_item = previous in ("{", ",") and following in (":", ",", "?", "}")
            if opens_item or (previous == "|" and following == ":"):
                key = json.loads(token)
                inside[0].setdefault(key, [])
                inside[2].append(key)
        previous = token
    return found


def objects_keys(example: str) -> list[set[str]]:
    return [set(shown) for shown in shown_objects(example)]


def nested_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field's value is, or a list or optional one holds (not a dict's values:
    their keys are data, not fields)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is dict:
        return None
    return next((model for arg in get_args(annotation) if (model := nested_model(arg))), None)


def differences(shown: Shown, model: type[BaseModel], where: str) -> list[str]:
    """How an object an example shows differs from the model: a field it lacks, a required
    one left out, and the same for each nested object (`{…}` placeholders aside)."""
    fields = {field.alias or name: field for name, field in model.model_fields.items()}
    found = [f"{where} names {key!r}, which it has not" for key in shown if key not in fields]
    found += [f"{where} leaves out {key!r}" for key, field in fields.items() if field.is_required() and key not in shown]
    for key, children in shown.items():
        inner = nested_model(fields[key].annotation) if key in fields else None
        for child in children if inner is not None else []:
            if child:
                found += differences(child, inner, f"{where}.{key}")
    return found


def params_model(method: str) -> type[BaseModel] | None:
    """The model the server validates this method's params with (None: it takes none)."""
    model = inspect.getclosurevars(REQUESTS[method]).nonlocals.get("params_model")
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def field_names(model: type[BaseModel]) -> tuple[set[str], set[str]]:
    """Every field's wire name, and those the model requires."""
    names = {field.alias or name: field.is_required() for name, field in model.model_fields.items()}
    return set(names), {name for name, required in names.items() if required}


def test_every_method_of_the_servers_table_is_documented() -> None:
    """contextd's own methods each under a heading; LSP's (initialize, shutdown, initialized,
    workspace/didChangeConfiguration) where the text names them."""
    headings = sections()
    undocumented = [
        method for method in [*REQUESTS, *NOTIFICATIONS]
        if method not in headings and (method.startswith("contextd/") or f"`{method}`" not in PROTOCOL)
    ]
    assert undocumented == []


DOCUMENTED = [method for method in REQUESTS if method in sections() and params_model(method) is not None]


def test_the_examples_are_checked_for_most_requests() -> None:
    """A change of the headings or the example notation that the reader below no longer
    understands must not leave the examples unchecked."""
    checked = [method for method in DOCUMENTED if any(objects_keys(e) for e in request_examples(sections()[method]))]
    assert len(checked) >= 25, checked


@pytest.mark.parametrize("method", DOCUMENTED)
def test_request_examples_match_the_params_model(method: str) -> None:
    model = params_model(method)
    assert model is not None
    fields, required = field_names(model)
    for example in request_examples(sections()[method]):
        for keys in objects_keys(example):
            assert keys <= fields, f"{method}: protocol.md names {sorted(keys - fields)}, not params of the server"
            assert required <= keys, f"{method}: protocol.md leaves out the required {sorted(required - keys)}"


def test_every_request_of_contextd_has_its_result_modelled() -> None:
    assert sorted(method for method in REQUESTS if method.startswith("contextd/")) == sorted(RESULTS)


@pytest.mark.parametrize("method", sorted(RESULTS))
def test_result_examples_match_a_result_model(method: str) -> None:
    """Each result shown is one of the method's shapes exactly (compact: its result or its
    dry run's preview)."""
    shown = [obj for example in result_examples(sections()[method]) for obj in shown_objects(example)]
    assert shown, f"{method}: protocol.md shows no result"
    for obj in shown:
        found = [differences(obj, shape, f"{method} ({shape.__name__})") for shape in RESULTS[method]]
        assert [] in found, found


@pytest.mark.parametrize("method", sorted(NOTIFICATION_BODIES))
def test_notification_examples_match_the_body_model(method: str) -> None:
    shown = [obj for block in json_blocks(sections()[method]) for obj in shown_objects(block)]
    assert shown, f"{method}: protocol.md shows no body"
    assert [problem for obj in shown for problem in differences(obj, NOTIFICATION_BODIES[method], method)] == []


@pytest.mark.parametrize("method", sorted(CLIENT_REQUESTS))
def test_hook_answer_examples_match_what_the_daemon_reads(method: str) -> None:
    shown = [obj for example in result_examples(sections()[method]) for obj in shown_objects(example)]
    assert len(shown) >= 3, f"{method}: protocol.md shows no answers"
    answer = CLIENT_REQUESTS[method][1]
    assert [problem for obj in shown for problem in differences(obj, answer, method)] == []


@pytest.mark.parametrize("method", sorted(CLIENT_REQUESTS))
def test_hook_request_examples_match_what_the_daemon_sends(method: str) -> None:
    shown = [obj for example in request_examples(sections()[method]) for obj in shown_objects(example)]
    assert shown, f"{method}: protocol.md shows no request"
    params = CLIENT_REQUESTS[method][0]
    assert [problem for obj in shown for problem in differences(obj, params, method)] == []


def test_the_settings_defaults_shown_are_the_defaults() -> None:
    """The Settings section's example is the settings object with every default, and a
    model of the user's own (`models` has none by default)."""
    (shown,) = [json.loads(block) for block in json_blocks(sections()["Settings"])]
    Settings.model_validate(shown)
    defaults = Settings().model_dump(mode="json", by_alias=True)
    assert set(shown) == set(defaults)
    assert {key: value for key, value in shown.items() if key != "models"} == {
        key: value for key, value in defaults.items() if key != "models"
    }


@pytest.mark.parametrize(
    ("example", "keys"),
    [
        ('{"sessionId": "01JC…", "format": "neutral" | "anthropic",\n   "model": "gpt-5.5"?}', [{"sessionId", "format", "model"}]),
        ('{"workspace": "/p"}   or   {"allWorkspaces": true}   or   {}', [{"workspace"}, {"allWorkspaces"}, set()]),
        ('{"sessionId", "entryIds": ["e7", "e8"] | "around": "e7", "roots": {"codex": "/x"}?}', [{"sessionId", "entryIds", "around", "roots"}]),
        ('{"text": "a \\"quoted\\" word", "item": 2 | "migration" ?}', [{"text", "item"}]),
    ],
)
def test_the_reader_of_examples_finds_their_keys(example: str, keys: list[set[str]]) -> None:
    assert objects_keys(example) == keys


def test_the_reader_finds_nested_objects_in_lists_and_values() -> None:
    example = '{"sessions": [{"sessionId", "parentSession": {"id", "entryId"}?}, {…rows…}], "n": 1}'
    assert shown_objects(example) == [
        {"sessions": [{"sessionId": [], "parentSession": [{"id": [], "entryId": []}]}, {}], "n": []}
    ]
