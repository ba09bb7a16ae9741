"""A Claude Code mirror is named by the title Claude Code gave the session (its `summary`
record), once one is written; before that, by its first request. Titles a resumed
session's file carries of the sessions before it do not name it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from contextd.importers import IMPORTERS
from contextd.model import SessionInfoEntry

from tests.follow.support import (
    WAIT,
    append_lines,
    corpus_lines,
    expected_after,
    mirror_id,
    spawn,
    wait_for_mirror,
)

TITLED = "claude-code-vps-glm47.jsonl.gz"
"""Its last line is Claude Code's title of this session."""
OTHERS_TITLES = "claude-code-atlas-short.jsonl.gz"
"""Begins with titles of earlier sessions, whose records are in other files."""


def test_the_title_of_this_session_names_the_import_and_other_sessions_titles_do_not() -> None:
    lines = [line.decode() for line in corpus_lines(TITLED)]
    title = json.loads(lines[-1])["summary"]
    titled = IMPORTERS["claude-code"](lines)
    assert titled.name == title == "Maven Flow Autonomous Implementation Complete"
    assert isinstance(titled.entries[-1], SessionInfoEntry) and titled.leaf_id == titled.entries[-1].id
    untitled = IMPORTERS["claude-code"](line.decode() for line in corpus_lines(OTHERS_TITLES))
    others = {json.loads(line)["summary"] for line in corpus_lines(OTHERS_TITLES) if b'"type":"summary"' in line}
    assert len(others) > 3 and untitled.name is None
    assert not any(isinstance(entry, SessionInfoEntry) for entry in untitled.entries)
    assert sum(problem.message.startswith("summary:") for problem in untitled.problems) == len(
        [line for line in corpus_lines(OTHERS_TITLES) if b'"type":"summary"' in line]
    )


async def test_a_mirror_takes_the_title_claude_code_writes(tmp_path: Path) -> None:
    lines = corpus_lines(TITLED)
    path = tmp_path / "home" / ".claude/projects/-work-maven/5f0e.jsonl"
    path.parent.mkdir(parents=True)
    append_lines(path, lines[:-1])
    async with await spawn(tmp_path / "home", tmp_path / "data") as client:
        session_id = await mirror_id(client, path)
        await wait_for_mirror(client, session_id, expected_after("claude-code", lines[:-1])[0])
        before = next(row for row in (await client.session_list())["sessions"] if row["sessionId"] == session_id)
        assert before["name"] and before["name"] != json.loads(lines[-1])["summary"]  # its first request
        activity = client.activity()
        await client.watch_workspace(json.loads(lines[1])["cwd"])
        append_lines(path, lines[-1:])
        async with asyncio.timeout(WAIT):
            while (changed := (await activity.get()).params)["sessionId"] != session_id:
                pass
        assert changed["name"] == "Maven Flow Autonomous Implementation Complete"
        rows = (await client.session_list())["sessions"]
        assert next(row for row in rows if row["sessionId"] == session_id)["name"] == changed["name"]
        context = await client.request("contextd/session/context", {"sessionId": session_id, "format": "neutral"})
        assert context["messages"] and changed["name"] not in json.dumps(context["messages"])  # not sent to the model
