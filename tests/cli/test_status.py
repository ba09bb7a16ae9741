"""`contextd status`: exit 3 (no daemon) when none runs, as protocol.md says; the other
clients of the shared daemon, never itself."""

from __future__ import annotations

import json
from pathlib import Path

from contextd_client import ContextdClient

from tests.shared_daemon import contextd, shared_command, stop_daemon


async def test_status_lists_the_other_clients_and_not_itself(tmp_path: Path, shared_env: dict[str, str]) -> None:
    data_dir = tmp_path / "data"
    none = contextd(shared_env, data_dir, "status")
    assert none.returncode == 3 and "no shared daemon runs" in none.stderr

    editor = await ContextdClient.spawn(
        data_dir=data_dir, workspace=tmp_path, env=shared_env, command=shared_command(data_dir)
    )
    try:
        shown = contextd(shared_env, data_dir, "status")
        assert shown.returncode == 0, shown.stderr
        assert "other clients: 1" in shown.stdout
        answer = json.loads(contextd(shared_env, data_dir, "status", "--json").stdout)
        assert len(answer["connections"]) == 2 and answer["connection"] in [c["id"] for c in answer["connections"]]
    finally:
        pid = (await editor.daemon_status())["pid"]
        await editor.close()
        stop_daemon(pid)
