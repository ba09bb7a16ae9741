"""The Neovim plugin (editors/neovim) in a real headless Neovim against the real daemon.

Every Neovim found is tested: /usr/bin/nvim (0.7.2 on Debian), the `nvim` on PATH and any
listed in CONTEXTD_TEST_NVIM (os.pathsep-separated paths). vim.notify, vim.ui.select and
vim.ui.input are replaced inside Neovim to record what the user would see and to answer
the pickers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests import corpus
from tests.editors.neovim_support import (
    CONVERSATION,
    NEOVIMS,
    PLUGIN_DIR,
    Editor,
    Script,
    assistant,
    running_editor,
    shared_daemons,
    user,
)

LUALINE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "lualine"
INFO, WARN, ERROR = 2, 3, 4  # vim.log.levels
KOLKATA = ZoneInfo("Asia/Kolkata")  # Neovim runs in this zone (TZ), far from UTC


@pytest.fixture(params=[path for _, path in NEOVIMS], ids=[version for version, _ in NEOVIMS])
def editor(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Editor]:
    # Short, so that the socket path fits; the test's own, so no other daemon answers there.
    runtime_dir = Path(tempfile.mkdtemp(prefix="ctxd-run-"))
    try:
        with running_editor(request.param, tmp_path, runtime_dir) as started:
            started.nvim_path = request.param
            yield started
    finally:
        # A shared daemon outlives its editors for its grace period: it ends with the test.
        for pid in shared_daemons(tmp_path / "data"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        shutil.rmtree(runtime_dir, ignore_errors=True)


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
    for name in (  # :Contextd, and the older names, which keep working
        "Contextd",
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
        editor.base_options(),
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


def settle(editor: Editor) -> None:
    """Lets Neovim run what it has scheduled (a second message would come now)."""
    editor.lua("vim.wait(300, function() return false end)")


def test_a_bad_setting_is_reported_once_at_once_naming_the_key(editor: Editor) -> None:
    # The default start_timeout_ms (30 s) is longer than wait_note waits: the report
    # comes from the daemon's refusal, not from a timeout.
    editor.lua(
        "require('contextd').setup(...)",
        {**editor.base_options(), "settings": {"compaction": {"reserveTokens": "lots"}}},
    )
    note = editor.wait_note("refused the settings")
    settle(editor)
    assert editor.notes() == [note]
    assert note["level"] == ERROR
    assert "compaction.reserveTokens" in note["msg"]
    assert editor.lua("return vim.v.errmsg") == ""  # no Lua traceback from Neovim
    assert editor.state()["status"] == "exited"
    assert editor.statusline() == "ctx disconnected"
    report = health_report(editor)
    assert "refused the settings: settings.compaction.reserveTokens" in report


def test_wrong_options_are_refused_with_every_problem_named(editor: Editor) -> None:
    accepted = editor.lua(
        "return require('contextd').setup(...)",
        {**editor.base_options(), "cmd": 3, "resume": "yes", "colour": "red"},
    )
    assert accepted is False
    [note] = editor.notes()
    assert note["level"] == ERROR
    for named in (
        "cmd: expected a program path or a list of strings",
        "resume: expected boolean",
        "unknown option colour",
    ):
        assert named in note["msg"]
    assert editor.state()["status"] == "stopped"


def test_cmd_may_be_a_string_and_health_checks_it(editor: Editor) -> None:
    program = str(Path(sys.executable).parent / "contextd")
    session_id = editor.setup(cmd=program)
    assert editor.daemon_pid()
    report = health_report(editor)
    assert "ERROR" not in report, report
    assert f"daemon program: {program}" in report
    assert f"session {session_id}" in report


def test_the_daemon_dying_is_one_message_and_the_plugin_reconnects(editor: Editor) -> None:
    session_id = editor.setup(session_name="kept")
    editor.append(CONVERSATION)
    os.kill(editor.daemon_pid(), 9)
    note = editor.wait_note("the daemon exited")
    assert note["level"] == WARN and "reconnecting in 1 s" in note["msg"], note
    editor.wait("require('contextd').state().session_id ~= nil", 30000)
    assert editor.state()["session_id"] == session_id  # same options: same data dir, resumed
    assert editor.statusline() == "ctx 84k/200k 42%"
    settle(editor)
    assert editor.notes() == [note]  # Neovim's own "Client quit" notice is not repeated


def test_a_daemon_that_cannot_start_shows_what_it_said(editor: Editor, tmp_path: Path) -> None:
    program = tmp_path / "broken-contextd"
    program.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named contextd' >&2\nexit 1\n")
    program.chmod(0o755)
    editor.lua("require('contextd').setup(...)", {**editor.base_options(), "cmd": str(program)})
    note = editor.wait_note("before it started")
    assert note["level"] == ERROR
    assert "No module named contextd" in note["msg"] and ":checkhealth contextd" in note["msg"]


def test_setup_without_options_restarts_with_those_in_effect(editor: Editor) -> None:
    session_id = editor.setup(session_name="first")
    editor.append(CONVERSATION)
    editor.lua("require('contextd').setup()")
    editor.wait("require('contextd').state().session_id ~= nil")
    assert editor.state()["session_id"] == session_id
    assert editor.lua("return require('contextd.config').options.data_dir") == str(editor.data_dir)


def test_autostart_false_starts_the_daemon_on_first_use(editor: Editor) -> None:
    editor.lua("require('contextd').setup(...)", {**editor.base_options(), "autostart": False})
    assert editor.state()["status"] == "stopped"
    assert editor.statusline() == ""
    with pytest.raises(AssertionError):
        editor.daemon_pid()
    editor.command("Contextd status")
    note = editor.wait_note("session ")
    assert note["level"] == INFO
    assert editor.state()["status"] == "running"


def test_the_synchronous_api_gives_up_on_a_hung_daemon(editor: Editor) -> None:
    editor.setup()
    editor.lua("require('contextd.config').options.timeout_ms = 1000")
    pid = editor.daemon_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        result, err = editor.call_api("append_messages", [user("anyone there?")])
    finally:
        os.kill(pid, signal.SIGCONT)
    assert result is None
    assert err["message"] == "no answer from the daemon within 1000 ms"


def test_notifications_are_titled_and_name_no_rpc_method(editor: Editor) -> None:
    editor.setup()
    editor.command("Contextd compact")
    editor.command("Contextd status")
    editor.command("Contextd idle soon")
    editor.wait("#_G.notes >= 3")
    for note in editor.notes():
        assert note["title"] == "contextd", note
        assert "contextd/" not in note["msg"] and "session/" not in note["msg"], note


# --- commands ----------------------------------------------------------------------------


def test_status_command_shows_the_session(editor: Editor) -> None:
    session_id = editor.setup()
    editor.append(CONVERSATION)
    editor.command("ContextdStatus")
    note = editor.wait_note("session " + session_id)
    assert note["level"] == INFO
    assert "84,000 / 200,000 tokens (42%)" in note["msg"]
    parts = re.search(r"instructions ([\d,]+) · summary ([\d,]+) · messages ([\d,]+) · unseen ([\d,]+)", note["msg"])
    assert parts is not None, note["msg"]
    assert sum(int(part.replace(",", "")) for part in parts.groups()) == 84_000  # where the tokens are


def test_an_unknown_idle_argument_is_an_error(editor: Editor) -> None:
    editor.setup()
    editor.command("Contextd idle soon")
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
    editor.append(long_turns(6))
    editor.command("Contextd compact focus on the parser")
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
    editor.append(long_turns(6))
    before = editor.entries(session_id)
    editor.command("Contextd preview")
    note = editor.wait_note("compaction preview")
    assert "summarize" in note["msg"] and "tokens" in note["msg"]
    assert editor.entries(session_id) == before
    # The preview summary opens in a buffer of its own, as Markdown.
    editor.wait("vim.api.nvim_buf_get_name(0):find('contextd://preview/', 1, true) ~= nil")
    shown = "\n".join(editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))
    assert shown.startswith("#") or "##" in shown, shown[:200]
    assert editor.lua("return vim.bo.filetype") == "markdown"


def test_nothing_to_compact_is_information_not_an_error(editor: Editor) -> None:
    editor.setup()
    editor.command("ContextdCompact")
    note = editor.wait_note("contextd: compact:")
    assert note["level"] == INFO
    editor.command("Contextd abort")
    assert editor.wait_note("no compaction is running")["level"] == INFO


def test_an_automatic_compaction_is_announced(editor: Editor) -> None:
    settings = {
        "compaction": {"keepRecentTokens": 300, "thresholdTokens": 3000},
        "pruning": {"enabled": False},
    }
    session_id = editor.setup(settings=settings)
    editor.append(long_turns(4))
    note = editor.wait_note("compacted (threshold)")
    assert note["level"] == INFO
    [compaction] = session_entries(editor, session_id, "compaction")
    assert note["msg"].endswith(f"tokens: {compaction['shortSummary']}")  # what it kept, in a line


def test_a_full_session_with_nothing_to_compact_says_why_and_what_to_do_once(editor: Editor) -> None:
    # The recent part a compaction keeps holds the whole history: past the threshold, nothing to fold.
    settings = {"compaction": {"keepRecentTokens": 100_000, "thresholdTokens": 3000}, "pruning": {"enabled": False}}
    session_id = editor.setup(settings=settings)
    editor.append(long_turns(4))
    note = editor.wait_note("not compacted: the threshold compaction found nothing to compact: the history's")
    assert note["level"] == WARN
    assert "fit in the 100,000 recent tokens a compaction keeps" in note["msg"]
    assert "what to do: :Contextd handoff continues in a fresh session" in note["msg"]
    assert not session_entries(editor, session_id, "compaction")

    # Still over the threshold: the next append does not say it again; the status keeps saying it.
    editor.append(long_turns(5)[8:])
    editor.command("Contextd status")  # answered after the append's triggers ran
    status = editor.wait_note("session " + session_id)["msg"]
    assert "not compacted: the threshold compaction found nothing to compact" in status
    assert "what to do: :Contextd handoff" in status
    announced = [n for n in editor.notes() if "not compacted" in n["msg"] and n["msg"] != status]
    assert len(announced) == 1, announced


def test_a_full_context_promoted_to_a_larger_model_says_so_once(editor: Editor) -> None:
    settings = {
        "models": {"claude-sonnet-4-5-1m": {"contextWindow": 1_000_000}},
        "compaction": {"promotion": [{"from": "claude-4", "to": "claude-sonnet-4-5-1m"}]},
    }
    session_id = editor.setup(settings=settings, model="claude-sonnet-4-5")
    editor.append(CONVERSATION)
    overflow = {
        "role": "assistant",
        "content": [{"type": "text", "text": "partial"}],
        "stopReason": "error",
        "errorKind": "context_overflow",
        "errorMessage": "prompt is too long: 212000 tokens > 200000 maximum",
        "model": "claude-sonnet-4-5",
    }
    editor.append([user("And the changelog"), overflow])
    note = editor.wait_note("the context was full")
    assert note["level"] == INFO
    assert "moved from claude-sonnet-4-5 (200k) to claude-sonnet-4-5-1m (1.0M)" in note["msg"]
    assert "send the request again" in note["msg"]
    editor.wait("require('contextd').statusline():find('/1.0M', 1, true) ~= nil")
    settle(editor)
    assert editor.notes() == [note]
    assert not session_entries(editor, session_id, "compaction")


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
    editor.append(long_turns(6))
    editor.command("ContextdCompact")
    editor.wait("require('contextd').statusline():find('compacting…', 1, true) ~= nil")
    assert stalling_summarizer.received.wait(15)
    editor.command("ContextdCompact")
    assert editor.wait_note("contextd: compact:")["level"] == WARN  # one is already running
    editor.command("Contextd abort")
    editor.wait_note("compaction aborted")
    editor.wait("require('contextd').state().compacting == nil")
    assert "compacting" not in editor.statusline()
    assert not session_entries(editor, session_id, "compaction")
    assert all(note["level"] < ERROR for note in editor.notes()), editor.notes()


def stalling_settings(stalling: StallingSummarizer) -> dict[str, Any]:
    summarizer = {"provider": "remote", "remoteEndpoint": stalling.url, "maxRetries": 0}
    return {**COMPACTABLE, "summarizer": summarizer}


def test_aborting_a_handoff_leaves_nothing_waiting(
    editor: Editor, stalling_summarizer: StallingSummarizer
) -> None:
    old_id = editor.setup(settings=stalling_settings(stalling_summarizer))
    editor.append(long_turns(6))
    editor.command("Contextd handoff")
    assert stalling_summarizer.received.wait(15)
    editor.wait("require('contextd').state().compacting ~= nil")
    editor.command("Contextd abort")
    note = editor.wait_note("aborted")
    editor.wait("require('contextd').state().compacting == nil")
    # Neovim drops the -32800 reply; the plugin still settled the request.
    editor.wait("require('contextd.state').handoff_requested == nil")
    assert editor.lua("return #require('contextd.client').pending_ids('contextd/handoff')") == 0
    settle(editor)
    assert editor.notes() == [note]
    assert editor.state()["session_id"] == old_id


def test_aborting_a_branch_summary(editor: Editor, stalling_summarizer: StallingSummarizer) -> None:
    session_id = editor.setup(settings=stalling_settings(stalling_summarizer))
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    lines = open_tree(editor)
    press_on(editor, lines, "First answer", "s")
    assert stalling_summarizer.received.wait(15)
    editor.wait("require('contextd').statusline():find('summarizing branch…', 1, true) ~= nil")
    editor.command("Contextd abort")
    note = editor.wait_note("branch summary aborted")
    editor.wait("require('contextd').state().compacting == nil")
    settle(editor)
    assert editor.notes() == [note]
    assert editor.state()["leaf_id"] == entry_ids[-1]
    assert not session_entries(editor, session_id, "branch_summary")
    assert editor.lua("return #require('contextd.client').pending_ids('contextd/navigate')") == 0


def test_handoff_moves_to_the_new_session(editor: Editor) -> None:
    old_id = editor.setup()
    editor.append(CONVERSATION)
    editor.command("Contextd handoff write the release notes")
    editor.wait_note("handed off")
    new_id = editor.state()["session_id"]
    assert new_id != old_id
    [handoff] = session_entries(editor, new_id, "handoff")
    assert handoff["fromSession"] == old_id
    assert handoff["document"]
    editor.wait("require('contextd').statusline() ~= ''")
    # The document is in a buffer ready to copy.
    editor.wait("vim.api.nvim_buf_get_name(0):find('contextd://handoff/', 1, true) ~= nil")
    shown = editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
    assert "\n".join(shown) == handoff["document"]


BRANCHED = [user("Try the other approach"), assistant("Third answer: other approach tried.", 2000)]


def open_tree(editor: Editor) -> list[str]:
    """`:Contextd tree`; the floating window's lines once it is up."""
    editor.command("Contextd tree")
    editor.wait("vim.api.nvim_win_get_config(0).relative ~= ''")
    return editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")


