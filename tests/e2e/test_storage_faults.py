"""The daemon under storage faults, through the real daemon over stdio and over the shared
daemon's socket: damaged and linked session files, a full disk, a read-only data directory,
and the permissions of what it writes (issue 23, items 4, 5, 6, 10 and 12)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from contextd_client.rpc import ContextdError

from tests.e2e.storage import (
    fill,
    make_read_only,
    make_writable,
    small_filesystem,
)
from tests.e2e.storage import (
    daemons as daemons,  # noqa: F401 - the fixture
)
from tests.factories import assistant, user
from tests.protocol.wire import WireDaemon

SESSION_DAMAGED, STORAGE_FAILED = -32009, -32010


async def error_of(call) -> ContextdError:
    try:
        result = await call
    except ContextdError as error:
        return error
    raise AssertionError(f"should have failed, returned {result!r}")


def sessions_dir(data_dir: Path) -> Path:
    [directory] = data_dir.glob("workspaces/*/sessions")
    return directory


def plant_damaged_files(directory: Path, elsewhere: Path) -> dict[str, str]:
    """A session file of each kind of damage the issue names; returns id -> kind."""
    header = json.dumps({"type": "session", "version": 1, "id": "nested", "workspace": "w"})
    (directory / "nested.jsonl").write_text(header + "\n" + "[" * 200_000 + "\n")
    (directory / "deep-first.jsonl").write_text("[" * 200_000 + "\n")
    (directory / "headless.jsonl").write_text(json.dumps({"type": "message", "id": "x"}) + "\n")
    (directory / "binary.jsonl").write_bytes(bytes(range(256)) * 40)
    elsewhere.write_text(header.replace('"nested"', '"linked"') + "\n")
    (directory / "linked.jsonl").symlink_to(elsewhere)
    return {"deep-first": "header", "headless": "header", "binary": "header", "linked": "symbolic link"}


async def test_a_damaged_session_file_costs_only_itself(daemons, tmp_path):
    data, project = tmp_path / "data", tmp_path / "project"
    client = await daemons.start(data, project)
    good = (await client.session_open(name="good"))["sessionId"]
    await client.append(good, [user("hello"), assistant("hi")])
    damaged = plant_damaged_files(sessions_dir(data), tmp_path / "owner-file.jsonl")

    for listing in (await client.session_list(), await client.watch_workspace(project)):
        rows = {row["sessionId"]: row for row in listing["sessions"]}
        assert rows[good]["entries"] >= 2 and "damaged" not in rows[good]
        for session_id, kind in damaged.items():
            assert kind in rows[session_id]["damaged"], rows[session_id]
        # a bad line deep in a session with a header: skipped, the session serves
        assert "damaged" not in rows["nested"]
    assert (await client.context("nested"))["messages"] == []
    for session_id, kind in damaged.items():
        error = await error_of(client.state(session_id))
        assert error.code == SESSION_DAMAGED and kind in error.message
        assert error.data == {"sessionId": session_id, "damaged": error.data["damaged"]}
    assert (await client.append(good, [user("still here")]))["entryIds"]
    other = await daemons.start(data, project)  # a second client is served as well
    assert len((await other.session_list())["sessions"]) == 1 + 1 + len(damaged)
    assert (await other.delete_session("headless"))["deleted"] is True  # a damaged file can go
    assert "headless" not in {row["sessionId"] for row in (await other.session_list())["sessions"]}


async def test_a_session_file_that_is_a_link_is_neither_written_through_nor_deleted(daemons, tmp_path):
    data, project = tmp_path / "data", tmp_path / "project"
    client = await daemons.start(data, project)
    real = (await client.session_open(name="real"))["sessionId"]
    await client.close_session(real)
    directory = sessions_dir(data)
    target = tmp_path / "owners-notes.jsonl"
    (directory / f"{real}.jsonl").rename(target)
    before = target.read_bytes()
    (directory / f"{real}.jsonl").symlink_to(target)

    appended = await error_of(client.append(real, [user("through the link")]))
    deleted = await error_of(client.delete_session(real))
    for error in (appended, deleted):
        assert error.code == SESSION_DAMAGED
        assert "symbolic link" in error.message
    assert target.read_bytes() == before
    assert (directory / f"{real}.jsonl").is_symlink()


def batch(size: int) -> list[dict]:
    """Four messages bigger than a page together: the write cannot fit in a page's slack."""
    return [user(f"question {size}-{n} " + "x" * 2000) for n in range(2)] + [
        assistant(f"answer {size}-{n} " + "y" * 2000) for n in range(2)
    ]


