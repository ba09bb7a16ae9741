"""The Neovim plugin (editors/neovim) in a real headless Neovim against the real daemon.

Every Neovim found is tested: /usr/bin/nvim (0.7.2 on Debian), the `nvim` on PATH and any
listed in CONTEXTD_TEST_NVIM (os.pathsep-separated paths). vim.notify, vim.ui.select and
vim.ui.input are replaced inside Neovim to record what the user would see and to answer
the pickers. Methods the daemon does not have yet (-32601) skip their tests at run time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pynvim = pytest.importorskip("pynvim")

PLUGIN_DIR = Path(__file__).resolve().parents[2] / "editors" / "neovim"
METHOD_NOT_FOUND = -32601
INFO, WARN, ERROR = 2, 3, 4  # vim.log.levels


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
vim.notify = function(msg, level)
  table.insert(_G.notes, { msg = msg, level = level or vim.log.levels.INFO })
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

    def __init__(self, nvim: Any, tmp_path: Path) -> None:
        self.nvim = nvim
        self.data_dir = tmp_path / "data"
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir(exist_ok=True)

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def wait(self, condition: str, timeout_ms: int = 15000) -> None:
        """Bounded wait inside Neovim (its event loop keeps running) for a Lua expression."""
        code = f"return vim.wait({timeout_ms}, function() return {condition} end, 20)"
        if not self.lua(code):
            pytest.fail(f"timed out waiting for: {condition}\nnotes: {self.notes()}")

    def setup(self, **options: Any) -> str:
        options = {
            "python": sys.executable,
            "data_dir": str(self.data_dir),
            "workspace": str(self.workspace),
            **options,
        }
        self.lua("require('contextd').setup(...)", options)
        self.wait(
            "require('contextd').state().session_id ~= nil"
            " or require('contextd').state().status == 'exited'"
        )
        session_id = self.state().get("session_id")
        assert session_id, self.notes()
        return session_id

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

    def supports(self, method: str) -> bool:
        """Asks the daemon with empty params: -32601 if it lacks the method, else -32602."""
        code = (
            "local _, err = require('contextd.client').request_sync(..., vim.empty_dict());"
            " return err and err.code"
        )
        return self.lua(code, method) != METHOD_NOT_FOUND

    def require_method(self, method: str) -> None:
        if not self.supports(method):
            pytest.skip(f"the daemon does not implement {method} yet")

    def entries(self, session_id: str) -> list[dict[str, Any]]:
        """The session's file as the daemon wrote it: header first, then entries."""
        paths = list(self.data_dir.rglob(f"{session_id}.jsonl"))
        assert len(paths) == 1, f"session file of {session_id}: {paths}"
        return [json.loads(line) for line in paths[0].read_text().splitlines() if line.strip()]


@pytest.fixture(params=[path for _, path in NEOVIMS], ids=[version for version, _ in NEOVIMS])
def editor(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Editor]:
    home = tmp_path / "home"
    env = [
        f"XDG_{name}_HOME={home / name.lower()}" for name in ("CONFIG", "DATA", "STATE", "CACHE")
    ]
    argv = ["env", *env, request.param, "--embed", "--headless", "--clean", "-n"]
    nvim = pynvim.attach("child", argv=argv)
    editor = Editor(nvim, tmp_path)
    editor.lua(HARNESS, str(PLUGIN_DIR))
    yield editor
    editor.lua("require('contextd').stop()")
    with contextlib.suppress(EOFError):  # pynvim reports Neovim's exit as the channel's end
        nvim.quit()
    nvim.close()


if not NEOVIMS:
    pytest.skip("no Neovim found", allow_module_level=True)


def session_entries(editor: Editor, session_id: str, entry_type: str) -> list[dict[str, Any]]:
    return [e for e in editor.entries(session_id) if e.get("type") == entry_type]


def message_texts(editor: Editor, session_id: str) -> list[str]:
    texts = []
    for entry in session_entries(editor, session_id, "message"):
        content = entry["message"]["content"]
        texts.append(content if isinstance(content, str) else content[0].get("text", ""))
    return texts


# --- setup, API, statusline ------------------------------------------------------------


