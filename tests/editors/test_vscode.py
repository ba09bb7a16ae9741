"""The VS Code extension's own tests (vitest: unit, and against this daemon), run from pytest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


def run(*command: str) -> subprocess.CompletedProcess[str]:
    # The daemon under test is the one of this interpreter.
    env = {**os.environ, "CONTEXTD_PYTHON": sys.executable}
    return subprocess.run(command, cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=600)


def test_vscode_extension_tests_pass() -> None:
    if not (EXTENSION / "node_modules").is_dir():
        installed = run("npm", "ci", "--no-audit", "--no-fund")
        assert installed.returncode == 0, installed.stdout + installed.stderr
    result = run("npm", "test")
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
