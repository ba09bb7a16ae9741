"""Settings a user sets take effect on the real shared daemon: from the user file, from an
editor's workspace settings (pulled with `workspace/configuration` per folder, as VS Code
answers it) and from a client's own settings object (as Neovim's setup() sends it), with
session > workspace > user file > built-in, and a visible warning for what cannot apply."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from contextd.importers import IMPORTERS, save
from contextd.session.counts import counts_path
from contextd_client import ContextdClient

from tests.corpus import read_text
from tests.e2e.support import append_turns
from tests.shared_daemon import shared_command, stop_daemon

WAIT = 60.0
BUILT_IN_THRESHOLD = 170_000  # claude-sonnet-4-5: 200k window less 15%


class VsCodeShapedClient(ContextdClient):
    """Answers `workspace/configuration` per item's scopeUri, with only the keys set
    explicitly for that folder, as the extension does with `inspect()`."""

    explicit: dict[str, dict[str, Any]]

    async def _serve_request(self, method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            return [self.explicit.get(item.get("scopeUri", ""), {}) for item in params["items"]]
        return await super()._serve_request(method, params)

    async def settings_changed(self) -> None:
        """What VS Code's client sends on a change: no settings, so the daemon pulls them."""
        await self._rpc.notify("workspace/didChangeConfiguration", {"settings": None})


@pytest.fixture
def config_home(tmp_path: Path) -> Path:
    return tmp_path / "config"


def write_user_file(config_home: Path, settings: dict[str, Any]) -> None:
    path = config_home / "contextd" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(settings))
    partial.replace(path)


@pytest_asyncio.fixture
async def clients(
    tmp_path: Path, shared_env: dict[str, str], config_home: Path
) -> AsyncIterator[Callable[..., Any]]:
    """`await clients(workspace, settings=..., kind=ContextdClient)`: clients of one real
    shared daemon whose user file is under `config_home`."""
    env = {**shared_env, "XDG_CONFIG_HOME": str(config_home)}
    data_dir = tmp_path / "data"
    started: list[ContextdClient] = []
    pids: list[int] = []

    async def start(workspace: Path, *, kind: type[ContextdClient] = ContextdClient, **options: Any) -> Any:
        workspace.mkdir(parents=True, exist_ok=True)
        if kind is VsCodeShapedClient:
            kind.explicit = options.pop("explicit", {})
        client = await kind.spawn(
            data_dir=data_dir, workspace=workspace, env=env, command=shared_command(data_dir), **options
        )
        started.append(client)
        if not pids:
            pids.append((await client.daemon_status())["pid"])
        return client

    yield start
    for client in started:
        await client.close()
    for pid in pids:
        stop_daemon(pid)


async def threshold_becomes(client: ContextdClient, session_id: str, tokens: int) -> None:
    """Waits for the daemon to apply `tokens` as the session's threshold (it says so in a
    tokenUsage notification, or the state already shows it)."""
    with client.notifications("contextd/tokenUsage") as stream:
        if (await client.state(session_id))["usage"]["thresholdTokens"] == tokens:
            return
        async with asyncio.timeout(WAIT):
            async for note in stream:
                if note.params["sessionId"] == session_id and note.params["thresholdTokens"] == tokens:
                    return


async def messages_shown(client: ContextdClient, count: int) -> list[str]:
    shown: list[str] = []
    with client.notifications("window/showMessage") as stream:
        async with asyncio.timeout(WAIT):
            async for note in stream:
                shown.append(note.params["message"])
                if len(shown) == count:
                    return shown
    return shown


async def test_the_user_file_sets_the_threshold_and_a_change_applies_at_once(
    clients: Callable[..., Any], tmp_path: Path, config_home: Path
) -> None:
    write_user_file(config_home, {"compaction": {"thresholdPercent": 0.5}})
    client = await clients(tmp_path / "ws")
    opened = await client.session_open()
    await threshold_becomes(client, opened["sessionId"], 100_000)

    write_user_file(config_home, {"compaction": {"thresholdPercent": 0.6}})
    await threshold_becomes(client, opened["sessionId"], 120_000)

    write_user_file(config_home, {})
    await threshold_becomes(client, opened["sessionId"], BUILT_IN_THRESHOLD)