def press_on(editor: Editor, lines: list[str], text: str, key: str) -> None:
    """Puts the cursor on the tree line showing `text` and presses `key`."""
    [row] = [i + 1 for i, line in enumerate(lines) if text in line]
    editor.lua("vim.api.nvim_win_set_cursor(0, { ..., 0 })", row)
    editor.nvim.input(key)


def test_the_tree_window_draws_branches_and_starts_on_the_leaf(editor: Editor) -> None:
    editor.setup()
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    # A second branch after the first answer.
    editor.lua(
        "require('contextd.client').request_sync('contextd/navigate',"
        " { sessionId = require('contextd').state().session_id, targetId = ... })",
        entry_ids[1],
    )
    leaf = editor.append(BRANCHED)["leafId"]
    lines = open_tree(editor)
    assert "<CR>" in lines[0] and "summarize" in lines[0]  # the keys, on top
    body = lines[1:]
    assert any(line.startswith("  user: Fix the failing test") for line in body)
    assert any("├─ user: Now also update the README" in line for line in body)
    assert any("│  assistant: Second answer" in line for line in body)
    assert any("└─ user: Try the other approach" in line for line in body)
    row = editor.lua("return vim.api.nvim_win_get_cursor(0)[1]")
    assert lines[row - 1].startswith("● ") and "Third answer" in lines[row - 1]
    assert editor.state()["leaf_id"] == leaf
    editor.nvim.input("q")
    editor.wait("vim.api.nvim_win_get_config(0).relative == ''")


