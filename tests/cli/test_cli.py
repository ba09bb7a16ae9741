"""The `contextd` client commands, run in a subprocess by the interpreter running the tests
(not whichever `contextd` is first on PATH): their output for people, their `--json`, and
the exit codes scripts rely on (0 ok, 1 refused, 2 usage error, 3 no daemon)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.commands import CONTEXTD, run, run_json
from tests.client.helpers import long_conversation

FIXTURES = Path(__file__).parents[1] / "importers" / "fixtures"


@pytest.fixture
def replayed(data_dir: Path, conversation: Path) -> dict[str, Any]:
    """A session replayed into an 8,000-token window: it compacted on the way."""
    return run_json(data_dir, "replay", str(conversation), "--name", "replayed", "--window", "8000")


def test_replay_shows_the_bar_filling_and_the_compactions(data_dir: Path, conversation: Path) -> None:
    done = run(data_dir, "replay", str(conversation), "--window", "8000")
    assert done.returncode == 0, done.stderr
    bars = [line for line in done.stdout.splitlines() if line.startswith("[")]
    percents = [float(line.split("]")[1].split("%")[0]) for line in bars]
    assert len(bars) >= 3 and max(percents) > percents[0]
    assert "⟳ compacting (threshold)" in done.stdout
    assert "✓ compacted (threshold)" in done.stdout
    assert "Session file: " in done.stdout and str(data_dir) in done.stdout


def test_replay_json_reports_the_session_and_its_compactions(replayed: dict[str, Any]) -> None:
    assert replayed["appended"] == len(long_conversation(14))
    outcomes = [event["outcome"] for event in replayed["compactions"]]
    assert outcomes and set(outcomes) == {"compacted"}
    usage = replayed["state"]["usage"]
    assert usage["contextWindow"] == 8000 and usage["tokens"] < 8000
    assert Path(replayed["state"]["path"]).is_file()


def test_replay_errors_have_their_exit_codes(data_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"role": "user", "content": "hi"}\n\n{"role": \n')
    done = run(data_dir, "replay", str(broken))
    assert done.returncode == 2 and "line 3" in done.stderr

    missing = run(data_dir, "replay", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr

    invalid = tmp_path / "invalid.jsonl"
    invalid.write_text('{"role": "user", "content": "hi"}\n{"role": "robot", "content": "beep"}\n')
    refused = run(data_dir, "replay", str(invalid))
    assert refused.returncode == 2 and "line 2: not a message" in refused.stderr and "'robot'" in refused.stderr


def test_usage_errors_exit_2(data_dir: Path) -> None:
    assert run(data_dir, "tree").returncode == 2
    assert run(data_dir, "import", "x.jsonl", "--from", "cursor").returncode == 2
    assert run(data_dir, "sessions", "--tcp", "nonsense").returncode == 2


def test_sessions_table_and_json(data_dir: Path, replayed: dict[str, Any]) -> None:
    table = run(data_dir, "sessions")
    assert table.returncode == 0
    header, row = table.stdout.splitlines()[:2]
    assert header.split()[:4] == ["SESSION", "NAME", "ENTRIES", "TOKENS"]
    assert row.startswith(replayed["sessionId"]) and "replayed" in row
    listed = run_json(data_dir, "sessions")
    assert [session["sessionId"] for session in listed["sessions"]] == [replayed["sessionId"]]


def test_sessions_shows_a_damaged_file_as_damaged_beside_the_others(data_dir: Path, replayed: dict[str, Any]) -> None:
    [sessions] = data_dir.glob("workspaces/*/sessions")
    (sessions / "broken.jsonl").write_bytes(b"[" * 200_000 + b"\n")
    table = run(data_dir, "sessions")
    assert table.returncode == 0, table.stderr
    rows = {line.split()[0]: line for line in table.stdout.splitlines()[1:]}
    assert "(damaged: its first line is not a session header)" in rows["broken"]
    assert "replayed" in rows[replayed["sessionId"]]
    listed = {row["sessionId"]: row for row in run_json(data_dir, "sessions")["sessions"]}
    assert listed["broken"]["damaged"] == "its first line is not a session header"


def test_sessions_on_an_empty_data_dir(data_dir: Path) -> None:
    done = run(data_dir, "sessions")
    assert done.returncode == 0 and done.stdout.strip() == "No sessions."
    assert run_json(data_dir, "sessions") == {"sessions": []}


def test_compact_by_id_prefix_dry_run_and_for_real(data_dir: Path, tmp_path: Path) -> None:
    conversation = tmp_path / "big.jsonl"
    conversation.write_text("".join(json.dumps(m) + "\n" for m in long_conversation(30)))
    session_id = run_json(data_dir, "replay", str(conversation))["sessionId"]
    prefix = session_id[:14]
    plan = run_json(data_dir, "compact", prefix, "--dry-run")
    assert plan["summarizeEntryIds"] and plan["tokensBefore"] > 0
    preview = run(data_dir, "compact", prefix, "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert "Preview of the summary (written offline; nothing was stored):" in preview.stdout
    assert plan["summary"].strip() in preview.stdout  # piped: the whole preview
    done = run(data_dir, "compact", prefix, "--instructions", "Keep the module names")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Compacted {session_id}: ")
    again = run(data_dir, "compact", session_id)
    assert again.returncode == 1 and "-32005" in again.stderr  # nothing new to compact


def test_compact_an_unknown_session_is_a_daemon_error(data_dir: Path) -> None:
    done = run(data_dir, "compact", "no-such-session")
    assert done.returncode == 1
    assert "not found" in done.stderr and "-32001" in done.stderr


def test_tree_shows_the_leaf(data_dir: Path, replayed: dict[str, Any]) -> None:
    done = run(data_dir, "tree", replayed["sessionId"])
    assert done.returncode == 0, done.stderr
    assert "← leaf" in done.stdout
    tree = run_json(data_dir, "tree", replayed["sessionId"])
    assert tree["leafId"] == replayed["state"]["leafId"]


def test_handoff_prints_the_new_session(data_dir: Path, replayed: dict[str, Any]) -> None:
    done = run(data_dir, "handoff", replayed["sessionId"], "--goal", "finish the modules")
    assert done.returncode == 0, done.stderr
    assert "Handed " in done.stderr and "Handed " not in done.stdout  # `> doc.md` holds the document alone
    assert done.stdout.strip(), done.stdout
    result = run_json(data_dir, "handoff", replayed["sessionId"])
    assert result["sessionId"] != replayed["sessionId"] and result["document"]


@pytest.mark.parametrize(
    ("source", "fixture", "bad_line"),
    [("claude-code", "claude_code.jsonl", 8), ("codex", "codex.jsonl", 23), ("pi", "pi_v3.jsonl", 21)],
)
def test_import_writes_a_session_and_reports_problems(data_dir: Path, source: str, fixture: str, bad_line: int) -> None:
    done = run(data_dir, "import", str(FIXTURES / fixture), "--from", source)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"corrupt: .* \((\d+ lines .*\b|line ){bad_line}\b", done.stderr), done.stderr
    verbose = run(data_dir, "import", str(FIXTURES / fixture), "--from", source, "--verbose")
    assert f"line {bad_line}: corrupt" in verbose.stderr
    assert done.stdout.startswith("Imported ")
    result = run_json(data_dir, "import", str(FIXTURES / fixture), "--from", source, "--name", "again")
    assert {"line": bad_line, "kind": "corrupt"}.items() <= next(
        p for p in result["problems"] if p["line"] == bad_line
    ).items()
    assert result["usage"]["source"] == "usage"
    names = {s["name"] for s in run_json(data_dir, "sessions")["sessions"]}
    assert "again" in names


def test_import_of_an_empty_or_missing_file_is_a_usage_error(data_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json at all\n")
    done = run(data_dir, "import", str(empty), "--from", "codex")
    assert done.returncode == 2 and "line 1: corrupt" in done.stderr
    assert run(data_dir, "import", str(tmp_path / "missing.jsonl"), "--from", "pi").returncode == 2


def test_watch_replay_prints_notifications_as_json_lines(data_dir: Path, conversation: Path) -> None:
    done = run(data_dir, "watch", "--replay", str(conversation), "--window", "8000", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    methods = {event["method"] for event in events}
    assert {"contextd/tokenUsage", "contextd/sessionChanged", "contextd/compactionFinished"} <= methods
    causes = [e["params"]["cause"] for e in events if e["method"] == "contextd/sessionChanged"]
    assert causes[0] == "open" and "append" in causes and "compaction" in causes


def test_watch_a_session_until_interrupted(data_dir: Path, replayed: dict[str, Any]) -> None:
    watcher = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(data_dir), "watch", replayed["sessionId"]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert watcher.stdout is not None
    first = watcher.stdout.readline()
    time.sleep(0.2)
    watcher.send_signal(signal.SIGINT)
    assert watcher.wait(timeout=20) == 130  # Ctrl-C, as for every command
    assert replayed["sessionId"] in first and "sessionChanged" in first and "(open)" in first


def test_watch_shows_an_idle_compaction(data_dir: Path, replayed: dict[str, Any]) -> None:
    watcher = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(data_dir), "watch", replayed["sessionId"], "--json",
         "--window", "8000", "--idle", "0.5", "--idle-threshold", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert watcher.stdout is not None
    seen: list[tuple[str, dict[str, Any]]] = []
    def interrupt_then_kill() -> None:
        watcher.send_signal(signal.SIGINT)
        try:
            watcher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            watcher.kill()  # never hang the suite on a watcher that ignored Ctrl-C

    watchdog = threading.Timer(60, interrupt_then_kill)
    watchdog.start()
    try:
        for line in watcher.stdout:
            event = json.loads(line)
            seen.append((event["method"], event["params"]))
            if event["method"] == "contextd/compactionFinished":
                break
    finally:
        watchdog.cancel()
        watcher.send_signal(signal.SIGINT)
        code = watcher.wait(timeout=20)
    assert code == 130, watcher.stderr.read() if watcher.stderr else ""
    idle_states = [params["state"] for method, params in seen if method == "contextd/idleTimer"]
    assert idle_states[:2] == ["armed", "fired"]  # armed once, not once more by the request that armed it
    finished = seen[-1][1]
    assert finished["reason"] == "idle" and finished["outcome"] in ("compacted", "failed")
