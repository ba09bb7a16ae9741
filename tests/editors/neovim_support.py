"""A headless Neovim with the contextd plugin, driven through pynvim, and a Python script on
the same shared daemon: what the Neovim tests and the three-clients test share."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pynvim = pytest.importorskip("pynvim")

PLUGIN_DIR = Path(__file__).resolve().parents[2] / "editors" / "neovim"


def discover_neovims() -> list[tuple[str, str]]:
    """(version, path) of each distinct Neovim on this machine."""
    candidates = [shutil.which("nvim"), "/usr/bin/nvim"]
    candidates += os.environ.get("CONTEXTD_TEST_NVIM", "").split(os.pathsep)
    found: dict[str, str] = {}
    for candidate in candidates:
        if not candidate or not os.access(candidate, os.X_OK):
            continue
        banner = subprocess.run(
            [candidate, "--version"], check=False, capture_output=True, text=True, timeout=20
        ).stdout.splitlines()
        if banner:
            found.setdefault(banner[0].replace("NVIM ", ""), candidate)
    return sorted(found.items())


NEOVIMS = discover_neovims()

# Records what the plugin shows and answers its pickers from queues the test fills.
HARNESS = r"""
vim.opt.runtimepath:prepend(...)
_G.notes, _G.selects, _G.select_answers, _G.inputs, _G.input_answers, _G.seen = {}, {}, {}, {}, {}, {}
vim.notify = function(msg, level, opts)
  table.insert(_G.notes, { msg = msg, level = level or vim.log.levels.INFO, title = opts and opts.title })
end
vim.ui.select = function(items, opts, on_choice)
  local shown = {}
  for i, item in ipairs(items) do
    shown[i] = opts.format_item and opts.format_item(item) or tostring(item)
  end
  table.insert(_G.selects, { prompt = opts.prompt, items = shown })
  local wanted = table.remove(_G.select_answers, 1)
  for i, text in ipairs(shown) do
    if wanted and text:find(wanted, 1, true) then
      return on_choice(items[i], i)
    end
  end
  on_choice(nil, nil)
end
vim.ui.input = function(opts, on_confirm)
  table.insert(_G.inputs, opts.prompt)
  on_confirm(table.remove(_G.input_answers, 1))
