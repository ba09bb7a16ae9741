"""The client's types are the daemon's models: clients/contextd_client/types.py is what
contextd_client.typegen makes of `contextd.results.json_schema()`, so a field added to,
renamed in or dropped from a model without regenerating the file fails here."""

from __future__ import annotations

import difflib
from pathlib import Path

from contextd.results import json_schema
from contextd_client import types
from contextd_client.typegen import types_module

REGENERATE = "python -m contextd_client.typegen > clients/contextd_client/types.py"


def test_the_checked_in_types_are_generated_from_the_models() -> None:
    checked_in = Path(types.__file__).read_text(encoding="utf-8")
    generated = types_module(json_schema())
    difference = "".join(difflib.unified_diff(checked_in.splitlines(True), generated.splitlines(True), "checked in", "generated"))
    assert difference == "", f"types.py is out of date; regenerate it:\n  {REGENERATE}\n{difference}"


def test_a_changed_model_changes_the_generated_types() -> None:
    """The comparison above can fail: a field added to a result shows in its TypedDict,
    one the daemon may leave out as NotRequired."""
    schema = json_schema()
    schema["$defs"]["CloseResult"]["properties"]["closedAt"] = {"type": "string"}
    generated = types_module(schema)
    assert "class CloseResult(TypedDict):\n    closed: bool\n    closedAt: NotRequired[str]\n" in generated


def test_the_generated_module_defines_what_the_client_names() -> None:
    """Every result and body the daemon answers with has its TypedDict, and each
    notification its name."""
    schema = json_schema()
    shapes = {ref["$ref"].rsplit("/", 1)[1] for part in ("results", "notifications")
              for value in schema["properties"][part]["properties"].values()
              for ref in value.get("anyOf", [value])}
    assert shapes <= set(vars(types))
    assert set(types.NOTIFICATIONS) == set(schema["properties"]["notifications"]["properties"])