def test_setup_starts_the_daemon_and_opens_a_session(editor: Editor) -> None:
    session_id = editor.setup(session_name="fix tests")
    state = editor.state()
    assert state["status"] == "running"
    assert state["server_version"]
    assert state["context_window"] == 200000
    header = editor.entries(session_id)[0]
    assert header["type"] == "session"
    assert header["name"] == "fix tests"
    assert Path(header["workspace"]).resolve() == editor.workspace.resolve()
    commands = editor.lua("return vim.tbl_keys(vim.api.nvim_get_commands({}))")
    for name in (
        "ContextdStatus",
        "ContextdCompact",
        "ContextdCompactPreview",
        "ContextdHandoff",
        "ContextdTree",
        "ContextdFork",
        "ContextdLabel",
        "ContextdSessions",
        "ContextdIdle",
        "ContextdAbort",
    ):
        assert name in commands


def test_appends_reach_the_session_and_the_statusline_follows_token_usage(editor: Editor) -> None:
    session_id = editor.setup()
    editor.lua(
        "_G.usages = {}; require('contextd').on_token_usage(function(u) table.insert(_G.usages, u) end)"
    )
    result = editor.append(CONVERSATION)
    assert len(result["entryIds"]) == 4
    assert result["leafId"] == result["entryIds"][-1]

    editor.wait("require('contextd').statusline() == 'ctx 84k/200k 42%'")
    assert "ctx 84k/200k 42%" in editor.lua("return _G.seen")  # User ContextdStatus fired
    usages = editor.lua("return _G.usages")
    assert usages[-1]["sessionId"] == session_id
    assert usages[-1]["tokens"] == 84000
    assert usages[-1]["source"] == "usage"
    assert message_texts(editor, session_id)[0] == "Fix the failing test in src/app.py"
    assert editor.state()["leaf_id"] == result["leafId"]


TOOL_TURN = [
    user("What is in src/app.py?"),
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading."},
            {
                "type": "toolCall",
                "id": "call_1",
                "name": "read",
                "arguments": {"path": "src/app.py"},
            },
        ],
        "stopReason": "toolUse",
    },
    {
        "role": "toolResult",
        "toolCallId": "call_1",
        "toolName": "read",
        "content": "def main(): ...",
        "isError": False,
    },
]


def test_get_context_in_each_format(editor: Editor) -> None:
    editor.setup()
    editor.append(TOOL_TURN)
    neutral, err = editor.call_api("get_context")
    assert err is None
    assert [m["role"] for m in neutral["messages"]] == ["user", "assistant", "toolResult"]
    assert neutral["tokens"] > 0
    openai, _ = editor.call_api("get_context", "openai")
    assert openai["messages"][1]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read", "arguments": '{"path": "src/app.py"}'},
        }
    ]
    assert openai["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "def main(): ...",
    }
    anthropic, _ = editor.call_api("get_context", "anthropic")
    assert anthropic["messages"][2]["content"][0]["type"] == "tool_result"


def test_async_api_calls_back(editor: Editor) -> None:
    # Called before the session is open: the request waits for it.
    editor.lua(
        "require('contextd').setup(...);"
        "require('contextd').append_messages({ { role = 'user', content = 'queued early' } },"
        " function(err, result) _G.appended = { err = err, result = result } end)",
        {
            "python": sys.executable,
            "data_dir": str(editor.data_dir),
            "workspace": str(editor.workspace),
        },
    )
    editor.wait("_G.appended ~= nil")
    appended = editor.lua("return _G.appended")
    assert appended.get("err") is None
    session_id = editor.state()["session_id"]
    assert message_texts(editor, session_id) == ["queued early"]


def test_an_invalid_message_is_refused_with_the_field_named(editor: Editor) -> None:
    session_id = editor.setup()
    result, err = editor.call_api(
        "append_messages", [user("fine"), {"role": "user", "contnt": "typo"}]
    )
    assert result is None
    assert err["code"] == -32602
    assert any("1" in e["field"] for e in err["data"]["errors"])
    assert message_texts(editor, session_id) == []


def test_a_restart_resumes_the_newest_session(editor: Editor) -> None:
    session_id = editor.setup()
    editor.append(CONVERSATION)
    editor.lua("require('contextd').stop()")
    assert editor.statusline() == ""
    assert editor.setup() == session_id
    assert editor.statusline() == "ctx 84k/200k 42%"


