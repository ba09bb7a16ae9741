"""The editors CI must test on: a skip here (or anywhere) fails the run under CI=true
(tests/conftest.py), so a missing Neovim 0.11 cannot quietly shrink the Neovim suite."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

NEWER_NEOVIM = (0, 11)


def neovim_version(path: str) -> tuple[int, int]:
    banner = subprocess.run([path, "--version"], check=True, capture_output=True, text=True, timeout=30).stdout
    found = re.match(r"NVIM v(\d+)\.(\d+)", banner)
    assert found, f"{path} --version printed {banner[:80]!r}"
    return int(found.group(1)), int(found.group(2))


def test_a_newer_neovim_is_under_test() -> None:
    """The plugin's suite runs on Debian's 0.7 and on the Neovim named by CONTEXTD_TEST_NVIM."""
    paths = [path for path in os.environ.get("CONTEXTD_TEST_NVIM", "").split(os.pathsep) if path]
    if not paths:
        pytest.skip("CONTEXTD_TEST_NVIM is not set: the Neovim 0.11 variants of tests/editors/test_neovim.py do not run")
    for path in paths:
        assert os.access(path, os.X_OK), f"CONTEXTD_TEST_NVIM names {path}, which is not an executable"
    assert max(neovim_version(path) for path in paths) >= NEWER_NEOVIM
