"""What a new user meets in the first hour with the CLI (issue 18): one parser with every
command, `show`, `sessions rm`, clear errors with consistent exit codes and `--json`
errors, global options on both sides of the command, ranges, default names."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.commands import CONTEXTD, json_error, run, run_json

CLIENT_COMMANDS = ["demo", "replay", "import", "sessions", "show", "tree", "compact", "handoff", "watch"]
CODEX_FIXTURE = Path(__file__).parents[1] / "importers" / "fixtures" / "codex.jsonl"


def contextd(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CONTEXTD, *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def compacted(data_dir: Path, conversation: Path) -> dict[str, Any]:
    """A replayed session that compacted at least once on the way."""
    result = run_json(data_dir, "replay", str(conversation), "--window", "8000")
    assert any(event["outcome"] == "compacted" for event in result["compactions"])
    return result


def session_ids(data_dir: Path) -> list[str]:
    return [session["sessionId"] for session in run_json(data_dir, "sessions")["sessions"]]


# --- 1. one parser ----------------------------------------------------------------------------


def test_help_lists_every_command_with_a_one_line_summary_and_examples() -> None:
    done = contextd("--help")
    assert done.returncode == 0
    for command in ["serve", *CLIENT_COMMANDS]:
        assert any(line.split()[:1] == [command] for line in done.stdout.splitlines()), command
    assert "examples:" in done.stdout and "exit codes:" in done.stdout
    assert '"""' not in done.stdout and "`serve` runs the daemon;" not in done.stdout


def test_an_unknown_command_names_the_real_ones_and_exits_2() -> None:
    done = contextd("bogus")
    assert done.returncode == 2
    assert "invalid choice: 'bogus'" in done.stderr and "'show'" in done.stderr and "'serve'" in done.stderr


def test_command_help_describes_the_command_with_defaults_and_positionals() -> None:
    serve = contextd("serve", "--help")
    assert serve.returncode == 0 and serve.stdout.splitlines()[0].startswith("usage: contextd serve")
    assert "run the daemon" in serve.stdout and "examples:" in serve.stdout
    demo = " ".join(contextd("demo", "--help").stdout.split())
    assert "(default: 0.05)" in demo and "(default: 40000)" in demo
    imported = " ".join(contextd("import", "--help").stdout.split())
    assert "the agent's transcript" in imported and "the agent that wrote FILE" in imported
    assert "the latest summary on the path to the leaf" in " ".join(contextd("show", "--help").stdout.split())


def test_global_options_go_before_or_after_the_command(data_dir: Path, compacted: dict[str, Any]) -> None:
    before = subprocess.run([*CONTEXTD, "--data-dir", str(data_dir), "--json", "sessions"],
                            capture_output=True, text=True, timeout=60, check=False)
    after = subprocess.run([*CONTEXTD, "sessions", "--json", "--data-dir", str(data_dir)],
                           capture_output=True, text=True, timeout=60, check=False)
    assert before.returncode == after.returncode == 0, after.stderr
    assert json.loads(before.stdout) == json.loads(after.stdout)
    tree = subprocess.run([*CONTEXTD, "tree", compacted["sessionId"], "--data-dir", str(data_dir)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert tree.returncode == 0 and "← leaf" in tree.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["demo", "--window", "100"], "16,000 to 1,000,000"),
        (["replay", "x.jsonl", "--window", "0"], "4,096 to"),
        (["demo", "--delay", "-1"], "--delay"),
        (["watch", "--idle", "0"], "--idle"),
        (["serve", "--tcp", "nonsense"], "HOST:PORT"),
        (["sessions", "--tcp", "127.0.0.1:99999"], "HOST:PORT"),
        (["tree"], "session"),
    ],
)
def test_usage_errors_exit_2_naming_the_problem(data_dir: Path, args: list[str], named: str) -> None:
    done = run(data_dir, *args)
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert json_error(run(data_dir, *args, "--json"))["kind"] == "usage"


# --- 3. the demo lives with the user's sessions --------------------------------------------------


def test_the_demo_session_is_kept_in_the_demo_workspace_and_can_be_deleted(data_dir: Path) -> None:
    result = run_json(data_dir, "demo", "--delay", "0")
    path = Path(result["path"])
    assert path.is_file() and path.is_relative_to(data_dir)
    listed = run_json(data_dir, "sessions", "--workspace", "demo")["sessions"]
    assert [session["sessionId"] for session in listed] == [result["sessionId"]]
    human = run(data_dir, "sessions")
    assert result["sessionId"] in human.stdout and "demo" in human.stdout
    removed = run(data_dir, "sessions", "rm", result["sessionId"])
    assert removed.returncode == 0 and f"Deleted session {result['sessionId']}" in removed.stdout
    assert not path.exists() and session_ids(data_dir) == []