def test_tree_key_s_navigates_and_summarizes_the_branch_left_in_one_message(editor: Editor) -> None:
    session_id = editor.setup()
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    lines = open_tree(editor)
    press_on(editor, lines, "First answer", "s")
    note = editor.wait_note("moved to")
    assert "summarized the branch left" in note["msg"]
    settle(editor)
    assert editor.notes() == [note]
    summaries = session_entries(editor, session_id, "branch_summary")
    assert len(summaries) == 1 and summaries[0]["parentId"] == entry_ids[1]
    assert any("summarizing branch…" in seen for seen in editor.lua("return _G.seen"))
    assert "summarizing" not in editor.statusline()


def test_tree_key_enter_on_a_user_message_offers_its_text_in_one_message(editor: Editor) -> None:
    session_id = editor.setup()
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    lines = open_tree(editor)
    press_on(editor, lines, "Now also update the README", "<CR>")
    note = editor.wait_note("moved to")
    settle(editor)
    assert editor.notes() == [note] and "unnamed register" in note["msg"]
    assert editor.lua("return vim.fn.getreg('\"')") == "Now also update the README"
    assert editor.state()["leaf_id"] == entry_ids[1]
    assert not session_entries(editor, session_id, "branch_summary")


def test_the_tree_marks_what_a_compaction_folded(editor: Editor) -> None:
    editor.setup(settings=COMPACTABLE)
    editor.append(long_turns(6))
    editor.command("Contextd compact")
    editor.wait_note("compacted")
    lines = open_tree(editor)
    folded = [line for line in lines if line.startswith("○ ")]
    assert any("Turn 0:" in line for line in folded)
    assert not any(line.startswith("○ ") and "compaction " in line for line in lines[-2:])


def test_the_tree_shows_each_compactions_short_summary_on_its_line(editor: Editor) -> None:
    session_id = editor.setup(settings=COMPACTABLE)
    editor.append(long_turns(6))
    editor.command("Contextd compact")
    editor.wait_note("compacted")
    editor.append(long_turns(3))
    editor.command("Contextd compact")
    editor.wait("#vim.tbl_filter(function(n) return n.msg:find('compacted') end, _G.notes) == 2")
    compactions = session_entries(editor, session_id, "compaction")
    assert len(compactions) == 2
    lines = open_tree(editor)
    for compaction in compactions:
        short = compaction["shortSummary"]
        assert len(short) > 60  # longer than a preview: shown whole, not cut
        before, after = (short_tokens(compaction[k]) for k in ("tokensBefore", "tokensAfter"))
        [line] = [line for line in lines if short in line]
        assert f"compaction {before} → {after}: {short}" in line


def short_tokens(count: int) -> str:
    """A token figure as the plugin writes it: 950, 84k."""
    return str(count) if count < 1000 else f"{int(count / 1000 + 0.5)}k"