def test_a_missing_session_is_reported_as_an_error_and_a_new_one_opened(editor: Editor) -> None:
    session_id = editor.setup(session_id="no-such-session")
    note = editor.wait_note("resume session no-such-session")
    assert note["level"] == ERROR
    assert session_id != "no-such-session"


def test_a_bad_setting_is_reported(editor: Editor) -> None:
    editor.lua(
        "require('contextd').setup(...)",
        {
            "python": sys.executable,
            "data_dir": str(editor.data_dir),
            "workspace": str(editor.workspace),
            "start_timeout_ms": 3000,
            "settings": {"compaction": {"reserveTokens": "lots"}},
        },
    )
    note = editor.wait_note("did not start")
    assert note["level"] == ERROR
    # Neovim's own error message, just before ours, names the key.
    assert "compaction.reserveTokens" in editor.lua("return vim.v.errmsg")
    assert editor.state()["status"] == "exited"


def test_the_daemon_dying_is_reported(editor: Editor) -> None:
    editor.setup()
    os.kill(editor.daemon_pid(), 9)
    note = editor.wait_note("the daemon exited")
    assert note["level"] == ERROR
    assert editor.statusline() == ""


# --- commands ----------------------------------------------------------------------------


def test_status_command_shows_the_session(editor: Editor) -> None:
    session_id = editor.setup()
    editor.append(CONVERSATION)
    editor.command("ContextdStatus")
    note = editor.wait_note("session " + session_id)
    assert note["level"] == INFO
    assert "84,000 / 200,000 tokens (42%)" in note["msg"]


def test_an_unknown_idle_argument_is_an_error(editor: Editor) -> None:
    editor.setup()
    editor.command("ContextdIdle soon")
    assert editor.wait_note("seconds or off")["level"] == ERROR


def long_turns(count: int) -> list[dict[str, Any]]:
    """Turns long enough that a small keepRecentTokens leaves something to summarize."""
    messages = []
    for i in range(count):
        body = f"Turn {i}: please look at module_{i}.py and explain function_{i}. " * 20
        messages.append(user(body))
        messages.append(
            assistant(f"Answer {i}: function_{i} parses the input. " * 20, 2000 + 1000 * i)
        )
    return messages


COMPACTABLE = {"compaction": {"keepRecentTokens": 300}, "pruning": {"enabled": False}}


def test_compact_command_compacts_with_instructions(editor: Editor) -> None:
    session_id = editor.setup(settings=COMPACTABLE)
    editor.require_method("contextd/compact")
    editor.append(long_turns(6))
    editor.command("ContextdCompact focus on the parser")
    note = editor.wait_note("compacted")
    assert note["level"] == INFO
    [compaction] = session_entries(editor, session_id, "compaction")
    assert compaction["instructions"] == "focus on the parser"
    assert compaction["reason"] == "manual"
    # While it ran the statusline said so; now it does not.
    assert any("compacting…" in seen for seen in editor.lua("return _G.seen"))
    editor.wait("not require('contextd').statusline():find('compacting')")


def test_compact_preview_changes_nothing(editor: Editor) -> None:
    session_id = editor.setup(settings=COMPACTABLE)
    editor.require_method("contextd/compact")
    editor.append(long_turns(6))
    before = editor.entries(session_id)
    editor.command("ContextdCompactPreview")
    note = editor.wait_note("compaction preview")
    assert "summarize" in note["msg"] and "tokens" in note["msg"]
    assert editor.entries(session_id) == before


def test_nothing_to_compact_is_information_not_an_error(editor: Editor) -> None:
    editor.setup()
    editor.require_method("contextd/compact")
    editor.command("ContextdCompact")
    note = editor.wait_note("contextd: compact:")
    assert note["level"] == INFO
    editor.require_method("contextd/compact/abort")
    editor.command("ContextdAbort")
    assert editor.wait_note("no compaction is running")["level"] == INFO


def test_an_automatic_compaction_is_announced(editor: Editor) -> None:
    settings = {
        "compaction": {"keepRecentTokens": 300, "thresholdTokens": 3000},
        "pruning": {"enabled": False},
    }
    session_id = editor.setup(settings=settings)
    editor.require_method("contextd/compact")
    editor.append(long_turns(4))
    note = editor.wait_note("compacted (threshold)")
    assert note["level"] == INFO
    assert session_entries(editor, session_id, "compaction")