async def test_a_user_file_with_a_bad_value_is_shown_and_the_settings_before_it_stay(
    clients: Callable[..., Any], tmp_path: Path, config_home: Path
) -> None:
    write_user_file(config_home, {"compaction": {"thresholdPercent": 0.5}})
    client = await clients(tmp_path / "ws")
    opened = await client.session_open()
    with client.notifications("window/showMessage") as stream:
        write_user_file(config_home, {"compaction": {"thresholdPercent": 7}})
        async with asyncio.timeout(WAIT):
            note = await stream.get()
    assert note.params["type"] == 1
    assert "compaction.thresholdPercent" in note.params["message"], note.params
    assert (await client.state(opened["sessionId"]))["usage"]["thresholdTokens"] == 100_000


async def test_an_editors_setup_table_sets_its_workspaces_threshold_over_the_user_file(
    clients: Callable[..., Any], tmp_path: Path, config_home: Path
) -> None:
    # Neovim sends its setup() table as initializationOptions and answers the pull with it.
    write_user_file(config_home, {"compaction": {"thresholdPercent": 0.6}})
    editor = await clients(tmp_path / "ws", settings={"compaction": {"thresholdPercent": 0.5}})
    mine = await editor.session_open()
    await threshold_becomes(editor, mine["sessionId"], 100_000)

    # Another workspace's sessions keep the user file's value.
    script = await clients(tmp_path / "other")
    theirs = await script.session_open()
    await threshold_becomes(script, theirs["sessionId"], 120_000)

    # The editor leaves: its workspace's sessions fall back to the user file.
    await editor.close()
    await threshold_becomes(script, mine["sessionId"], 120_000)


async def test_vscode_shaped_workspace_answers_apply_per_folder_and_on_change(
    clients: Callable[..., Any], tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    uri = workspace.resolve().as_uri()
    vscode = await clients(
        workspace, kind=VsCodeShapedClient, explicit={uri: {"compaction": {"thresholdTokens": 90_000}}}
    )
    opened = await vscode.session_open()
    await threshold_becomes(vscode, opened["sessionId"], 90_000)

    VsCodeShapedClient.explicit = {uri: {"compaction": {"thresholdTokens": 80_000}}}
    await vscode.settings_changed()
    await threshold_becomes(vscode, opened["sessionId"], 80_000)

    VsCodeShapedClient.explicit = {uri: {}}  # the user removed the setting: back to built-in
    await vscode.settings_changed()
    await threshold_becomes(vscode, opened["sessionId"], BUILT_IN_THRESHOLD)


async def test_a_sessions_own_model_stands_over_the_workspace_settings(
    clients: Callable[..., Any], tmp_path: Path
) -> None:
    editor = await clients(tmp_path / "ws", settings={"compaction": {"thresholdPercent": 0.5}})
    opened = await editor.session_open(model="gpt-4.1")  # 1,047,576 tokens
    await threshold_becomes(editor, opened["sessionId"], 523_788)


async def test_conflicting_editors_the_first_wins_and_the_other_is_told_once(
    clients: Callable[..., Any], tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    first = await clients(workspace, settings={"compaction": {"thresholdPercent": 0.5}})
    opened = await first.session_open()
    await threshold_becomes(first, opened["sessionId"], 100_000)

    second = await clients(workspace, settings={"compaction": {"thresholdPercent": 0.7}}, kind=ContextdClient)
    # The warning is sent while the handshake runs; ask the daemon again to see it come once.
    shown = asyncio.ensure_future(messages_shown(second, 1))
    await second.change_settings({"compaction": {"thresholdPercent": 0.7}})
    await second.change_settings({"compaction": {"thresholdPercent": 0.7}})
    status = await first.state(opened["sessionId"])
    assert status["usage"]["thresholdTokens"] == 100_000
    await second.change_settings({"compaction": {"thresholdPercent": 0.8}})
    (message,) = await shown
    assert "compaction.thresholdPercent" in message and "0.8" in message and "0.5" in message, message


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"compaction": {"keepRecent": 1}}, "compaction.keepRecent ignored (did you mean compaction.keepRecentTokens?)"),
        ({"storage": {"maxLoadedSessions": 3}}, "storage.maxLoadedSessions cannot be set by an editor"),
        ({"summarizer": {"baseUrl": "http://127.0.0.1:9/"}}, "summarizer.baseUrl cannot be set by an editor"),
    ],
)
async def test_a_setting_that_cannot_apply_is_shown_not_logged(
    clients: Callable[..., Any], tmp_path: Path, settings: dict[str, Any], expected: str
) -> None:
    client = await clients(tmp_path / "ws")
    shown = asyncio.ensure_future(messages_shown(client, 1))
    await client.change_settings(settings)
    (message,) = await shown
    assert expected in message, message


