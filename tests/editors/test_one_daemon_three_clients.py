"""Issue 14's end-to-end check, as one test: a Python script, the VS Code extension's client
stack (vscode-jsonrpc with the extension's session code and status bar text) and a real
Neovim with the plugin attach to ONE shared daemon. The script appends to a session both
editors have open and both status figures follow from the daemon's notifications, then
drives a session neither opened, which both show from its workspace activity; VS Code
quits and Neovim and the script keep working; `contextd sessions` runs three times in a
row against the running daemon."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.editors.neovim_support import (
    CONVERSATION,
    NEOVIMS,
    Editor,
    Script,
    assistant,
    running_editor,
    shared_daemons,
    user,
)
from tests.shared_daemon import contextd, stop_daemon

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
VITE_NODE = EXTENSION / "node_modules" / ".bin" / "vite-node"
VSCODE_CLIENT = Path(__file__).with_name("vscode_status_client.ts")
WAIT_SECONDS = 120

if not NEOVIMS:
    pytest.skip("no Neovim found", allow_module_level=True)


class VsCodeClient:
    """vscode_status_client.ts under the extension's vite-node; its JSON lines in a queue."""

    def __init__(self, data_dir: Path, workspace: Path, session_id: str, env: dict[str, str]) -> None:
        assert VITE_NODE.exists(), f"run `npm ci` in {EXTENSION}: the VS Code client stack is not installed"
        self.process = subprocess.Popen(
            [str(VITE_NODE), str(VSCODE_CLIENT), "--", sys.executable, str(data_dir), str(workspace), session_id],
            cwd=EXTENSION, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))
        self.lines.put({"kind": "ended", "params": {}})

    def next(self, kind: str, **match: Any) -> dict[str, Any]:
        """The params of the next line of `kind` whose fields equal `match`."""
        while True:
            line = self.lines.get(timeout=WAIT_SECONDS)
            assert line["kind"] not in ("error", "ended"), f"the VS Code client stopped before {kind}: {line}"
            if line["kind"] == kind and all(line["params"].get(k) == v for k, v in match.items()):
                return line["params"]

    def quit(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.flush()
        forwarder_exit = self.next("quit")["forwarderExit"]
        assert self.process.wait(timeout=WAIT_SECONDS) == 0
        return int(forwarder_exit)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def neovim(tmp_path: Path, shared_env: dict[str, str]) -> Iterator[Editor]:
    """A real Neovim with the plugin; after it, the shared daemon (which would outlive its
    clients for its grace period) is stopped."""
    try:
        with running_editor(NEOVIMS[0][1], tmp_path, Path(shared_env["XDG_RUNTIME_DIR"])) as editor:
            yield editor
    finally:
        for pid in shared_daemons(tmp_path / "data"):
            stop_daemon(pid)


@pytest.fixture
def script(neovim: Editor) -> Iterator[Script]:
    """A Python script on the same shared daemon (contextd_client)."""
    started = Script(neovim)
    yield started
    started.close()


@pytest.fixture
def start_vscode(neovim: Editor, shared_env: dict[str, str]) -> Iterator[Callable[[str], VsCodeClient]]:
    started: list[VsCodeClient] = []

    def start(session_id: str) -> VsCodeClient:
        started.append(VsCodeClient(neovim.data_dir, neovim.workspace, session_id, shared_env))
        return started[-1]

    yield start
    for client in started:
        client.kill()


def test_a_script_vscode_and_neovim_share_one_daemon(
    neovim: Editor, script: Script, start_vscode: Callable[[str], VsCodeClient], shared_env: dict[str, str]
) -> None:
    data_dir = neovim.data_dir
    daemon_pid = script.run(script.client.daemon_status())["pid"]
    session = script.open("driven by the script")
    script.append(session, CONVERSATION)  # the context: 84,000 tokens by the last usage

    assert neovim.setup(shared=True, session_id=session) == session
    neovim.wait("require('contextd').statusline() == 'ctx 84k/200k 42%'")
    vscode = start_vscode(session)
    opened = vscode.next("opened", sessionId=session)
    assert opened["watched"] and opened["text"] == "$(database) 84k/200k 42%"

    status = script.run(script.client.daemon_status())
    assert status["pid"] == daemon_pid and shared_daemons(data_dir) == [daemon_pid]
    clients = sorted(connection["client"] for connection in status["connections"])
    assert clients == ["Neovim", "Visual Studio Code", "contextd-client"], clients
    assert all(session in connection["sessions"] for connection in status["connections"])

    # The script appends; both editors' figures follow the daemon's notifications.
    script.append(session, [user("Refactor the parser"), assistant("Parser refactored.", 120000)])
    neovim.wait("require('contextd').statusline() == 'ctx 120k/200k 60%'")
    vscode.next("status", sessionId=session, text="$(database) 120k/200k 60%")

    # The script starts on a session neither editor opened: both show it, from its activity.
    second = script.open("second task")
    script.append(second, [user("Write the migration"), assistant("Migration written.", 110000)])
    neovim.wait("require('contextd').statusline() == 'ctx 110k/200k 55%'")
    vscode.next("status", sessionId=second, text="$(database) 110k/200k 55% · second task")
    assert neovim.state()["session_id"] == session  # each editor's own session stays its own

    # VS Code quits: its connection alone ends; the CLI comes and goes three times.
    assert vscode.quit() == 0
    for _ in range(3):
        listed = contextd(shared_env, data_dir, "sessions", "--json")
        assert listed.returncode == 0, listed.stderr
        rows = {row["sessionId"]: row["tokens"] for row in json.loads(listed.stdout)["sessions"]}
        assert rows == {session: 120000, second: 110000}
    status = script.run(script.client.daemon_status())
    assert status["pid"] == daemon_pid
    assert sorted(connection["client"] for connection in status["connections"]) == ["Neovim", "contextd-client"]

    # Neovim and the script keep working on the session, each seeing the other.
    script.append(session, [user("And the lexer"), assistant("Lexer too.", 130000)])
    neovim.wait("require('contextd').statusline() == 'ctx 130k/200k 65%'")
    neovim.append([user("Asked from Neovim"), assistant("Answered in Neovim.", 131000)])
    messages = script.run(script.client.context(session))["messages"]
    assert [message["content"] for message in messages[-2:-1]] == ["Asked from Neovim"]
    assert script.run(script.client.state(session))["usage"]["tokens"] == 131000
    assert not [note for note in neovim.notes() if note["level"] >= 3]  # no warning, no error