class StallingSummarizer:
    """A `remote` summarizer endpoint on 127.0.0.1 that answers only once released."""

    def __init__(self) -> None:
        self.received = threading.Event()
        self.release = threading.Event()
        stalling = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                stalling.received.set()
                stalling.release.wait(30)
                body = json.dumps({"summary": "a summary that came too late"}).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the daemon gave up on the request: that is the point
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/summarize"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stalling_summarizer() -> Iterator[StallingSummarizer]:
    summarizer = StallingSummarizer()
    yield summarizer
    summarizer.close()


def test_abort_command_stops_a_running_compaction(
    editor: Editor, stalling_summarizer: StallingSummarizer
) -> None:
    summarizer = {"provider": "remote", "remoteEndpoint": stalling_summarizer.url, "maxRetries": 0}
    session_id = editor.setup(settings={**COMPACTABLE, "summarizer": summarizer})
    editor.require_method("contextd/compact/abort")
    editor.append(long_turns(6))
    editor.command("ContextdCompact")
    editor.wait("require('contextd').statusline():find('compacting…', 1, true) ~= nil")
    assert stalling_summarizer.received.wait(15)
    editor.command("ContextdCompact")
    assert editor.wait_note("contextd: compact:")["level"] == WARN  # one is already running
    editor.command("ContextdAbort")
    editor.wait_note("compaction aborted")
    editor.wait("require('contextd').state().compacting == nil")
    assert "compacting" not in editor.statusline()
    assert not session_entries(editor, session_id, "compaction")
    assert all(note["level"] < ERROR for note in editor.notes()), editor.notes()


def test_handoff_moves_to_the_new_session(editor: Editor) -> None:
    old_id = editor.setup()
    editor.require_method("contextd/handoff")
    editor.append(CONVERSATION)
    editor.command("ContextdHandoff write the release notes")
    editor.wait_note("handed off")
    new_id = editor.state()["session_id"]
    assert new_id != old_id
    [handoff] = session_entries(editor, new_id, "handoff")
    assert handoff["fromSession"] == old_id
    assert handoff["document"]
    editor.wait("require('contextd').statusline() ~= ''")


def test_tree_selection_navigates_and_summarizes_the_branch_left(editor: Editor) -> None:
    session_id = editor.setup()
    editor.require_method("contextd/tree")
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    editor.answer_selects("First answer", "Summarize the branch")
    editor.command("ContextdTree")
    editor.wait_note("moved to")
    tree_prompt, question = editor.lua("return _G.selects")
    assert any("Second answer" in item for item in tree_prompt["items"])
    assert "summarize" in question["prompt"]
    state = editor.state()
    assert state["leaf_id"] not in (entry_ids[-1], None)
    summaries = session_entries(editor, session_id, "branch_summary")
    assert len(summaries) == 1 and summaries[0]["parentId"] == entry_ids[1]


def test_tree_navigation_to_a_user_message_offers_its_text(editor: Editor) -> None:
    session_id = editor.setup()
    editor.require_method("contextd/navigate")
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    editor.answer_selects("Now also update the README", "without a summary")
    editor.command("ContextdTree")
    editor.wait_note("unnamed register")
    assert editor.lua("return vim.fn.getreg('\"')") == "Now also update the README"
    assert editor.state()["leaf_id"] == entry_ids[1]
    assert not session_entries(editor, session_id, "branch_summary")


def test_label_command_labels_the_leaf_and_the_tree_shows_it(editor: Editor) -> None:
    session_id = editor.setup()
    editor.require_method("contextd/label")
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    editor.command("ContextdLabel checkpoint")
    editor.wait_note("labelled")
    [label] = session_entries(editor, session_id, "label")
    assert label["targetId"] == entry_ids[-1] and label["label"] == "checkpoint"

    editor.require_method("contextd/tree")
    # Without text: pick an entry, then an empty label clears it.
    editor.answer_selects("[checkpoint]")
    editor.answer_inputs("")
    editor.command("ContextdLabel")
    editor.wait_note("cleared the label")
    assert session_entries(editor, session_id, "label")[-1]["label"] is None


def test_fork_command_starts_a_session_from_an_entry(editor: Editor) -> None:
    old_id = editor.setup()
    editor.require_method("contextd/fork")
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    editor.command(f"ContextdFork {entry_ids[1]}")
    editor.wait_note("forked")
    new_id = editor.state()["session_id"]
    assert new_id != old_id
    assert editor.entries(new_id)[0]["parentSession"]["id"] == old_id
    assert message_texts(editor, new_id) == [
        "Fix the failing test in src/app.py",
        "First answer: the assertion compares the wrong field.",
    ]