def test_a_branch_too_big_to_summarize_says_so_and_nothing_moves(editor: Editor) -> None:
    session_id = editor.setup(settings={"branchSummary": {"reserveTokens": 200000}})
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    lines = open_tree(editor)
    press_on(editor, lines, "First answer", "s")
    note = editor.wait_note("does not fit the summary budget")
    assert note["level"] == WARN
    assert "branchSummary.reserveTokens" in note["msg"] and "without a summary" in note["msg"]
    assert editor.state()["leaf_id"] == entry_ids[-1]
    assert not session_entries(editor, session_id, "branch_summary")
    assert "summarizing" not in editor.statusline()


def test_label_command_labels_the_leaf_and_an_empty_label_clears_it(editor: Editor) -> None:
    session_id = editor.setup()
    entry_ids = editor.append(CONVERSATION)["entryIds"]
    editor.command("Contextd label checkpoint")
    editor.wait_note("labelled")
    [label] = session_entries(editor, session_id, "label")
    assert label["targetId"] == entry_ids[-1] and label["label"] == "checkpoint"

    # Without text: pick an entry, then an empty label clears it.
    editor.answer_selects("[checkpoint]")
    editor.answer_inputs("")
    editor.command("Contextd label")
    editor.wait_note("cleared the label")
    assert session_entries(editor, session_id, "label")[-1]["label"] is None


def test_clearing_a_label_works_where_empty_input_reads_as_nil(editor: Editor) -> None:
    # Neovim 0.7's vim.ui.input answers nil for an empty line, as for a cancelled one.
    session_id = editor.setup()
    editor.append(CONVERSATION)
    editor.command("Contextd label checkpoint")
    editor.wait_note("labelled")
    editor.answer_selects("[checkpoint]", "Clear the label")
    editor.answer_inputs()  # the input answers nil
    editor.command("Contextd label")
    editor.wait_note("cleared the label")
    assert session_entries(editor, session_id, "label")[-1]["label"] is None


def test_fork_command_starts_a_session_from_an_entry(editor: Editor) -> None:
    old_id = editor.setup()
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
    editor.command("Contextd sessions")
    editor.wait_note("switched to session")
    listed = editor.lua("return _G.selects")[0]["items"]
    assert any("second session" in item and item.startswith("●") for item in listed)
    assert editor.state()["session_id"] == first != second
    assert editor.statusline() == "ctx 84k/200k 42%"


def write_damaged_session(editor: Editor, session_id: str) -> None:
    """A session file whose first line is no header, beside the workspace's good ones."""
    [sessions] = editor.data_dir.glob("workspaces/*/sessions")
    (sessions / f"{session_id}.jsonl").write_bytes(b"\x00\xff\xfe" * 1000)


def test_a_damaged_session_is_listed_with_its_reason_and_never_opened(editor: Editor) -> None:
    good = editor.setup(session_name="good session")
    editor.append(CONVERSATION)
    write_damaged_session(editor, "broken")
    editor.answer_selects("broken")
    editor.command("Contextd sessions")
    note = editor.wait_note("session broken is damaged")
    listed = editor.lua("return _G.selects")[0]["items"]
    assert "  ✗ damaged: its first line is not a session header · broken" in listed
    assert note["level"] == WARN and "its first line is not a session header" in note["msg"]
    assert editor.state()["session_id"] == good
    # Completion offers only what can be switched to.
    assert editor.lua("return vim.fn.getcompletion('Contextd sessions ', 'cmdline')") == [
        f"{good} good session"
    ]
    # A restart resumes the newest session that opens, not the newer damaged file.
    editor.lua("require('contextd').stop()")
    assert editor.setup() == good
    assert editor.statusline() == "ctx 84k/200k 42%"
    assert not [n for n in editor.notes() if n["level"] == ERROR]


def test_idle_command_compacts_a_session_left_idle(editor: Editor) -> None:
    session_id = editor.setup(settings={**COMPACTABLE, "idle": {"thresholdTokens": 1000}})
    editor.command("Contextd idle 1")
    editor.wait_note("idle compaction after 1 s")
    editor.append(long_turns(4))
    assert editor.wait_note("compacted (idle)")["level"] == INFO
    [compaction] = session_entries(editor, session_id, "compaction")
    assert compaction["reason"] == "idle"
    assert editor.state()["idle"]["state"] in ("armed", "fired", "cancelled")
    editor.command("Contextd idle off")
    editor.wait_note("idle compaction off")


def test_an_automatic_handoff_moves_to_the_new_session(editor: Editor) -> None:
    settings = {
        "compaction": {"strategy": "handoff", "thresholdTokens": 3000, "keepRecentTokens": 300},
        "pruning": {"enabled": False},
    }
    old_id = editor.setup(settings=settings)
    editor.append(long_turns(4))
    editor.wait_note("handed off to the new session")
    new_id = editor.state()["session_id"]
    assert new_id != old_id
    [handoff] = session_entries(editor, new_id, "handoff")
    assert handoff["fromSession"] == old_id


# --- one shared daemon -------------------------------------------------------------------


def test_two_neovims_share_one_daemon_and_see_each_others_appends(
    editor: Editor, tmp_path: Path
) -> None:
    with running_editor(editor.nvim_path, tmp_path / "second", editor.runtime_dir) as second:
        second.data_dir, second.workspace = editor.data_dir, editor.workspace
        first_id = editor.setup(shared=True)
        editor.append(CONVERSATION)
        assert second.setup(shared=True) == first_id
        assert not second.notes()  # no error, no new empty session
        assert len(shared_daemons(editor.data_dir)) == 1
        second.wait("require('contextd').statusline() == 'ctx 84k/200k 42%'")
        second.append([user("Asked from the second editor")])
        context, err = editor.call_api("get_context")
        assert err is None
        assert context["messages"][-1]["content"] == "Asked from the second editor"
        editor.append([assistant("Answered in the first editor.", 85000)])
        second.wait("require('contextd').statusline() == 'ctx 85k/200k 43%'")


@pytest.fixture
def script(editor: Editor) -> Iterator[Callable[[], Script]]:
    """A script on the editor's shared daemon; the editor must have attached first."""
    started: list[Script] = []

    def start() -> Script:
        started.append(Script(editor))
        return started[-1]

    yield start
    for each in started:
        each.close()


def drive_a_session(script: Callable[[], Script]) -> tuple[Script, str]:
    """A script opens a session of the workspace and appends a turn at 120k tokens."""
    driver = script()
    driven = driver.open("driven by a script")
    driver.append(driven, [user("Refactor the parser"), assistant("Parser refactored.", 120000)])
    return driver, driven


