"""A followed transcript goes on from the byte it reached: after a restart its importer is
restored from the state saved beside the mirror and reads only what came after. What was
saved of a transcript goes when the transcript, or its mirror, goes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from contextd.follow import mirror as mirror_module
from contextd.follow.mirror import HEAD_BYTES, Mirror, ReadState, follower_importer, mirror_session_id
from contextd.importers import IMPORTERS
from contextd.importers.feed import LineFeed
from contextd.follow.transcripts import FileStamp

from tests.follow.support import (
    TRANSCRIPTS,
    WAIT,
    append_lines,
    corpus_lines,
    expected_after,
    mirror_id,
    spawn,
    wait_for_mirror,
)


def stamp(path: Path) -> FileStamp:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def dumped(entries: list[Any]) -> list[Any]:
    return [entry.model_dump(mode="json") for entry in entries]


def first_half_followed(tmp_path: Path, agent: str) -> tuple[Path, list[bytes], int, list[Any]]:
    """A transcript's first half written and read by a mirror that saved its state; returns
    the file, the corpus lines, where the half ends and what the mirror took."""
    name, relative = TRANSCRIPTS[agent]
    lines = corpus_lines(name)
    half = len(lines) // 2
    path = tmp_path / "home" / relative
    path.parent.mkdir(parents=True)
    append_lines(path, lines[:half])
    mirror = Mirror(agent, str(path), "/work", tmp_path / "follow")  # type: ignore[arg-type]
    change = mirror.catch_up(stamp(path))
    assert change is not None and change.from_start
    mirror.written()
    return path, lines, half, change.entries


@pytest.mark.parametrize("agent", sorted(TRANSCRIPTS))
def test_a_restart_reads_on_from_the_saved_byte_and_mirrors_what_an_uninterrupted_follow_does(
    tmp_path: Path, agent: str
) -> None:
    path, lines, half, before = first_half_followed(tmp_path, agent)
    offset = len(b"".join(lines[:half]))
    assert offset > HEAD_BYTES
    # After the restart the bytes already read are garbage (the first ones apart, which tell a
    # rewritten file): were they read again, the entries would not come out right.
    with open(path, "r+b") as handle:
        handle.seek(HEAD_BYTES)
        handle.write(b"x" * (offset - HEAD_BYTES))
    append_lines(path, lines[half:])
    restarted = Mirror(agent, str(path), "/work", tmp_path / "follow")  # type: ignore[arg-type]
    change = restarted.catch_up(stamp(path))
    assert change is not None and not change.reset and not change.from_start
    uninterrupted, leaf = expected_after(agent, lines)
    assert dumped(before + change.entries) == dumped(uninterrupted)
    assert change.leaf_id == leaf


@pytest.mark.parametrize("agent", ["codex", "pi"])
def test_a_followers_importer_restored_after_a_restart_reports_as_a_new_one_does(tmp_path: Path, agent: str) -> None:
    """The report of every line left out is `contextd import`'s; a follower, new or going on
    from its saved state, spares the reports that cost on many lines (Codex's UI events and
    turn settings, pi's dropped fields) and logs the lines it cannot read."""
    path, lines, half, _ = first_half_followed(tmp_path, agent)
    lines = [*lines, b"{not json\n"]
    saved = ReadState.load(tmp_path / "follow" / f"{mirror_session_id(agent, str(path))}.json")
    assert saved is not None
    importer_path = tmp_path / "follow" / f"{mirror_session_id(agent, str(path))}.importer.json"
    restored = saved.restored_feed(agent, importer_path)  # type: ignore[arg-type]
    assert restored is not None
    restored.feed(b"".join(lines[half:]))
    new = LineFeed(follower_importer(agent))  # type: ignore[arg-type]
    new.feed(b"".join(lines))
    reported = [problem for problem in new.importer.problems if problem.line > half]
    assert restored.importer.problems == reported and reported[-1].kind == "corrupt"
    whole = IMPORTERS[agent]([line.decode() for line in lines])
    assert len([problem for problem in whole.problems if problem.line > half]) > len(reported)


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut short
        lambda text: json.dumps({**json.loads(text), "version": 0}),  # another version
        None,  # missing
    ],
    ids=["damaged", "another-version", "missing"],
)
def test_without_a_matching_saved_state_the_file_is_read_again_from_the_start(tmp_path: Path, damage: Any) -> None:
    path, lines, half, _ = first_half_followed(tmp_path, "codex")
    importer_path = tmp_path / "follow" / f"{mirror_session_id('codex', str(path))}.importer.json"
    if damage is None:
        importer_path.unlink()
    else:
        importer_path.write_text(damage(importer_path.read_text()))
    append_lines(path, lines[half:])
    restarted = Mirror("codex", str(path), "/work", tmp_path / "follow")
    change = restarted.catch_up(stamp(path))
    assert change is not None and change.from_start and not change.reset
    assert dumped(change.entries) == dumped(expected_after("codex", lines)[0])  # the follower skips those it has


