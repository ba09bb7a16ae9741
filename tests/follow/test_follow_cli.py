"""`contextd follow`: it turns following on, and prints one line per change of a mirrored
agent session of the workspace, until Ctrl-C (exit 130)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import threading
from pathlib import Path

from tests.cli.commands import CONTEXTD

REAL = Path(__file__).parents[1] / "fixtures" / "real"


def test_follow_prints_a_line_per_change_of_a_mirror_until_interrupted(tmp_path: Path) -> None:
    lines = gzip.decompress((REAL / "pi-coffee-single-task.jsonl.gz").read_bytes()).splitlines(keepends=True)
    workspace = json.loads(lines[0])["cwd"]
    home = tmp_path / "home"
    transcript = home / ".pi/agent/sessions/--coffee--/2025-10-05_abc.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"".join(lines[: len(lines) // 2]))
    follower = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(tmp_path / "data"), "follow", "--workspace", workspace, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HOME": str(home)},
    )
    assert follower.stdout is not None
    watchdog = threading.Timer(90, follower.kill)  # never hang the suite
    watchdog.start()
    try:
        first = json.loads(follower.stdout.readline())
        with open(transcript, "ab") as handle:
            handle.write(b"".join(lines[len(lines) // 2 :]))
        while True:
            later = json.loads(follower.stdout.readline())
            if later["usage"]["tokens"] != first["usage"]["tokens"]:
                break
    finally:
        watchdog.cancel()
        follower.send_signal(signal.SIGINT)
        code = follower.wait(timeout=20)
    assert code == 130, follower.stderr.read() if follower.stderr else ""
    assert first["source"] == {"agent": "pi", "path": str(transcript)}
    assert later["sessionId"] == first["sessionId"] and later["compactions"] == 0
    assert later["usage"]["tokens"] > first["usage"]["tokens"]


def test_follow_refuses_a_workspace_and_all_at_once(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CONTEXTD, "--data-dir", str(tmp_path / "data"), "follow", "--all", "--workspace", "/x"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2 and "either --workspace or --all" in done.stderr
