"""Following survives bad transcripts (issue 23, item 7): a line nested too deeply to read,
in one of several followed real transcripts, is skipped and said in the log; every
transcript goes on being mirrored, before a restart of the daemon and after it. Over stdio
and over the shared daemon's socket."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.storage import daemons as daemons  # noqa: F401 - the fixture
from tests.follow.support import (
    TRANSCRIPTS,
    append_lines,
    corpus_lines,
    expected_after,
    mirror_id,
    wait_for_mirror,
)

BAD_LINES = {
    "unreadable": b"[" * 200_000 + b"\n",
    "deep but valid JSON": b'{"a":' * 990 + b"1" + b"}" * 990 + b"\n",
}


@pytest.mark.parametrize("bad", sorted(BAD_LINES))
async def test_a_deeply_nested_line_is_skipped_and_following_goes_on(daemons, tmp_path: Path, bad: str) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    daemons.env["HOME"] = str(home)
    transcripts = {}
    for agent in ("claude-code", "pi"):
        name, relative = TRANSCRIPTS[agent]
        path = home / relative
        path.parent.mkdir(parents=True)
        lines = corpus_lines(name)[:60]
        # the bad line sits in the middle of the claude-code transcript only
        if agent == "claude-code":
            lines = lines[:10] + [BAD_LINES[bad]] + lines[10:]
        transcripts[agent] = (path, lines)
        append_lines(path, lines[:30])

    client = await daemons.start(data, tmp_path / "project")
    await client.follow(enabled=True, all_workspaces=True)
    for agent, (path, lines) in transcripts.items():
        settled, _ = expected_after(agent, lines[:30])
        await wait_for_mirror(client, await mirror_id(client, path), settled)
        append_lines(path, lines[30:45])  # following goes on past the bad line
    for agent, (path, lines) in transcripts.items():
        settled, _ = expected_after(agent, lines[:45])
        assert len(settled) > 10
        await wait_for_mirror(client, await mirror_id(client, path), settled)
    await daemons.stop()

    for agent, (path, lines) in transcripts.items():  # written while no daemon ran
        append_lines(path, lines[45:])
    client = await daemons.start(data, tmp_path / "project")
    await client.follow(enabled=True, all_workspaces=True)
    for agent, (path, lines) in transcripts.items():
        settled, _ = expected_after(agent, lines)
        tree = await wait_for_mirror(client, await mirror_id(client, path), settled)
        ids = [node["id"] for node in tree["nodes"]]
        assert len(ids) == len(set(ids))
    assert json.dumps(await client.follow()).count('"enabled": true') == 1