async def test_a_full_disk_stores_a_batch_whole_or_not_at_all(daemons, tmp_path):
    data, project = tmp_path / "data", tmp_path / "project"
    with small_filesystem(data, "2m"):
        client = await daemons.start(data, project)
        session = (await client.session_open(name="on a small disk"))["sessionId"]
        acknowledged = (await client.append(session, batch(1)))["entryIds"]
        path = sessions_dir(data) / f"{session}.jsonl"
        size_before = path.stat().st_size
        state_before = await client.state(session)
        filler = fill(data)

        for attempt in range(3):  # again and again: each failure is cut back
            error = await error_of(client.append(session, batch(2)))
            assert error.code == STORAGE_FAILED and error.data == {"reason": "diskFull"}
            assert "full" in error.message
            assert path.stat().st_size == size_before
            assert await client.state(session) == state_before
        refused = await error_of(client.session_open(name="no room"))
        assert refused.code == STORAGE_FAILED

        filler.unlink()
        acknowledged += (await client.append(session, batch(3)))["entryIds"]
        assert path.read_bytes().endswith(b"\n")
        await daemons.stop()

        reopened = await daemons.start(data, project)
        context = await reopened.context(session)
        stored = json.dumps(context["messages"])
        assert stored.count("question 1-") == stored.count("answer 1-") == 2
        assert stored.count("question 3-") == stored.count("answer 3-") == 2
        assert "question 2-" not in stored and "answer 2-" not in stored
        assert [node["id"] for node in (await reopened.tree(session))["nodes"] if node["id"] in acknowledged] == acknowledged


async def test_a_read_only_data_directory_is_read_and_says_why_it_cannot_be_written(daemons, tmp_path):
    data, project = tmp_path / "data", tmp_path / "project"
    with small_filesystem(data, "4m"):
        writer = await daemons.start(data, project)
        session = (await writer.session_open(name="kept"))["sessionId"]
        await writer.append(session, [user("what is stored"), assistant("stays readable")])
        await daemons.stop()
        make_read_only(data)
        try:
            client = await daemons.start(data, project)
            [row] = (await client.session_list())["sessions"]
            assert row["sessionId"] == session and row["entries"] >= 2
            context = await client.context(session)
            assert "what is stored" in json.dumps(context["messages"])
            assert (await client.state(session))["sessionId"] == session
            for call in (
                client.append(session, [user("more")]),
                client.session_open(name="new"),
                client.set_instructions(session, "be brief"),
            ):
                error = await error_of(call)
                assert error.code == STORAGE_FAILED and error.data == {"reason": "readOnly"}
                assert "read-only" in error.message
        finally:
            await daemons.stop()
            make_writable(data)


