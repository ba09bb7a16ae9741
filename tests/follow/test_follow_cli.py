"""`contextd follow`: it turns following on, and prints one line per change of a mirrored
agent session of the workspace, until Ctrl-C (exit 130)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path

from contextd_client import ContextdClient

from tests.cli.commands import CONTEXTD, run
from tests.follow.support import corpus_lines
from tests.shared_daemon import shared_command, stop_daemon


def test_follow_prints_a_line_per_change_of_a_mirror_until_interrupted(tmp_path: Path) -> None:
    lines = corpus_lines("pi-coffee-single-task.jsonl.gz")
    workspace = json.loads(lines[0])["cwd"]
    home = tmp_path / "home"
    transcript = home / ".pi/agent/sessions/--coffee--/2025-10-05_abc.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"".join(lines[: len(lines) // 2]))
    follower = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(tmp_path / "data"), "follow", "--workspace", workspace, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HOME": str(home)},
        # As when started in the background, where SIGINT comes ignored: it must still end it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
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


def figure(line: str) -> str:
    """"84,000/200,000" of a `contextd follow` line."""
    found = re.search(r"  ([\d,]+/[\d,]+)  ", line)
    assert found, line
    return found.group(1)


def test_follow_names_where_the_agent_compacts_under_a_mirrors_first_line(tmp_path: Path) -> None:
    lines = corpus_lines("pi-coffee-single-task.jsonl.gz")
    workspace = json.loads(lines[0])["cwd"]
    home = tmp_path / "home"
    (home / ".pi/agent").mkdir(parents=True)
    (home / ".pi/agent/settings.json").write_text(json.dumps({"compaction": {"reserveTokens": 50_000}}))
    transcript = home / ".pi/agent/sessions/--coffee--/2025-10-05_abc.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"".join(lines[: len(lines) // 2]))
    follower = subprocess.Popen(
        [*CONTEXTD, "--data-dir", str(tmp_path / "data"), "follow", "--workspace", workspace],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HOME": str(home)},
    )
    assert follower.stdout is not None
    watchdog = threading.Timer(90, follower.kill)  # never hang the suite
    watchdog.start()
    try:
        first, point = follower.stdout.readline(), follower.stdout.readline()
        with open(transcript, "ab") as handle:
            handle.write(b"".join(lines[len(lines) // 2 :]))
        later = [follower.stdout.readline()]
        while later[-1] and figure(later[-1]) == figure(first):  # until the figure moves
            later.append(follower.stdout.readline())
    finally:
        watchdog.cancel()
        follower.send_signal(signal.SIGINT)
        follower.wait(timeout=20)
    assert later[-1], (first, point, later, follower.stderr.read() if follower.stderr else "")
    window = int(figure(first).split("/")[1].replace(",", ""))
    # pi's rule with the user's reserveTokens: the window less 50,000, under the agent's name.
    assert first.split()[1] == "pi", first
    assert point == f"          pi compacts it at ~{window - 50_000:,} ({round(100 * (window - 50_000) / window, 1):g}%)\n"
    # The point did not move: the later lines do not repeat it.
    assert not [line for line in later if "compacts it" in line], later


def test_follow_refuses_a_workspace_and_all_at_once(tmp_path: Path) -> None:
    done = run(tmp_path / "data", "follow", "--all", "--workspace", "/x", timeout=60)
    assert done.returncode == 2 and "either --workspace or --all" in done.stderr


async def test_follow_turns_following_on_in_the_shared_daemon_for_every_client(
    tmp_path: Path, shared_env: dict[str, str]
) -> None:
    lines = corpus_lines("pi-coffee-single-task.jsonl.gz")
    workspace = tmp_path / "app"
    workspace.mkdir()
    home = tmp_path / "home"
    transcript = home / ".pi/agent/sessions/--app--/2025-10-05_abc.jsonl"
    transcript.parent.mkdir(parents=True)
    header = {**json.loads(lines[0]), "cwd": str(workspace)}
    transcript.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    env = {**shared_env, "HOME": str(home)}
    data_dir = tmp_path / "data"
    follower = await asyncio.create_subprocess_exec(
        *CONTEXTD, "--data-dir", str(data_dir), "follow", "--json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=workspace,
    )
    assert follower.stdout is not None
    pid: int | None = None
    try:
        async with asyncio.timeout(90):
            line = json.loads(await follower.stdout.readline())
            async with await ContextdClient.spawn(
                data_dir=data_dir, workspace=workspace, env=env, command=shared_command(data_dir)
            ) as editor:  # an editor on the same shared daemon sees the mirror too
                pid = (await editor.daemon_status())["pid"]
                assert (await editor.follow())["enabled"] is True
                rows = (await editor.session_list(workspace=workspace))["sessions"]
                assert [row["source"] for row in rows] == [{"agent": "pi", "path": str(transcript)}]
                assert rows[0]["sessionId"] == line["sessionId"]
    finally:
        follower.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(follower.wait(), 20)
        if pid is not None:
            stop_daemon(pid)
    assert code == 130
