"""The VS Code extension's own tests (vitest: unit, and against this daemon), one pytest test
per vitest test, so a vitest test that skips or never ran shows here by its name.

vitest lists its tests at collection time (`vitest list --json`); the suite then runs once
(`vitest run --reporter=json`) and each pytest test reads its own result. A vitest skip is a
pytest skip, which fails the run under CI (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
NPM = shutil.which("npm")

if NPM is None:
    pytest.skip("npm is not installed: the VS Code extension's tests cannot run", allow_module_level=True)


def run(*command: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    # The daemon under test is the one of this interpreter.
    env = {**os.environ, "CONTEXTD_PYTHON": sys.executable}
    return subprocess.run(command, check=False, cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=timeout)


def vitest_key(file: str, name: str) -> str:
    return f"{Path(file).resolve().relative_to(EXTENSION)}::{name}"


def listed_vitest_tests() -> list[str]:
    if not (EXTENSION / "node_modules").is_dir():
        installed = run("npm", "ci", "--no-audit", "--no-fund")
        if installed.returncode != 0:
            raise RuntimeError("npm ci failed:\n" + installed.stdout[-3000:] + installed.stderr[-3000:])
    listed = run("npx", "vitest", "list", "--json")
    if listed.returncode != 0:
        raise RuntimeError("vitest list failed:\n" + listed.stdout[-3000:] + listed.stderr[-3000:])
    return [vitest_key(test["file"], test["name"]) for test in json.loads(listed.stdout)]


VITEST_TESTS = listed_vitest_tests()


@pytest.fixture(scope="module")
def vitest_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every vitest result of one run, by the key of `vitest list`."""
    report = tmp_path_factory.mktemp("vitest") / "results.json"
    run("npx", "vitest", "run", "--reporter=json", f"--outputFile={report}")
    if not report.is_file():
        pytest.fail("vitest wrote no results")
    results: dict[str, dict[str, Any]] = {}
    for test_file in json.loads(report.read_text())["testResults"]:
        if not test_file["assertionResults"] and test_file.get("message"):
            results[vitest_key(test_file["name"], "(file)")] = {"status": "failed", "failureMessages": [test_file["message"]]}
        for result in test_file["assertionResults"]:
            name = " > ".join([*result.get("ancestorTitles", []), result["title"]])
            results[vitest_key(test_file["name"], name)] = result
    return results


def test_extension_typechecks() -> None:
    checked = run("npx", "tsc", "-p", ".")
    assert checked.returncode == 0, checked.stdout[-6000:] + checked.stderr[-2000:]


@pytest.mark.parametrize("key", VITEST_TESTS)
def test_vitest(key: str, vitest_results: dict[str, dict[str, Any]]) -> None:
    result = vitest_results.get(key)
    assert result is not None, f"vitest listed {key} but did not run it"
    status = result["status"]
    if status in ("skipped", "pending", "todo"):
        pytest.skip(f"vitest skipped it: {', '.join(result.get('failureMessages') or []) or status}")
    assert status == "passed", "\n".join(result.get("failureMessages") or [status])[-8000:]


def test_every_vitest_result_was_listed(vitest_results: dict[str, dict[str, Any]]) -> None:
    """A failing test file (a syntax error, a failed import) shows here, not as a missing result."""
    assert sorted(set(vitest_results) - set(VITEST_TESTS)) == []