async def test_a_session_opened_read_only_takes_writes_once_the_directory_is_writable_again(daemons, tmp_path):
    data, project = tmp_path / "data", tmp_path / "project"
    with small_filesystem(data, "4m"):
        writer = await daemons.start(data, project)
        session = (await writer.session_open(name="kept"))["sessionId"]
        await writer.append(session, [user("before the remount"), assistant("stored")])
        await daemons.stop()
        session_file = sessions_dir(data) / f"{session}.jsonl"
        with session_file.open("ab") as file:
            file.write(b'{"type":"message","id":"torn')  # a write a crash cut short
        make_read_only(data)
        try:
            client = await daemons.start(data, project)
            error = await error_of(client.append(session, [user("while read-only")]))
            assert error.code == STORAGE_FAILED and error.data == {"reason": "readOnly"}
            make_writable(data)
            # The same session, never closed: the next write takes.
            await client.append(session, [user("after the remount"), assistant("stored too")])
            texts = json.dumps((await client.context(session))["messages"])
            assert "after the remount" in texts and "while read-only" not in texts
        finally:
            await daemons.stop()
            make_writable(data)
        # The crash's torn line was set aside first, so every line of the file reads.
        lines = [json.loads(line) for line in session_file.read_text().splitlines()]
        assert [line["message"]["content"] for line in lines if line.get("type") == "message"][-2] == "after the remount"
        assert session_file.with_name(session_file.name + ".torn").read_bytes().startswith(b'{"type":"message","id":"torn')
        reader = await daemons.start(data, project)
        assert "after the remount" in json.dumps((await reader.context(session))["messages"])


def modes(root: Path) -> dict[str, int]:
    return {
        str(path.relative_to(root)): stat.S_IMODE(path.lstat().st_mode)
        for path in [root, *root.rglob("*")]
        if not path.is_symlink() and not path.is_socket()
    }


async def test_everything_under_the_data_dir_is_the_owners_only(daemons, tmp_path):
    """Existing folders and files made open by an older version are tightened at start,
    and a second local user (uid 65534) can read nothing of them."""
    base = tmp_path / "home"
    base.mkdir()
    for folder in (tmp_path, base):
        folder.chmod(0o755)
    data, project = base / "data", tmp_path / "project"
    old_workspace = data / "workspaces" / "old-0123456789ab"
    (old_workspace / "sessions").mkdir(parents=True)
    for folder in (data, data / "workspaces", old_workspace, old_workspace / "sessions"):
        folder.chmod(0o755)
    for name in ("workspace.json", "index.json", "sessions/a.jsonl.torn"):
        (old_workspace / name).write_text("{}")
        (old_workspace / name).chmod(0o644)

    client = await daemons.start(data, project)
    session = (await client.session_open(name="private"))["sessionId"]
    await client.append(session, [user("a secret plan"), assistant("noted")])
    await client.session_list()  # writes the listing index
    found = modes(data)
    assert len(found) >= 10
    assert {path: mode for path, mode in found.items() if mode not in (0o700, 0o600)} == {}
    assert all(mode == 0o700 for path, mode in found.items() if (data / path).is_dir())

    files = [str(data / path) for path in found if (data / path).is_file()]
    as_other_user = subprocess.run(
        ["cat", *files], user=65534, group=65534, capture_output=True, text=True, check=False
    )
    assert as_other_user.stdout == ""
    assert as_other_user.stderr.count("Permission denied") == len(files)
    assert os.stat(data).st_uid == os.getuid()


async def test_a_root_with_a_nul_is_refused_by_follow(daemons, tmp_path):
    client = await daemons.start(tmp_path / "data", tmp_path / "project")
    error = await error_of(client.follow(enabled=True, roots={"claude-code": "/tmp/a\0b"}))
    assert error.code == -32602
    assert "roots" in json.dumps(error.data) and "NUL" in json.dumps(error.data)
    assert (await client.follow())["enabled"] is False
    assert (await client.session_open(name="still served"))["sessionId"]


async def test_a_root_with_a_lone_surrogate_is_refused_by_follow(tmp_path):
    """A lone surrogate arrives as a JSON escape (no client library can encode it)."""
    daemon = await WireDaemon.start(tmp_path / "data")
    try:
        reply = await daemon.call("contextd/follow", {"enabled": True, "roots": {"pi": "/tmp/\ud800x"}})
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"]["errors"][0]["field"] == "roots.pi"
        follow = await daemon.call("contextd/follow", {})
        assert follow["result"]["enabled"] is False
    finally:
        await daemon.stop()
