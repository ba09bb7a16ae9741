"""No test module imports from another test module: what tests share lives in support
modules (tests/follow/support.py, tests/importers/support.py, ...). An imported test module
brings its module-level skips and fixtures along, and where its folder is no package
(tests/editors) pytest imports it a second time under another name."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    found += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    return found


def test_no_test_module_imports_another() -> None:
    offending = [
        f"{path.relative_to(ROOT)} imports {module}"
        for folder in ("tests", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for module in imported_modules(path)
        if module.startswith("tests.") and module.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert offending == []