def test_the_statusline_shows_the_session_a_script_drives_without_opening_it(
    editor: Editor, script: Callable[[], Script]
) -> None:
    own = editor.setup(shared=True)
    editor.append(CONVERSATION)
    editor.wait("require('contextd').statusline() == 'ctx 84k/200k 42%'")
    driver, driven = drive_a_session(script)
    editor.wait("require('contextd').statusline() == 'ctx 120k/200k 60%'")
    state = editor.state()
    assert state["session_id"] == own  # commands and the API stay on this editor's session
    assert state["shown"]["session_id"] == driven and not state["shown"]["current"]
    assert not editor.notes()
    editor.command("Contextd status")
    status = editor.wait_note("the statusline shows")["msg"]
    assert f"session {own}" in status
    assert f'the latest change: another session "driven by a script" ({driven})' in status
    # This editor's own append is now the latest change.
    editor.append([user("One more thing"), assistant("Done.", 86000)])
    editor.wait("require('contextd').statusline() == 'ctx 86k/200k 43%'")
    driver.append(driven, [user("And the lexer"), assistant("Lexer too.", 130000)])
    editor.wait("require('contextd').statusline() == 'ctx 130k/200k 65%'")


def test_a_deleted_session_leaves_the_statusline_and_the_editor_continues_in_a_new_one(
    editor: Editor, script: Callable[[], Script]
) -> None:
    own = editor.setup(shared=True)
    editor.append(CONVERSATION)
    driver, driven = drive_a_session(script)
    editor.wait("require('contextd').statusline() == 'ctx 120k/200k 60%'")
    # The shown session is deleted: the statusline goes back to this editor's.
    driver.run(driver.client.delete_session(driven))
    editor.wait("require('contextd').statusline() == 'ctx 84k/200k 42%'")
    # This editor's session is deleted: one message, and a new session to work in.
    driver.run(driver.client.delete_session(own))
    note = editor.wait_note("was deleted")
    assert note["level"] == WARN and own in note["msg"]
    editor.wait("require('contextd').state().session_id ~= nil")
    new = editor.state()["session_id"]
    assert new != own
    editor.append([user("Still working")])
    assert message_texts(editor, new) == ["Still working"]
    settle(editor)
    assert editor.notes() == [note]


def test_statusline_session_current_keeps_to_this_editors_session(
    editor: Editor, script: Callable[[], Script]
) -> None:
    own = editor.setup(shared=True, statusline_session="current")
    editor.append(CONVERSATION)
    _, driven = drive_a_session(script)
    # The activity arrived (and is kept), yet the statusline stays on this editor's session.
    editor.lua("_G.driven = ...", driven)
    editor.wait("(require('contextd.state').latest or {}).sessionId == _G.driven")
    assert editor.statusline() == "ctx 84k/200k 42%"
    assert editor.state()["shown"]["session_id"] == own


def test_the_session_picker_lists_other_clients_sessions_and_opens_the_chosen(
    editor: Editor, script: Callable[[], Script]
) -> None:
    own = editor.setup(shared=True, session_name="the editor's session")
    editor.append(CONVERSATION)
    driver, driven = drive_a_session(script)
    editor.answer_selects("driven by a script")
    editor.command("Contextd sessions")
    editor.wait_note("switched to session")
    listed = editor.lua("return _G.selects")[0]["items"]
    assert any("the editor's session" in item and item.startswith("●") for item in listed)
    assert editor.state()["session_id"] == driven != own
    assert editor.statusline() == "ctx 120k/200k 60%"
    # The chosen session is the editor's now: its appends reach the script's session.
    editor.append([user("Continued in Neovim")])
    messages = driver.run(driver.client.context(driven))["messages"]
    assert messages[-1]["content"] == "Continued in Neovim"


# --- mirrors of other agents' sessions, followed by the shared daemon ----------------------

class FollowedTranscript:
    """A real Claude Code transcript (tests/fixtures/real) written into a Claude Code folder
    as the agent would, its working directory moved to the editor's workspace."""

    def __init__(self, root: Path, workspace: Path, name: str = "claude-code-atlas-short") -> None:
        self.root = root
        self.path = root / "-workspace" / f"5b2f0c1e-{name}.jsonl"
        self.path.parent.mkdir(parents=True)
        self.lines = []
        for line in corpus.read_text(f"{name}.jsonl.gz").splitlines():
            record = json.loads(line)
            if record.get("cwd"):
                record["cwd"] = str(workspace)
            self.lines.append(json.dumps(record))
        self.written = 0

    def write(self, count: int) -> None:
        """Appends the next `count` lines, as the agent writes them."""
        with self.path.open("a") as transcript:
            for line in self.lines[self.written : self.written + count]:
                transcript.write(line + "\n")
        self.written = min(self.written + count, len(self.lines))


# This editor's own session, at a figure far from the mirrored transcript's (84k).
SMALL_CONVERSATION = [user("Fix the failing test in src/app.py"), assistant("Fixed.", 30000)]


def percent(value: float) -> str:
    return f"{int(value + 0.5)}%"


def mirror_statusline(usage: dict[str, Any]) -> str:
    tokens, window = (short_tokens(usage[k]) for k in ("tokens", "contextWindow"))
    return f"Claude Code {tokens}/{window} {percent(usage['percent'])}"


def owner_names_claude_root(tmp_path: Path) -> None:
    """A followed root beyond ~/.claude/projects is the daemon owner's to name, not a
    client's (protocol.md, Who may connect): the user settings file names the test's
    folder before the shared daemon starts, and the plugin's contextd/follow may then use it."""
    user_file = tmp_path / "home" / "config" / "contextd" / "settings.json"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text(json.dumps({"follow": {"roots": {"claude-code": str(tmp_path / "claude")}}}))


