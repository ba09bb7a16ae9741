"""Who hears a session's notifications on a shared daemon: the connections that have it
open, and the one whose request is about it. A daemon-wide change (`contextd/follow`) is
about no session: the connection that asked hears nothing of the others' sessions, neither
then nor from the follower it started (a second VS Code window once showed another
workspace's session, nameless, after its `contextd/follow` at connect)."""

from __future__ import annotations

import json
from pathlib import Path

from contextd_client import NotificationStream

from tests import corpus
from tests.factories import coding_turn

WAIT_SECONDS = 60


def claude_transcript(root: Path, workspace: Path) -> Path:
    """A real Claude Code transcript, as if Claude Code ran in `workspace`."""
    lines = corpus.read_bytes("claude-code-atlas-short.jsonl.gz").splitlines(keepends=True)
    cwd = json.dumps(str(workspace)).encode()
    path = root / "-project" / "7d1c2f0e-8b1a-4c3d-9e5f-0a1b2c3d4e5f.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(line.replace(b'"cwd":"/Users/Sam"', b'"cwd":' + cwd) for line in lines[:30]))
    return path


async def first_session_heard(stream: NotificationStream) -> str:
    return (await stream.get(WAIT_SECONDS)).params["sessionId"]


async def test_a_connection_hears_only_the_sessions_it_opened(shared_clients, tmp_path):
    # A followed root beyond ~/.claude/projects is the daemon owner's to name, not a client's
    # (protocol.md, contextd/follow): the daemon's own settings file names it.
    settings = tmp_path / "daemon-settings.json"
    owner = {**json.loads(settings.read_text()), "follow": {"roots": {"claude-code": str(tmp_path / "claude")}}}
    settings.write_text(json.dumps(owner))
    first = await shared_clients(tmp_path / "project")
    theirs = (await first.session_open(name="the first window's"))["sessionId"]
    await first.append(theirs, coding_turn(0))
    other_activity = first.activity()
    await first.watch_workspace()

    second = await shared_clients(tmp_path / "elsewhere")
    heard = second.notifications("contextd/tokenUsage", "contextd/sessionChanged")
    transcript = claude_transcript(tmp_path / "claude", tmp_path / "project")
    # The daemon's settings change for every loaded session, and the follower starts.
    await second.follow(enabled=True, agents=["claude-code"], roots={"claude-code": str(tmp_path / "claude")})
    mirrored = (await other_activity.get(WAIT_SECONDS)).params
    assert mirrored["source"] == {"agent": "claude-code", "path": str(transcript)}

    # Notifications reach a connection in the order they were sent: had the second heard of
    # the first's session or of the mirror, that would come before its own session's.
    mine = (await second.session_open(name="the second window's"))["sessionId"]
    await second.append(mine, coding_turn(1))
    assert await first_session_heard(heard) == mine
    assert {n.params["sessionId"] for n in heard.drain()} == {mine}

    # Nor of the first's appends later on.
    await first.append(theirs, coding_turn(2))
    await second.append(mine, coding_turn(3))
    assert await first_session_heard(heard) == mine