def test_sessions_command_switches_sessions(editor: Editor) -> None:
    first = editor.setup(session_name="first session")
    editor.append(CONVERSATION)
    second = editor.setup(resume=False, session_name="second session")
    assert editor.statusline().startswith("ctx 0/")
    editor.answer_selects("first session")
    editor.command("ContextdSessions")
    editor.wait_note("switched to session")
    listed = editor.lua("return _G.selects")[0]["items"]
    assert any("second session" in item and item.startswith("●") for item in listed)
    assert editor.state()["session_id"] == first != second
    assert editor.statusline() == "ctx 84k/200k 42%"


def test_idle_command_compacts_a_session_left_idle(editor: Editor) -> None:
    session_id = editor.setup(settings={**COMPACTABLE, "idle": {"thresholdTokens": 1000}})
    editor.require_method("contextd/idle/configure")
    editor.command("ContextdIdle 1")
    editor.wait_note("idle compaction after 1 s")
    editor.append(long_turns(4))
    assert editor.wait_note("compacted (idle)")["level"] == INFO
    [compaction] = session_entries(editor, session_id, "compaction")
    assert compaction["reason"] == "idle"
    assert editor.state()["idle"]["state"] in ("armed", "fired", "cancelled")
    editor.command("ContextdIdle off")
    editor.wait_note("idle compaction off")


def test_an_automatic_handoff_moves_to_the_new_session(editor: Editor) -> None:
    settings = {
        "compaction": {"strategy": "handoff", "thresholdTokens": 3000, "keepRecentTokens": 300},
        "pruning": {"enabled": False},
    }
    old_id = editor.setup(settings=settings)
    editor.require_method("contextd/handoff")
    editor.append(long_turns(4))
    editor.wait_note("handed off to the new session")
    new_id = editor.state()["session_id"]
    assert new_id != old_id
    [handoff] = session_entries(editor, new_id, "handoff")
    assert handoff["fromSession"] == old_id


# --- health and help ---------------------------------------------------------------------


def health_report(editor: Editor) -> str:
    editor.command("checkhealth contextd")
    return "\n".join(editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))


def test_health_check_passes_with_the_daemon_running(editor: Editor) -> None:
    session_id = editor.setup()
    report = health_report(editor)
    assert "ERROR" not in report, report
    assert "Python found" in report
    assert (
        f"daemon running: contextd {editor.state()['server_version']}, session {session_id}"
        in report
    )


def test_health_check_starts_a_daemon_before_setup(editor: Editor) -> None:
    editor.lua(
        "require('contextd.config').set(...)",
        {
            "python": sys.executable,
            "data_dir": str(editor.data_dir),
            "workspace": str(editor.workspace),
            "settings": {"summarizer": {"apiKeyEnv": "CONTEXTD_TEST_NO_SUCH_KEY"}, "colour": 1},
        },
    )
    report = health_report(editor)
    assert "ERROR" not in report, report
    assert "daemon starts: contextd" in report
    assert "unknown settings: colour" in report
    assert "CONTEXTD_TEST_NO_SUCH_KEY is not set" in report


def test_health_check_reports_a_missing_python(editor: Editor) -> None:
    editor.lua("require('contextd.config').set({ python = '/nonexistent/python3' })")
    report = health_report(editor)
    assert "ERROR" in report and "/nonexistent/python3 is not executable" in report


def test_help_file_has_a_tag_for_every_command(editor: Editor, tmp_path: Path) -> None:
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN_DIR / "doc", doc)
    editor.command(f"helptags {doc}")
    tags = (doc / "tags").read_text()
    for tag in (
        "contextd.txt",
        ":ContextdStatus",
        ":ContextdCompact",
        ":ContextdCompactPreview",
        ":ContextdHandoff",
        ":ContextdTree",
        ":ContextdFork",
        ":ContextdLabel",
        ":ContextdSessions",
        ":ContextdIdle",
        ":ContextdAbort",
        "contextd.statusline()",
        "contextd.append_messages()",
        "contextd.get_context()",
        "contextd.on_token_usage()",
    ):
        assert f"{tag}\t" in tags, tag