# --- 4. show --------------------------------------------------------------------------------------


def stored_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


def test_show_prints_the_latest_summary_in_full(data_dir: Path, compacted: dict[str, Any]) -> None:
    entries = stored_entries(Path(compacted["state"]["path"]))
    latest = [entry for entry in entries if entry["type"] == "compaction"][-1]
    done = run(data_dir, "show", compacted["sessionId"][:14])
    assert done.returncode == 0, done.stderr
    heading, figure, parts, _, *body = done.stdout.splitlines()
    assert heading.startswith(f"compaction {latest['id']} of session {compacted['sessionId']}")
    assert "\n".join(body) == latest["summary"].rstrip("\n")
    shown = run_json(data_dir, "show", compacted["sessionId"])
    assert shown["entry"] == latest
    # The session's figure as the daemon had it, and where its tokens are.
    usage = shown["usage"]
    assert usage["tokens"] == compacted["state"]["usage"]["tokens"] == sum(usage["breakdown"].values())
    assert f"{usage['tokens']:,} / {usage['contextWindow']:,} tokens" in figure
    assert parts == " · ".join(f"{name} {tokens:,}" for name, tokens in usage["breakdown"].items())
    assert usage["breakdown"]["summary"] > 0


def test_show_an_entry_by_id_and_a_message_in_full(data_dir: Path, compacted: dict[str, Any]) -> None:
    entries = stored_entries(Path(compacted["state"]["path"]))
    result = next(entry for entry in entries if entry["type"] == "message" and entry["message"]["role"] == "toolResult")
    done = run(data_dir, "show", compacted["sessionId"], result["id"])
    assert done.returncode == 0, done.stderr
    assert result["message"]["content"] in done.stdout
    assert done.stdout.startswith(f"toolResult message {result['id']}")


def test_show_of_an_unknown_session_or_entry_is_refused(data_dir: Path, compacted: dict[str, Any]) -> None:
    missing = run(data_dir, "show", "no-such-session")
    assert missing.returncode == 1 and "no session 'no-such-session'" in missing.stderr
    entry = run(data_dir, "show", compacted["sessionId"], "zzzz", "--json")
    assert json_error(entry)["kind"] == "not-found"


# --- 5. sessions rm, and no empty sessions from failed replays and imports ------------------------


def test_sessions_rm_refuses_a_session_open_in_a_running_daemon(data_dir: Path, compacted: dict[str, Any]) -> None:
    session_id = compacted["sessionId"]
    watcher = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(data_dir), "watch", session_id, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert watcher.stdout is not None
        assert session_id in watcher.stdout.readline()  # the watcher's daemon has it open now
        refused = run(data_dir, "sessions", "rm", session_id)
        assert refused.returncode == 1
        assert f"session {session_id} is open in the contextd daemon with pid" in refused.stderr
        assert json_error(run(data_dir, "sessions", "rm", session_id, "--json"))["kind"] == "locked"
        assert Path(compacted["state"]["path"]).is_file()
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
    assert run(data_dir, "sessions", "rm", session_id).returncode == 0
    assert session_ids(data_dir) == []


def test_sessions_rm_deletes_nothing_when_one_name_is_unknown(data_dir: Path, compacted: dict[str, Any]) -> None:
    done = run(data_dir, "sessions", "rm", compacted["sessionId"], "nope")
    assert done.returncode == 1 and "no session 'nope'" in done.stderr
    assert session_ids(data_dir) == [compacted["sessionId"]]
    outside = run(data_dir, "sessions", "rm", "../../etc")
    assert outside.returncode == 1 and session_ids(data_dir) == [compacted["sessionId"]]


