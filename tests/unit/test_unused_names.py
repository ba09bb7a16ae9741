"""pyflakes' checks (ruff's F rules, selected in pyproject.toml) over every Python file of the
project: an unused import or variable, an undefined name or a redefinition fails the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("server", "clients", "tests", "benchmarks")


def test_no_unused_or_undefined_names() -> None:
    ruff = Path(sys.executable).with_name("ruff")
    assert ruff.exists(), "ruff is not installed: pip install -e '.[test]'"
    run = subprocess.run(
        [str(ruff), "check", "--no-cache", "--output-format", "concise", *CHECKED],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
