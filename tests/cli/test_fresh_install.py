"""The README's main job from a fresh, non-editable install: the wheel must carry what it
needs (encodings, prompts, the demo session) and `contextd demo` must work from it."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_contextd_demo_from_a_fresh_install(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # The dependencies (and pip, setuptools) come from this interpreter's site-packages,
    # named in a .pth file (a virtual environment's "system" site-packages would be the base
    # interpreter's, which need not have them); the package itself is built and installed
    # afresh, so the venv's copy is the one that runs. Paths from a .pth file are not site
    # directories, so the editable install of the tests' own environment stays out.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    dependencies = sorted({sysconfig.get_paths()[key] for key in ("purelib", "platlib")})
    venv_purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    Path(venv_purelib, "tests-interpreter.pth").write_text("\n".join(dependencies) + "\n")
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert installed.returncode == 0, installed.stderr
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import contextd, contextd_client; print(contextd.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    )
    assert where.stdout.startswith(str(venv)), where.stdout

    demo = subprocess.run(
        [str(venv / "bin" / "contextd"), "--data-dir", str(tmp_path / "data"), "demo", "--delay", "0"],
        capture_output=True, text=True, cwd=tmp_path, timeout=240, check=False,
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert demo.stdout.count("✓ compacted (threshold)") >= 2
    assert "The summary the model now sees" in demo.stdout
    assert "## Goal" in demo.stdout