def follow_claude_code(
    editor: Editor, driver: Script, tmp_path: Path
) -> tuple[str, FollowedTranscript]:
    """The shared daemon follows a Claude Code folder where a session is being written: half
    of it at first (the mirror appears), then the rest (it changes). The mirror's id."""
    transcript = FollowedTranscript(tmp_path / "claude", editor.workspace)
    transcript.write(len(transcript.lines) // 2)
    roots = {"claude-code": str(transcript.root)}
    driver.run(
        driver.client.request(
            "contextd/follow", {"enabled": True, "agents": ["claude-code"], "roots": roots}
        )
    )
    for _ in range(300):
        rows = driver.run(driver.client.session_list(workspace=editor.workspace))["sessions"]
        mirror = next((row for row in rows if row.get("source")), None)
        if mirror:
            break
        editor.lua("vim.wait(100)")
    else:
        pytest.fail("the daemon made no mirror of the transcript")
    assert mirror["source"] == {"agent": "claude-code", "path": str(transcript.path)}
    transcript.write(len(transcript.lines))
    return mirror["sessionId"], transcript


def wait_for_mirror_figure(editor: Editor, driver: Script, mirror: str) -> str:
    """Waits until the statusline shows the mirror's figure as the daemon has it now (the
    mirror may still be taking in the last lines); returns it."""
    for _ in range(300):
        expected = mirror_statusline(driver.run(driver.client.state(mirror))["usage"])
        if editor.statusline() == expected:
            return expected
        editor.lua("vim.wait(100)")
    pytest.fail(f"the statusline shows {editor.statusline()!r}, the mirror is at {expected!r}")


def test_a_mirrored_claude_code_session_shows_in_the_statusline_with_the_agents_name(
    editor: Editor, script: Callable[[], Script], tmp_path: Path
) -> None:
    owner_names_claude_root(tmp_path)
    own = editor.setup(shared=True)
    editor.append(SMALL_CONVERSATION)
    editor.wait("require('contextd').statusline() == 'ctx 30k/200k 15%'")
    driver = script()
    mirror, transcript = follow_claude_code(editor, driver, tmp_path)
    shown = wait_for_mirror_figure(editor, driver, mirror)
    assert shown.startswith("Claude Code ") and "ctx" not in shown
    state = editor.state()
    assert state["session_id"] == own
    assert state["shown"]["session_id"] == mirror
    assert state["shown"]["source"] == {"agent": "claude-code", "path": str(transcript.path)}
    assert not editor.notes()


def test_a_mirror_is_picked_by_its_agents_name_and_refuses_writes_clearly(
    editor: Editor, script: Callable[[], Script], tmp_path: Path
) -> None:
    owner_names_claude_root(tmp_path)
    own = editor.setup(shared=True, session_name="the editor's session")
    editor.append(SMALL_CONVERSATION)
    driver = script()
    mirror, transcript = follow_claude_code(editor, driver, tmp_path)
    wait_for_mirror_figure(editor, driver, mirror)

    editor.answer_selects("Claude Code")
    editor.command("Contextd sessions")
    editor.wait_note("switched to session")
    listed = editor.lua("return _G.selects")[0]["items"]
    [item] = [item for item in listed if mirror in item]
    [row] = [
        row
        for row in driver.run(driver.client.session_list())["sessions"]
        if row["sessionId"] == mirror
    ]
    name = row["name"] or transcript.path.name  # an unnamed mirror by its file's name
    assert item.startswith(f"  Claude Code · {name} (read-only mirror) · ")
    assert editor.state()["session_id"] == mirror
    assert editor.state()["source"] == {"agent": "claude-code", "path": str(transcript.path)}

    for command in ("Contextd compact", "Contextd label checkpoint", "Contextd idle 60"):
        editor.lua("_G.notes = {}")
        editor.command(command)
        note = editor.wait_note("read-only mirror")
        assert note["level"] == WARN
        assert "read-only mirror of a Claude Code session" in note["msg"]
        assert "handoff starts a session of your own" in note["msg"]
    _, err = editor.call_api("append_messages", [user("not here")])
    assert err["code"] == -32008
    editor.command("Contextd status")
    status = editor.wait_note("session " + mirror)["msg"]
    assert f"read-only mirror of a Claude Code session: {transcript.path}" in status
    # Who compacts it, where, and how the daemon knows: the point Claude Code's rule gives.
    point = driver.run(driver.client.state(mirror))["usage"]["agentCompaction"]
    assert point["enabled"] and point["tokens"] == 167_000  # the fixture's 200k model, no settings
    assert "Claude Code compacts this session itself at ~167k tokens (84%); contextd never compacts a mirror" in status
    assert f"how contextd knows: {point['basis']}" in status
    editor.command("Contextd preview")  # a dry run reads only
    assert "compaction preview" in editor.wait_note("compaction preview")["msg"]

    # Started again, the editor resumes its own session, not the newer mirror, and shows the
    # mirror, the workspace's latest change, from the start.
    editor.lua("_G.notes = {}")
    assert editor.setup(shared=True, session_name="the editor's session") == own
    wait_for_mirror_figure(editor, driver, mirror)
    assert not editor.notes()


def test_an_unnamed_mirror_is_listed_by_its_transcripts_file_name(editor: Editor) -> None:
    row = {
        "sessionId": "codex-rollout-1-0a1b2c3d",
        "name": None,
        "entries": 3,
        "tokens": 1200,
        "updatedAt": "2026-11-23T10:00:00.000Z",
        "source": {"agent": "codex", "path": "/home/me/.codex/sessions/2026/11/23/rollout-1.jsonl"},
    }
    item = editor.lua("return require('contextd.format').session_item(..., nil)", row)
    assert item.startswith(
        "  Codex · rollout-1.jsonl (read-only mirror) · 3 entries · 1k tokens · "
    )


def test_a_mirrors_status_says_when_its_agent_does_not_compact_on_its_own(editor: Editor) -> None:
    basis = "DISABLE_AUTO_COMPACT is set in the environment: Claude Code does not compact on its own (/compact still does)"
    off = {"enabled": False, "tokens": None, "percent": None, "basis": basis}
    lines = editor.lua("return require('contextd.format').agent_point_lines('Claude Code', ...)", off)
    assert lines == [
        "Claude Code does not compact this session on its own (its auto-compaction is off); contextd never compacts a mirror",
        f"how contextd knows: {basis}",
    ]


def test_follow_settings_of_setup_reach_the_shared_daemon(editor: Editor, tmp_path: Path) -> None:
    owner_names_claude_root(tmp_path)
    # The shared daemon does not take daemon-wide settings from an editor's initialize: the
    # plugin asks it to follow (contextd/follow), and the agent's session shows.
    transcript = FollowedTranscript(tmp_path / "claude", editor.workspace)
    transcript.write(len(transcript.lines))
    roots = {"claude-code": str(transcript.root)}
    follow = {"enabled": True, "agents": ["claude-code"], "roots": roots}
    editor.setup(shared=True, settings={"follow": follow})
    editor.wait("require('contextd').statusline():find('^Claude Code ') ~= nil")
    shown = editor.state()["shown"]
    assert shown["source"] == {"agent": "claude-code", "path": str(transcript.path)}
    assert editor.statusline() == mirror_statusline(shown["usage"])
    assert not editor.notes()


def test_a_mirrors_own_compactions_are_announced_and_shown_in_its_tree(
    editor: Editor, tmp_path: Path
) -> None:
    owner_names_claude_root(tmp_path)
    # A real Claude Code session that compacted itself twice (two compact boundaries).
    transcript = FollowedTranscript(
        tmp_path / "claude", editor.workspace, "claude-code-atlas-sonnet45"
    )
    boundaries = [i for i, line in enumerate(transcript.lines) if '"compact_boundary"' in line]
    assert len(boundaries) == 2
    transcript.write(boundaries[1])  # up to the second compaction
    follow = {
        "enabled": True,
        "agents": ["claude-code"],
        "roots": {"claude-code": str(transcript.root)},
    }
    editor.setup(shared=True, settings={"follow": follow})
    editor.wait("require('contextd').statusline():find('^Claude Code ') ~= nil")
    editor.answer_selects("Claude Code")
    editor.command("Contextd sessions")
    editor.wait_note("switched to session")

    transcript.write(len(transcript.lines))  # the agent compacts again, and goes on
    note = editor.wait_note("Claude Code compacted its context")
    assert note["level"] == INFO

    tree = editor.lua(
        "return require('contextd.client').request_sync('contextd/tree',"
        " { sessionId = require('contextd').state().session_id })"
    )
    compactions = [node for node in tree["nodes"] if node["type"] == "compaction"]
    assert len(compactions) == 2
    saved = {
        node["id"]: f"{short_tokens(node['tokensBefore'])} → {short_tokens(node['tokensAfter'])}"
        for node in compactions
    }
    assert f"{saved[compactions[1]['id']]} tokens" in note["msg"]  # the one made while followed
    lines = open_tree(editor)
    assert lines[0].startswith("read-only mirror of a Claude Code session · f fork")
    for node in compactions:
        assert any(
            f"compaction {saved[node['id']]}: {node['shortSummary']}" in line for line in lines
        )


# --- statusline, lualine, completion, local times ----------------------------------------

NEAR_THRESHOLD = {
    "compaction": {"enabled": False, "thresholdTokens": 90000},
    "idle": {"thresholdTokens": 1000},
}
OVER_THRESHOLD = [user("And the changelog"), assistant("Changelog written.", 95000)]


def test_the_statusline_shows_starting_the_threshold_cue_and_idle_in_local_time(
    editor: Editor,
) -> None:
    starting = editor.lua(
        "require('contextd').setup(...); return require('contextd').statusline()",
        {**editor.base_options(), "settings": NEAR_THRESHOLD},
    )
    assert starting == "ctx starting…"
    editor.wait("require('contextd').state().session_id ~= nil")
    editor.append(CONVERSATION)
    editor.wait("require('contextd').statusline() == 'ctx 84k/200k 42% !'")
    assert editor.lua("return require('contextd').level()") == "warning"
    editor.append(OVER_THRESHOLD)
    editor.wait("require('contextd').statusline() == 'ctx 95k/200k 48% !!'")
    assert editor.lua("return require('contextd').level()") == "critical"

    editor.command("Contextd idle 600")
    editor.wait("require('contextd').state().idle ~= nil")
    due = editor.state()["idle"]["dueAt"]
    local_due = datetime.fromisoformat(due.replace("Z", "+00:00")).astimezone(KOLKATA)
    assert editor.statusline() == f"ctx 95k/200k 48% !! idle {local_due:%H:%M}"


def test_lualine_renders_the_component_escaped_and_coloured_by_level(editor: Editor) -> None:
    editor.lua("vim.opt.runtimepath:prepend(...)", str(LUALINE_DIR))
    editor.setup(settings=NEAR_THRESHOLD)
    editor.lua(
        """
        local empty = { lualine_a = {}, lualine_b = {}, lualine_c = {}, lualine_x = {}, lualine_y = {}, lualine_z = {} }
        local sections = vim.deepcopy(empty)
        sections.lualine_x = { "contextd" }
        require("lualine").setup({
          options = { icons_enabled = false, section_separators = "", component_separators = "" },
          sections = sections, inactive_sections = empty, tabline = {}, winbar = {}, extensions = {},
        })
        """
    )

    def rendered() -> tuple[str, int | None, int | None]:
        drawn = editor.lua(
            "require('lualine').refresh({ force = true, place = { 'statusline' } });"
            " local drawn = vim.api.nvim_eval_statusline(vim.o.statusline, { highlights = true });"
            " local group = drawn.highlights[#drawn.highlights].group;"
            " return { drawn.str, group }"
        )
        text, group = drawn
        colour = editor.lua("return vim.api.nvim_get_hl_by_name(..., true).foreground", group)
        return text.strip(), colour, group

    editor.append(CONVERSATION)
    editor.wait("require('contextd').level() == 'warning'")
    text, colour, _ = rendered()
    assert text == "ctx 84k/200k 42% !"  # the % came through: escaped for lualine
    warn = editor.lua("return vim.api.nvim_get_hl_by_name('DiagnosticWarn', true).foreground")
    assert colour == warn
    editor.append(OVER_THRESHOLD)
    editor.wait("require('contextd').level() == 'critical'")
    text, colour, _ = rendered()
    assert text == "ctx 95k/200k 48% !!"
    assert colour == editor.lua(
        "return vim.api.nvim_get_hl_by_name('DiagnosticError', true).foreground"
    )
    assert colour != warn
    assert "E539" not in editor.lua("return vim.v.errmsg")


def test_command_line_completion_of_subcommands_entries_and_sessions(editor: Editor) -> None:
    session_id = editor.setup()
    entry_ids = editor.append(CONVERSATION)["entryIds"]

    def complete(line: str) -> list[str]:
        return editor.lua("return vim.fn.getcompletion(..., 'cmdline')", line)

    assert {"status", "compact", "tree", "fork", "label", "sessions", "abort", "restart"} <= set(
        complete("Contextd ")
    )
    assert complete("Contextd re") == ["restart"]
    assert set(entry_ids) <= set(complete("Contextd fork "))
    assert complete(f"Contextd fork {entry_ids[2][:-1]}") == [entry_ids[2]]
    assert complete("Contextd sessions ") == [session_id]
    named = editor.lua(
        "local opened = require('contextd.client').request_sync('contextd/session/open',"
        " { name = 'parser work', workspace = require('contextd.config').workspace() }, 10000)"
        " return opened.sessionId"
    )
    # Found by its name, offered as its id with the name after it; the id alone is the argument.
    assert complete("Contextd sessions PARS") == [f"{named} parser work"]
    editor.command(f"Contextd sessions {named} parser work")
    editor.wait(f"require('contextd.state').session_id == '{named}'")
    assert complete("Contextd idle o") == ["off"]


def test_session_times_are_shown_in_local_time(editor: Editor) -> None:
    editor.setup(session_name="timed")
    editor.append(CONVERSATION)
    listing = editor.lua(
        "return require('contextd.client').request_sync('contextd/session/list', vim.empty_dict())"
    )
    updated = listing["sessions"][0]["updatedAt"]
    local = datetime.fromisoformat(updated.replace("Z", "+00:00")).astimezone(KOLKATA)
    editor.command("Contextd sessions")
    editor.wait("#_G.selects == 1")
    [item] = editor.lua("return _G.selects")[0]["items"]
    assert f"{local:%Y-%m-%d %H:%M}" in item, (updated, item)


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
            **editor.base_options(),
            "settings": {
                "summarizer": {"apiKeyEnv": "CONTEXTD_TEST_NO_SUCH_KEY"},
                "colour": 1,
                "compaction": {"keepRecent": 2000, "thresholdPercent": 0.5},
                "models": {"my-model": {"contextWindow": 32768}},
            },
        },
    )
    report = health_report(editor)
    assert "ERROR" not in report, report
    assert "daemon starts: contextd" in report
    assert "unknown settings: colour, compaction.keepRecent" in report
    assert "CONTEXTD_TEST_NO_SUCH_KEY is not set" in report


