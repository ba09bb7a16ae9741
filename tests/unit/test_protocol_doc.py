"""protocol.md cannot drift from the server: every method of the server's table is
documented, every request example names only fields its params model has and every field
the model requires (the models the server validates params with), and so does every result
example of a method whose result has a model (contextd.results, held to the daemon's
answers by tests/client/test_result_shapes.py)."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
from contextd.model import Settings
from contextd.results import RESULTS
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


def objects_keys(example: str) -> list[set[str]]:
    """The top-level keys of each object an example shows (`{"a": 1} or {"b"?}` is two).
    A key is a string at the object's own depth that opens an item (after `{` or `,`), or
    an alternative's key (`"entryIds": [...] | "around": "e7"`)."""
    found: list[set[str]] = []
    depth, previous = 0, ""
    parts = tokens(example)
    for index, token in enumerate(parts):
        following = parts[index + 1] if index + 1 < len(parts) else ""
        if token in "{[":
            depth += 1
            if token == "{" and depth == 1:
                found.append(set())
        elif token in "}]":
            depth -= 1
        elif token.startswith('"') and depth == 1 and found:
            opens_item = previous in ("{", ",") and following in (":", ",", "?", "}")
            if opens_item or (previous == "|" and following == ":"):
                found[-1].add(json.loads(token))
        previous = token
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


@pytest.mark.parametrize("method", sorted(RESULTS))
def test_result_examples_match_the_result_model(method: str) -> None:
    fields, required = field_names(RESULTS[method])
    shown = [keys for example in result_examples(sections()[method]) for keys in objects_keys(example)]
    assert shown, f"{method}: protocol.md shows no result"
    for keys in shown:
        assert keys <= fields, f"{method}: protocol.md names {sorted(keys - fields)}, not in its result"
        assert required <= keys, f"{method}: protocol.md leaves out {sorted(required - keys)} of its result"


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
