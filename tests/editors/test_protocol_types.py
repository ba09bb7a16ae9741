"""The VS Code extension's protocol types are the daemon's models: editors/vscode/src/
protocol.generated.ts is what json-schema-to-typescript makes of `contextd.results.json_schema()`
(editors/vscode/scripts/generate-protocol.mjs), so a field added to, renamed in or dropped
from a model without regenerating the file fails here, naming the lines that differ."""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from contextd.results import json_schema

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
GENERATED = EXTENSION / "src" / "protocol.generated.ts"
GENERATOR = EXTENSION / "scripts" / "generate-protocol.mjs"
REGENERATE = "python -m contextd.results | node editors/vscode/scripts/generate-protocol.mjs > " + str(
    GENERATED.relative_to(EXTENSION.parents[1])
)


def generate(schema: dict[str, object]) -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the extension's protocol types cannot be generated")
    if not (EXTENSION / "node_modules" / "json-schema-to-typescript").is_dir():
        pytest.skip("editors/vscode/node_modules lacks json-schema-to-typescript: run npm ci there")
    made = subprocess.run(
        [node, str(GENERATOR)], input=json.dumps(schema), capture_output=True, text=True, cwd=EXTENSION, timeout=120
    )
    assert made.returncode == 0, made.stderr[-3000:]
    return made.stdout


def test_the_checked_in_types_are_generated_from_the_models() -> None:
    generated = generate(json_schema())
    checked_in = GENERATED.read_text(encoding="utf-8")
    difference = "".join(
        difflib.unified_diff(checked_in.splitlines(True), generated.splitlines(True), "checked in", "generated")
    )
    assert difference == "", f"protocol.generated.ts is out of date; regenerate it:\n  {REGENERATE}\n{difference}"


def test_a_changed_model_changes_the_generated_types() -> None:
    """The comparison above can fail: a field added to a result shows in its interface."""
    schema = json_schema()
    schema["$defs"]["CloseResult"]["properties"]["closedAt"] = {"type": "string"}
    assert "closedAt?: string;" in generate(schema)