async def test_the_settings_request_names_where_each_value_comes_from(
    clients: Callable[..., Any], tmp_path: Path, config_home: Path
) -> None:
    write_user_file(config_home, {"compaction": {"thresholdPercent": 0.6}, "idle": {"enabled": True}})
    workspace = tmp_path / "ws"
    editor = await clients(workspace, settings={"compaction": {"thresholdPercent": 0.5}})
    answer = await editor.request("contextd/settings", {"workspace": str(workspace.resolve())})
    assert answer["settings"]["compaction"]["thresholdPercent"] == 0.5
    assert answer["settings"]["idle"]["enabled"] is True
    assert answer["sources"]["idle.enabled"] == "user file"
    assert answer["sources"]["compaction.thresholdPercent"].startswith(f"workspace {workspace.resolve()}")
    assert "compaction.keepRecentTokens" not in answer["sources"]  # built in


def session_naming_no_model(data_dir: Path, workspace: Path) -> str:
    """A real Claude Code transcript whose answers name no model, imported as a session: it
    talks to the default model, and its calibration is learned under that model's tokenizer."""
    lines = []
    for line in read_text("claude-code-atlas-short.jsonl.gz").splitlines():
        data = json.loads(line)
        if isinstance(data.get("message"), dict):
            data["message"].pop("model", None)
        lines.append(json.dumps(data))
    session_id, _ = save(IMPORTERS["claude-code"](iter(lines)), data_dir, workspace=str(workspace), name=None)
    return session_id


async def test_a_new_default_model_shows_the_figure_a_fresh_load_under_it_shows(
    clients: Callable[..., Any], tmp_path: Path, config_home: Path
) -> None:
    # Both models are counted alike (o200k, no prior beyond 1.0) but by other tokenizers,
    # with other windows: the counts stand, the window and what the calibration learned move.
    write_user_file(config_home, {"defaultModel": "gemini-2.5-pro"})
    workspace = tmp_path / "ws"
    session_id = session_naming_no_model(tmp_path / "data", workspace)
    client = await clients(workspace)
    before = (await client.session_open(session_id=session_id))["usage"]
    assert before["model"] == "gemini-2.5-pro" and before["calibration"] != 1.0  # the reports taught it

    with client.notifications("contextd/tokenUsage") as stream:
        write_user_file(config_home, {"defaultModel": "glm-4.6"})
        async with asyncio.timeout(WAIT):
            applied = (await stream.get()).params
    assert applied["sessionId"] == session_id

    path = Path((await client.state(session_id))["path"])
    await client.request("contextd/session/close", {"sessionId": session_id})
    counts_path(path).unlink()  # nothing kept: the load counts and learns everything again
    fresh = (await client.session_open(session_id=session_id))["usage"]
    assert fresh["model"] == "glm-4.6" and fresh["contextWindow"] == 128_000
    assert applied == fresh


async def test_idle_compaction_turned_off_in_the_user_file_cancels_an_armed_timer(
    clients: Callable[..., Any], tmp_path: Path, config_home: Path
) -> None:
    idle = {"enabled": True, "timeoutSeconds": 30, "thresholdTokens": 1}
    write_user_file(config_home, {"idle": idle, "compaction": {"keepRecentTokens": 200}})
    client = await clients(tmp_path / "ws")
    session_id = (await client.session_open())["sessionId"]
    with client.notifications("contextd/idleTimer") as timers:
        await append_turns(client, session_id, range(4))  # enough to compact, when it fires
        async with asyncio.timeout(WAIT):
            while (await timers.get()).params["state"] != "armed":
                pass
        write_user_file(config_home, {"idle": {**idle, "enabled": False}, "compaction": {"keepRecentTokens": 200}})
        async with asyncio.timeout(WAIT):
            after = (await timers.get()).params
            while after["state"] == "armed":  # each append armed it again
                after = (await timers.get()).params
    assert after["state"] == "cancelled" and "reason" not in after, after  # not fired
