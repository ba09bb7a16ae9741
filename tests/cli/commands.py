"""Running `contextd` as the tests' own interpreter installed it: `python -m contextd`, so a
stale `contextd` earlier on PATH can never be the one under test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

CONTEXTD = [sys.executable, "-m", "contextd"]


def run(data_dir: Path, *args: str, timeout: float = 120, **options: Any) -> subprocess.CompletedProcess[str]:
    """`contextd --data-dir DATA_DIR ARGS...`, from the data directory's parent."""
    return subprocess.run(
        [*CONTEXTD, "--data-dir", str(data_dir), *args],
        capture_output=True, text=True, timeout=timeout, cwd=data_dir.parent, check=False, **options,
    )


def run_json(data_dir: Path, *args: str) -> Any:
    done = run(data_dir, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def json_error(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The `--json` error object a failed command wrote on stderr."""
    assert done.stdout == "", done.stdout
    error: dict[str, Any] = json.loads(done.stderr)["error"]
    assert error["exitCode"] == done.returncode
    return error