def test_a_bad_line_is_reported_by_number_before_any_session_exists(data_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n\n{"role": "assistant", "content": [{"type": "txt"}]}\n')
    done = run(data_dir, "replay", str(bad))
    assert done.returncode == 2 and f"{bad} line 3: not a message" in done.stderr
    assert session_ids(data_dir) == []


def test_a_refused_first_step_names_its_line_and_leaves_no_session(data_dir: Path, tmp_path: Path) -> None:
    orphan = tmp_path / "orphan.jsonl"
    orphan.write_text(
        '{"role": "user", "content": "hi"}\n\n'
        '{"role": "toolResult", "toolCallId": "nobody", "toolName": "read", "content": "x"}\n'
    )
    done = run(data_dir, "replay", str(orphan))
    assert done.returncode == 1 and f"{orphan} line 3: " in done.stderr and "the daemon refused" in done.stderr
    assert "messages.1" not in done.stderr
    assert session_ids(data_dir) == []


def test_a_failed_import_leaves_no_session(data_dir: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json at all\n")
    done = run(data_dir, "import", str(junk), "--from", "codex", "--json")
    error = json_error(done)
    assert done.returncode == 2 and error["kind"] == "input" and error["problems"][0]["line"] == 1
    assert session_ids(data_dir) == []


# --- 6. errors ------------------------------------------------------------------------------------


def test_a_binary_file_is_a_clear_usage_error(data_dir: Path, tmp_path: Path) -> None:
    binary = tmp_path / "image.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    for args in (["replay", str(binary)], ["import", str(binary), "--from", "pi"]):
        done = run(data_dir, *args)
        assert done.returncode == 2, done.stderr
        assert "is not a UTF-8 text file" in done.stderr and "Traceback" not in done.stderr


def test_output_to_a_closed_pipe_ends_quietly(data_dir: Path, compacted: dict[str, Any]) -> None:
    """`contextd tree X | head -2`: the reader is gone before the tree is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*CONTEXTD, "--data-dir", str(data_dir), "tree", compacted["sessionId"]],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


def test_an_unreachable_daemon_is_not_a_lost_one(data_dir: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = run(data_dir, "sessions", "--tcp", f"127.0.0.1:{port}")
    assert done.returncode == 3
    assert "cannot reach the daemon at 127.0.0.1:" in done.stderr and "lost" not in done.stderr
    assert json_error(run(data_dir, "sessions", "--tcp", f"127.0.0.1:{port}", "--json"))["kind"] == "no-daemon"


def test_a_daemon_refusal_as_json(data_dir: Path) -> None:
    done = run(data_dir, "compact", "no-such-session", "--json")
    error = json_error(done)
    assert done.returncode == 1 and error["kind"] == "refused" and error["code"] == -32001


def test_an_unreadable_settings_file_names_its_line(data_dir: Path, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{\n  "compaction": {\n    "enabled": tru\n  }\n}\n')
    done = run(data_dir, "sessions", "--settings", str(settings))
    assert done.returncode == 2 and f"{settings} line 3" in done.stderr


@pytest.mark.parametrize("command", [["sessions"], ["serve"]])
def test_a_bad_value_in_a_settings_file_is_a_usage_error_naming_it(
    data_dir: Path, tmp_path: Path, command: list[str]
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"compaction": {"thresholdPercent": 7}}')
    done = run(data_dir, *command, "--settings", str(settings), input="")
    assert done.returncode == 2, done.stderr
    assert f"{settings}: compaction.thresholdPercent: Input should be less than or equal to 1" in done.stderr


# --- 7. default names -----------------------------------------------------------------------------


def test_replay_and_import_name_the_session_after_the_file(data_dir: Path, conversation: Path) -> None:
    replayed = run_json(data_dir, "replay", str(conversation))["sessionId"]
    imported = run_json(data_dir, "import", str(CODEX_FIXTURE), "--from", "codex")["sessionId"]
    names = {session["sessionId"]: session.get("name") for session in run_json(data_dir, "sessions")["sessions"]}
    assert names[replayed] == conversation.name and names[imported] == CODEX_FIXTURE.name


def test_a_handoff_session_is_named_after_its_goal(data_dir: Path, compacted: dict[str, Any]) -> None:
    result = run_json(data_dir, "handoff", compacted["sessionId"], "--goal", "Write the migration\nthen test it")
    names = {session["sessionId"]: session.get("name") for session in run_json(data_dir, "sessions")["sessions"]}
    assert names[result["sessionId"]] == "Write the migration"


@pytest.mark.parametrize("command", [["sessions"], ["replay", "x.jsonl"], ["serve"]])
def test_a_data_dir_that_is_a_file_is_refused_at_once(tmp_path: Path, command: list[str]) -> None:
    not_a_dir = tmp_path / "data"
    not_a_dir.write_text("")
    done = run(not_a_dir, *command, input="")
    assert done.returncode == 2, done.stderr
    assert f"--data-dir {not_a_dir} is a file, not a directory" in done.stderr
