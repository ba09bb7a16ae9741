"""Following, end to end: real transcripts from the corpus are written line by line under a
temporary HOME while a real daemon follows them, and a client sees their mirrors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from contextd.model import AssistantMessage, CompactionEntry, MessageEntry
from contextd_client.rpc import ContextdError

from tests.follow.support import (
    TRANSCRIPTS,
    WAIT,
    append_lines,
    corpus_lines,
    expected_after,
    fed,
    mirror_id,
    spawn,
    wait_for_mirror,
)

READ_ONLY_MIRROR = -32008


def reported_figure(agent: str, lines: list[bytes]) -> int | None:
    """The context size the transcript reports after these lines, where its last word is an
    answer's usage: the answer still being written, else a settled answer at the leaf."""
    importer = fed(agent, lines)
    pending = importer.pending_usage()
    if pending is not None:
        return int(pending.context_tokens)
    settled = importer.take_settled()
    last = settled[-1] if settled else None
    if (
        importer.leaf_id == getattr(last, "id", None)
        and isinstance(last, MessageEntry)
        and isinstance(last.message, AssistantMessage)
        and last.message.usage is not None
        and not last.message.failed
        and last.message.usage.context_tokens > 0
    ):
        return int(last.message.usage.context_tokens)
    return None


@pytest.mark.parametrize("agent", sorted(TRANSCRIPTS))
async def test_a_transcript_written_line_by_line_is_mirrored_with_its_usage_and_compactions(
    tmp_path: Path, agent: str
) -> None:
    name, relative = TRANSCRIPTS[agent]
    lines = corpus_lines(name)
    path = tmp_path / "home" / relative
    path.parent.mkdir(parents=True)
    path.touch()
    data_dir = tmp_path / "data"
    opened_at = 20  # lines written before the client opens the mirror
    compacted_at = [n for n, line in enumerate(lines) if b'"compact_boundary"' in line or b'"type":"compacted"' in line]
    # The first half ends past a compaction the agent makes once the mirror is open (Claude
    # Code's file also has one among its first lines, mirrored before anyone opened it).
    compacted_while_open = [n for n in compacted_at if n >= opened_at]
    half = max(compacted_while_open[0] + 40, len(lines) // 2) if compacted_while_open else len(lines) // 2
    async with await spawn(tmp_path / "home", data_dir) as client:
        events = client.notifications("contextd/compactionStarted", "contextd/compactionFinished", "contextd/tokenUsage")
        append_lines(path, lines[:opened_at])
        session_id = await mirror_id(client, path)
        listed = {row["sessionId"]: row for row in (await client.session_list())["sessions"]}
        assert listed[session_id]["source"] == {"agent": agent, "path": str(path)}
        opened = await client.session_open(session_id=session_id)  # from now on its notifications come here
        assert opened["source"] == (await client.state(session_id))["source"] == {"agent": agent, "path": str(path)}
        written = opened_at
        checkpoints = 0
        while written < half:
            step = lines[written : written + 7]
            append_lines(path, step)
            written += len(step)
            settled, leaf = expected_after(agent, lines[:written])
            tree = await wait_for_mirror(client, session_id, settled)
            if leaf in {entry.id for entry in settled}:  # else the mirror waits at what is written
                assert tree["leafId"] == leaf
            reported = reported_figure(agent, lines[:written])
            if reported is not None:
                # The agent's last word is an answer: the figure is what it reported for it.
                async with asyncio.timeout(WAIT):
                    while (state := await client.state(session_id))["usage"]["tokens"] != reported:
                        await asyncio.sleep(0.05)
                assert state["usage"]["source"] == "usage"
                checkpoints += 1
        assert checkpoints >= 5

        with pytest.raises(ContextdError) as refused:
            await client.append(session_id, [{"role": "user", "content": "hello"}])
        assert refused.value.code == READ_ONLY_MIRROR and refused.value.data == {"sessionId": session_id}

    # A restart in the middle: lines written while no daemon ran are read, none twice.
    append_lines(path, lines[written:])
    settled, leaf = expected_after(agent, lines)
    async with await spawn(tmp_path / "home", data_dir) as client:
        tree = await wait_for_mirror(client, session_id, settled)
        ids = [node["id"] for node in tree["nodes"]]
        assert len(ids) == len(set(ids))
        assert {entry.id for entry in settled} == {i for i in ids}
        assert tree["leafId"] == leaf

        compactions = [entry for entry in settled if isinstance(entry, CompactionEntry)]
        if compactions:
            types = {node["id"]: node["type"] for node in tree["nodes"]}
            assert all(types[entry.id] == "compaction" for entry in compactions)

        before = await client.tree(session_id)
        preview = await client.compact(session_id, dry_run=True)
        assert preview["tokensAfter"] < preview["tokensBefore"]
        assert "## Goal" in preview["summary"]  # the offline summary, as a preview
        handed = await client.handoff(session_id, goal="Carry on")
        fresh = await client.context(handed["sessionId"])
        assert handed["document"] and any(handed["document"] in str(m["content"]) for m in fresh["messages"])
        assert await client.tree(session_id) == before  # neither wrote to the mirror
        with pytest.raises(ContextdError) as refused:
            await client.compact(session_id)
        assert refused.value.code == READ_ONLY_MIRROR
        listed = {row["sessionId"]: row for row in (await client.session_list())["sessions"]}
        assert "source" not in listed[handed["sessionId"]]  # a normal session, writable
        await client.append(handed["sessionId"], [{"role": "user", "content": "Go on."}])

    events.close()
    seen = events.drain()
    if agent != "pi":  # the pi file has no compaction; Claude Code's and Codex's do
        started = [n.params for n in seen if n.method == "contextd/compactionStarted" and n.params["sessionId"] == session_id]
        finished = [n.params for n in seen if n.method == "contextd/compactionFinished" and n.params["sessionId"] == session_id]
        # The follower's compactions are no request of this connection's (protocol.md): it
        # hears those mirrored once it has the session open, not one mirrored before.
        before_open = {e.id for e in expected_after(agent, lines[:opened_at])[0] if isinstance(e, CompactionEntry)}
        in_first_half = [e for e in expected_after(agent, lines[:written])[0] if isinstance(e, CompactionEntry)]
        while_open = [e for e in in_first_half if e.id not in before_open]
        assert len(started) == len(finished) == len(while_open) >= 1
        assert {f["reason"] for f in finished} == {"agent"}
        assert [f["entryId"] for f in finished] == [e.id for e in while_open]
        assert [f["tokensAfter"] for f in finished] == [e.tokensAfter for e in while_open]


async def test_a_truncated_transcript_is_imported_again_once(tmp_path: Path) -> None:
    name, relative = TRANSCRIPTS["pi"]
    lines = corpus_lines(name)
    path = tmp_path / "home" / relative
    path.parent.mkdir(parents=True)
    append_lines(path, lines)
    async with await spawn(tmp_path / "home", tmp_path / "data") as client:
        session_id = await mirror_id(client, path)
        await wait_for_mirror(client, session_id, expected_after("pi", lines)[0])
        path.write_bytes(b"".join(lines[:30]))  # rewritten shorter
        settled, leaf = expected_after("pi", lines[:30])
        async with asyncio.timeout(WAIT):
            while True:
                try:
                    tree = await client.tree(session_id)
                except ContextdError as error:  # between the old mirror's deletion and the new one
                    assert error.code == -32001
                    tree = {"nodes": []}
                if len(tree["nodes"]) == len(settled):
                    break
                await asyncio.sleep(0.05)
        assert [node["id"] for node in tree["nodes"]] == [entry.id for entry in settled]
        assert tree["leafId"] == leaf
        append_lines(path, lines[30:40])
        settled, _ = expected_after("pi", lines[:40])
        tree = await wait_for_mirror(client, session_id, settled)
        assert [node["id"] for node in tree["nodes"]] == [entry.id for entry in settled]


async def test_a_deleted_mirror_is_made_again_whole_when_its_transcript_grows(tmp_path: Path) -> None:
    name, relative = TRANSCRIPTS["codex"]
    lines = corpus_lines(name)
    path = tmp_path / "home" / relative
    path.parent.mkdir(parents=True)
    append_lines(path, lines[:300])
    async with await spawn(tmp_path / "home", tmp_path / "data") as client:
        session_id = await mirror_id(client, path)
        await wait_for_mirror(client, session_id, expected_after("codex", lines[:300])[0])
        await client.request("contextd/session/delete", {"sessionId": session_id})
        append_lines(path, lines[300:400])
        settled, leaf = expected_after("codex", lines[:400])
        tree = await wait_for_mirror(client, session_id, settled)
        assert [node["id"] for node in tree["nodes"]] == [entry.id for entry in settled]
        assert tree["leafId"] == leaf
