"""When the daemon dies under a command that runs until stopped (`watch`, `follow`), the
command says so and exits 3, as the README promises, instead of ending quietly or running on
with no connection."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.cli.commands import CONTEXTD
from tests.shared_daemon import contextd


@pytest.mark.parametrize("command", [["watch"], ["follow"]])
def test_a_command_whose_daemon_dies_exits_3_naming_it(
    tmp_path: Path, shared_env: dict[str, str], command: list[str]
) -> None:
    data_dir = tmp_path / "data"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    running = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(data_dir), *command, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=shared_env, cwd=workspace,
    )
    watchdog = threading.Timer(90, running.kill)  # never hang the suite
    watchdog.start()
    try:
        pid = None
        while pid is None:  # the daemon runs once the command is connected to it
            status = contextd(shared_env, data_dir, "status", "--json")
            if status.returncode == 0 and json.loads(status.stdout)["connections"]:
                pid = json.loads(status.stdout)["pid"]
            assert running.poll() is None, running.stderr.read() if running.stderr else ""
        os.kill(pid, signal.SIGKILL)
        code = running.wait(timeout=60)
    finally:
        watchdog.cancel()
        if running.poll() is None:
            running.kill()
    stderr = running.stderr.read() if running.stderr else ""
    assert code == 3, stderr
    assert json.loads(stderr.splitlines()[-1])["error"]["kind"] == "no-daemon", stderr
    assert "the daemon went away" in json.loads(stderr.splitlines()[-1])["error"]["message"]