end
vim.api.nvim_create_autocmd("User", {
  pattern = "ContextdStatus",
  callback = function()
    table.insert(_G.seen, require("contextd").statusline())
  end,
})
"""


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str, context_tokens: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "usage": {"input": context_tokens - 10, "output": 10, "cacheRead": 0, "cacheWrite": 0},
        "stopReason": "stop",
        "model": "claude-sonnet-4-5",
    }


CONVERSATION = [
    user("Fix the failing test in src/app.py"),
    assistant("First answer: the assertion compares the wrong field.", 1000),
    user("Now also update the README"),
    assistant("Second answer: README updated.", 84000),
]


class Editor:
    """A headless Neovim with the plugin on its runtimepath."""

    def __init__(self, nvim: Any, tmp_path: Path, runtime_dir: Path) -> None:
        self.nvim = nvim
        self.nvim_path = ""
        self.data_dir = tmp_path / "data"
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir(exist_ok=True)
        self.runtime_dir = runtime_dir  # its XDG_RUNTIME_DIR: the shared daemon's socket

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def wait(self, condition: str, timeout_ms: int = 15000) -> None:
        """Bounded wait inside Neovim (its event loop keeps running) for a Lua expression."""
        code = f"return vim.wait({timeout_ms}, function() return {condition} end, 20)"
        if not self.lua(code):
            pytest.fail(f"timed out waiting for: {condition}\nnotes: {self.notes()}")

    def setup(self, **options: Any) -> str:
        options = {**self.base_options(), **options}
        self.lua("require('contextd').setup(...)", options)
        self.wait(
            "require('contextd').state().session_id ~= nil"
            " or require('contextd').state().status == 'exited'"
        )
        session_id = self.state().get("session_id")
        assert session_id, self.notes()
        return session_id

    def base_options(self) -> dict[str, Any]:
        """This test's daemon and data; a synchronous timeout a loaded machine always meets."""
        return {
            "python": sys.executable,
            "data_dir": str(self.data_dir),
            "workspace": str(self.workspace),
            "timeout_ms": 30000,
            "shared": False,  # a daemon of its own, which ends with the test
        }

    def state(self) -> dict[str, Any]:
        return self.lua("return require('contextd').state()")

    def statusline(self) -> str:
        return self.lua("return require('contextd').statusline()")

    def call_api(self, function: str, *args: Any) -> tuple[Any, Any]:
        """A synchronous API call: (result, err)."""
        code = f"local r, e = require('contextd').{function}(...); return {{ result = r, err = e }}"
        answer = self.lua(code, *args)
        return answer.get("result"), answer.get("err")

    def append(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        result, err = self.call_api("append_messages", messages)
        assert err is None, err
        return result

    def daemon_pid(self) -> int:
        """The contextd process Neovim started (its child running `-m contextd`)."""
        nvim_pid = self.nvim.funcs.getpid()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                cmdline = (stat.parent / "cmdline").read_bytes()
            except OSError:
                continue
            if int(fields[1]) == nvim_pid and b"contextd" in cmdline:
                return int(stat.parent.name)
        raise AssertionError("no contextd process under Neovim")

    def command(self, command: str) -> None:
        self.nvim.command(command)

    def notes(self) -> list[dict[str, Any]]:
        return self.lua("return _G.notes")

    def wait_note(self, text: str, timeout_ms: int = 15000) -> dict[str, Any]:
        """Waits for the first vim.notify message containing `text`, and returns it."""
        self.lua("_G.wanted = ...", text)
        shown = (
            "#vim.tbl_filter(function(n) return n.msg:find(_G.wanted, 1, true) end, _G.notes) > 0"
        )
        self.wait(shown, timeout_ms)
        return next(note for note in self.notes() if text in note["msg"])

    def answer_selects(self, *answers: str) -> None:
        self.lua("_G.select_answers = ...", list(answers))

    def answer_inputs(self, *answers: str) -> None:
        self.lua("_G.input_answers = ...", list(answers))

    def entries(self, session_id: str) -> list[dict[str, Any]]:
        """The session's file as the daemon wrote it: header first, then entries."""
        paths = list(self.data_dir.rglob(f"{session_id}.jsonl"))
        assert len(paths) == 1, f"session file of {session_id}: {paths}"
        return [json.loads(line) for line in paths[0].read_text().splitlines() if line.strip()]


@contextlib.contextmanager
def running_editor(nvim_path: str, tmp_path: Path, runtime_dir: Path) -> Iterator[Editor]:
    """A headless Neovim with the plugin and the harness; Neovim and its daemon end after.
    `runtime_dir` is its XDG_RUNTIME_DIR, where the shared daemon's socket goes."""
    home = tmp_path / "home"
    env = [
        f"XDG_{name}_HOME={home / name.lower()}" for name in ("CONFIG", "DATA", "STATE", "CACHE")
    ]
    env.append(f"XDG_RUNTIME_DIR={runtime_dir}")
    # A zone far from UTC, half an hour off, so that a UTC time shown as is cannot pass for local.
    argv = ["env", *env, "TZ=Asia/Kolkata", nvim_path, "--embed", "--headless", "--clean", "-n"]
    nvim = pynvim.attach("child", argv=argv)
    editor = Editor(nvim, tmp_path, runtime_dir)
    editor.lua(HARNESS, str(PLUGIN_DIR))
    try:
        yield editor
    finally:
        editor.lua("require('contextd').stop()")
        with contextlib.suppress(EOFError):  # pynvim reports Neovim's exit as the channel's end
            nvim.quit()
        nvim.close()


def shared_daemons(data_dir: Path) -> list[int]:
    """The shared daemons serving `data_dir` (they run on their own, not under Neovim)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            argv = cmdline.read_bytes().split(b"\0")
            if b"--socket" in argv and str(data_dir).encode() in b" ".join(argv):
                pids.append(int(cmdline.parent.name))
    return pids


class Script:
    """A Python script on the shared daemon (contextd_client over `contextd serve --shared`),
    its event loop in a thread of its own so that it stays connected between steps."""

    def __init__(self, editor: Editor) -> None:
        from contextd_client import ContextdClient

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        env = {**os.environ, "XDG_RUNTIME_DIR": str(editor.runtime_dir)}
        self.client = self.run(
            ContextdClient.spawn(
                data_dir=editor.data_dir, workspace=editor.workspace, env=env, shared=True
            )
        )
        self.workspace = editor.workspace

    def run(self, step: Any) -> Any:
        """Runs a coroutine of the client; a hung daemon fails the test instead of hanging it."""
        return asyncio.run_coroutine_threadsafe(step, self.loop).result(timeout=120)

    def open(self, name: str) -> str:
        return self.run(self.client.session_open(workspace=self.workspace, name=name))["sessionId"]

    def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        self.run(self.client.append(session_id, messages))

    def close(self) -> None:
        self.run(self.client.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