def test_health_checks_every_setting_the_daemon_knows(editor: Editor) -> None:
    from contextd.settings import KNOWN_KEYS

    assert editor.lua("return require('contextd.health').known_settings") == list(KNOWN_KEYS)


def test_health_check_advice_works_on_an_externally_managed_python(editor: Editor, tmp_path: Path) -> None:
    python = tmp_path / "python3"  # an interpreter without contextd, as Debian's system Python
    python.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "Python 3.12.3"; exit 0; }\n'
        'echo "/usr/bin/python3: No module named contextd" >&2\nexit 1\n'
    )
    python.chmod(0o755)
    editor.lua("require('contextd.config').set({ python = ... })", str(python))
    report = health_report(editor)
    assert "No module named contextd" in report
    assert "python3 -m venv ~/.local/share/contextd-venv" in report and "pipx install" in report


def test_health_check_reports_a_missing_python(editor: Editor) -> None:
    editor.lua("require('contextd.config').set({ python = '/nonexistent/python3' })")
    report = health_report(editor)
    assert "ERROR" in report and "/nonexistent/python3 is not executable" in report


def test_help_contextd_opens_the_introduction(editor: Editor, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin-copy"
    shutil.copytree(PLUGIN_DIR, plugin, ignore=shutil.ignore_patterns("tags"))
    editor.lua("vim.opt.runtimepath:prepend(...)", str(plugin))
    editor.command(f"source {plugin / 'plugin' / 'contextd.lua'}")  # as Neovim does at startup
    tags = (plugin / "doc" / "tags").read_text()  # made by the plugin, no :helptags needed
    for tag in (
        "contextd",
        "contextd.txt",
        ":Contextd",
        "contextd-commands",
        "contextd-lualine",
        "contextd.setup()",
        "contextd.statusline()",
        "contextd.level()",
        "contextd.append_messages()",
        "contextd.get_context()",
        "contextd.on_token_usage()",
    ):
        assert f"{tag}\t" in tags, tag
    editor.command("help contextd")
    assert editor.lua("return vim.fn.expand('%:t')") == "contextd.txt"
    assert "*contextd*" in editor.lua("return vim.api.nvim_get_current_line()")
    assert "INTRODUCTION" in editor.lua("return vim.api.nvim_get_current_line()")


# --- settings on the shared daemon ---------------------------------------------------------


def threshold_is(tokens: int) -> str:
    return f"(require('contextd').state().usage or {{}}).thresholdTokens == {tokens}"


def test_setup_settings_set_the_shared_daemons_threshold_over_the_user_file(editor: Editor, tmp_path: Path) -> None:
    user_file = tmp_path / "home" / "config" / "contextd" / "settings.json"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(json.dumps({"compaction": {"thresholdPercent": 0.6}}))
    editor.setup(shared=True, settings={"compaction": {"thresholdPercent": 0.5}})
    editor.wait(threshold_is(100_000), 30000)

    # Without it in setup(), the user file's value applies, and a change to the file at once.
    editor.setup(shared=True, settings={})
    editor.wait(threshold_is(120_000), 30000)
    user_file.write_text(json.dumps({"compaction": {"thresholdPercent": 0.25}}))
    editor.wait(threshold_is(50_000), 30000)
    assert not [note for note in editor.notes() if "contextd:" in note["msg"]], editor.notes()


def test_a_typo_in_setup_is_shown_by_the_shared_daemon(editor: Editor) -> None:
    editor.setup(shared=True, settings={"compaction": {"keepRecent": 2000}})
    note = editor.wait_note("compaction.keepRecent ignored (did you mean compaction.keepRecentTokens?)")
    assert note["level"] == WARN


def test_a_long_compaction_shows_how_long_it_has_run(editor: Editor) -> None:
    statusline = editor.lua(
        "return require('contextd.format').statusline({ status = 'running',"
        " usage = { tokens = 84000, contextWindow = 200000, percent = 42 },"
        " compacting = { reason = 'threshold', elapsed_s = 72.4 } })"
    )
    assert statusline == "ctx 84k/200k 42% compacting… 1m12s"
    short = editor.lua(
        "return require('contextd.format').statusline({ status = 'running',"
        " usage = { tokens = 84000, contextWindow = 200000, percent = 42 },"
        " compacting = { reason = 'threshold', elapsed_s = 2 } })"
    )
    assert short == "ctx 84k/200k 42% compacting…"


def test_the_shown_mirrors_own_compaction_is_announced_when_it_is_not_current(
    editor: Editor, tmp_path: Path
) -> None:
    owner_names_claude_root(tmp_path)
    transcript = FollowedTranscript(tmp_path / "claude", editor.workspace, "claude-code-atlas-sonnet45")
    boundaries = [i for i, line in enumerate(transcript.lines) if '"compact_boundary"' in line]
    transcript.write(boundaries[1])
    follow = {"enabled": True, "agents": ["claude-code"], "roots": {"claude-code": str(transcript.root)}}
    editor.setup(shared=True, settings={"follow": follow})
    editor.wait("require('contextd').statusline():find('^Claude Code ') ~= nil")
    assert editor.state()["shown"]["current"] is False  # shown, not the session worked on
    transcript.write(len(transcript.lines))  # the agent compacts again
    note = editor.wait_note("Claude Code compacted its context")
    assert note["level"] == INFO and "tokens" in note["msg"]