async def test_saved_states_go_with_their_transcript_or_mirror(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    paths = {}
    for agent, (name, relative) in TRANSCRIPTS.items():
        paths[agent] = home / relative
        paths[agent].parent.mkdir(parents=True)
        append_lines(paths[agent], corpus_lines(name)[:60])

    def saved(agent: str) -> set[str]:
        session_id = mirror_session_id(agent, str(paths[agent]))  # type: ignore[arg-type]
        return {path.name for path in (data / "follow").glob(f"{session_id}.*")}

    async def until_forgotten(agent: str) -> None:
        async with asyncio.timeout(WAIT):
            while saved(agent):
                await asyncio.sleep(0.05)

    async with await spawn(home, data) as client:
        ids = {agent: await mirror_id(client, path) for agent, path in paths.items()}
        for agent in TRANSCRIPTS:
            await wait_for_mirror(client, ids[agent], expected_after(agent, corpus_lines(TRANSCRIPTS[agent][0])[:60])[0])
        assert all(saved(agent) == {f"{ids[agent]}.json", f"{ids[agent]}.importer.json"} for agent in TRANSCRIPTS)
        await client.request("contextd/session/delete", {"sessionId": ids["codex"]})
        assert not saved("codex")  # the mirror was deleted
        paths["pi"].unlink()
        await until_forgotten("pi")  # the transcript was deleted
        assert (await client.session_list()) and saved("claude-code")
    paths["claude-code"].unlink()  # while no daemon follows it
    async with await spawn(home, data) as client:
        await until_forgotten("claude-code")
        assert any(row["sessionId"] == ids["claude-code"] for row in (await client.session_list())["sessions"])



@pytest.mark.parametrize("agent", sorted(TRANSCRIPTS))
def test_a_long_transcript_is_read_a_budget_at_a_time_into_the_same_entries(
    tmp_path: Path, agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold start of long transcripts holds one budget's worth at a time; a line longer
    than the budget is read whole."""
    monkeypatch.setattr(mirror_module, "READ_BUDGET", 4096)
    name, relative = TRANSCRIPTS[agent]
    lines = corpus_lines(name)
    assert max(map(len, lines)) > 4096
    path = tmp_path / relative
    path.parent.mkdir(parents=True)
    append_lines(path, lines)
    mirror = Mirror(agent, str(path), "/work", tmp_path / "follow")  # type: ignore[arg-type]
    taken: list[Any] = []
    reads, leaf_id, final = 0, None, stamp(path)
    while (change := mirror.catch_up(final)) is not None:
        assert change.from_start == (not taken)  # a mirror missing is made from the first part only
        taken += change.entries
        reads, leaf_id = reads + 1, change.leaf_id
        mirror.written()
    assert reads > len(b"".join(lines)) // (4096 + max(map(len, lines)))
    assert mirror.seen == final
    uninterrupted, leaf = expected_after(agent, lines)
    assert dumped(taken) == dumped(uninterrupted) and leaf_id == leaf
    restarted = Mirror(agent, str(path), "/work", tmp_path / "follow")  # type: ignore[arg-type]
    assert restarted.catch_up(final) is None  # saved as read to the end
