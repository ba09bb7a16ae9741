"""A followed agent's compaction point from the agent's own environment: its hook reports the
variables the point is worked out from (and no other), the daemon keeps them per transcript,
and the mirror's `agentCompaction` follows them instead of the daemon's environment."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from contextd_client import ContextdClient
from contextd_client import rpc as client_rpc
from contextd_client.agents import hooks
from contextd_client.rpc import ContextdError

from contextd.compaction.agent_points import AGENT_VARIABLES
from tests.agents.codex_runs import codex_config, run_codex
from tests.agents.fake_llm import FakeLLM
from tests.agents.real_agents import agent_command, claude_environment, contextd, offline_environment, run_turns
from tests.shared_daemon import shared_command, stop_daemon

RUN = Path(__file__).parent / "runs" / "claude-code-2.1.328-compact.jsonl.gz"
RECORDED_CWD = "/tmp/imp/cc/work"
"""The working directory the real Claude Code run recorded (moved to the test's workspace)."""
SESSION = "bc07098a-81f6-40ec-bec8-e27faaa97d76"
SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-api03-NEVER-LEAVES-1234", "GITHUB_TOKEN": "ghp_NEVERLEAVES5678"}
"""Variables an agent's environment holds that must never leave its process."""
MIRROR_SECONDS = 60.0


def claude_transcript(home: Path, workspace: Path) -> Path:
    """The real run's transcript where Claude Code keeps it, as if run in `workspace`."""
    text = gzip.decompress(RUN.read_bytes()).decode().replace(RECORDED_CWD, str(workspace))
    path = home / ".claude" / "projects" / str(workspace).replace("/", "-") / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def session_start(transcript: Path, workspace: Path, source: str = "startup") -> dict[str, Any]:
    """The event Claude Code sends its SessionStart hooks on stdin."""
    return {
        "session_id": SESSION, "transcript_path": str(transcript), "cwd": str(workspace),
        "hook_event_name": "SessionStart", "source": source,
    }


async def mirror_of(client: ContextdClient, workspace: Path, transcript: Path) -> str:
    deadline = asyncio.get_running_loop().time() + MIRROR_SECONDS
    while asyncio.get_running_loop().time() < deadline:
        for row in (await client.session_list(workspace=workspace))["sessions"]:
            if row.get("source", {}).get("path") == str(transcript):
                return row["sessionId"]
        await asyncio.sleep(0.2)
    raise AssertionError("the daemon never mirrored the transcript")


async def agent_compaction(client: ContextdClient, session: str) -> dict[str, Any]:
    return dict((await client.state(session))["usage"]["agentCompaction"])


def without_agent_variables(env: dict[str, str]) -> dict[str, str]:
    names = {name for names in AGENT_VARIABLES.values() for name in names}
    return {name: value for name, value in env.items() if name not in names}


async def test_the_mirror_follows_the_environment_the_agent_runs_in_not_the_daemons(
    tmp_path: Path, shared_env: dict[str, str]
) -> None:
    home, workspace, data_dir = tmp_path / "home", tmp_path / "work", tmp_path / "data"
    workspace.mkdir(parents=True)
    transcript = claude_transcript(home, workspace)
    # The shared daemon was started elsewhere (an editor, another shell), where compaction is off.
    daemon_env = {**without_agent_variables(shared_env), "HOME": str(home), "DISABLE_AUTO_COMPACT": "1"}
    # `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50 claude` in a shell without DISABLE_AUTO_COMPACT.
    agent_env = {
        **without_agent_variables(shared_env), "HOME": str(home), "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50", **SECRETS,
    }
    client = await ContextdClient.spawn(
        data_dir=data_dir, workspace=workspace, env=daemon_env, command=shared_command(data_dir),
    )
    pid = (await client.daemon_status())["pid"]
    try:
        await client.follow(enabled=True)
        session = await mirror_of(client, workspace, transcript)
        before = await agent_compaction(client, session)
        assert before["enabled"] is False
        assert "DISABLE_AUTO_COMPACT is set in the daemon's environment" in before["basis"]
        moved = asyncio.Event()
        client.on("contextd/tokenUsage", lambda _, usage: moved.set() if usage["agentCompaction"]["enabled"] else None)

        hook = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "hook", "claude-code"],
            input=json.dumps(session_start(transcript, workspace)), env=agent_env, cwd=workspace,
            capture_output=True, text=True, timeout=120,
        )
        assert (hook.returncode, hook.stdout, hook.stderr) == (0, "", "")  # a startup adds nothing
        # The editors hear the point move at once, before the transcript changes again.
        await asyncio.wait_for(moved.wait(), MIRROR_SECONDS)

        after = await agent_compaction(client, session)
        window = (await client.state(session))["contextWindow"]
        assert after["enabled"] is True and 0 < after["tokens"] < window // 2
        assert "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE = 50 in the agent's environment (its hook)" in after["basis"]
        assert "lowers it to 50% of the effective window" in after["basis"]
    finally:
        await client.close()
    stop_daemon(pid)
    assert_no_secret_in(data_dir)


def assert_no_secret_in(data_dir: Path) -> None:
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert not any(secret.encode() in path.read_bytes() for secret in SECRETS.values()), path


async def test_the_real_claude_codes_hook_gives_the_point_of_the_environment_it_was_started_in(
    tmp_path: Path, shared_env: dict[str, str]
) -> None:
    """`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50 claude` beside a shared daemon started where
    DISABLE_AUTO_COMPACT is set: the installed SessionStart hook reports the agent's own."""
    claude = agent_command("claude-code", "claude")
    home, workspace, data_dir = tmp_path / "home", tmp_path / "work", tmp_path / "data"
    workspace.mkdir(parents=True)
    home.mkdir()
    daemon_env = {**without_agent_variables(shared_env), "HOME": str(home), "DISABLE_AUTO_COMPACT": "1"}
    client = await ContextdClient.spawn(
        data_dir=data_dir, workspace=workspace, env=daemon_env, command=shared_command(data_dir),
    )
    pid = (await client.daemon_status())["pid"]
    try:
        await client.follow(enabled=True)
        with FakeLLM() as fake:
            agent_env = {
                **without_agent_variables(claude_environment(home, shared_env, fake)),
                "HOME": str(home), "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50", **SECRETS,
            }
            assert "changed:" in await asyncio.to_thread(contextd, agent_env, data_dir, "install", "claude-code")
            events = await asyncio.to_thread(run_turns, claude, agent_env, workspace, ["NOTOOL hello"], {})
        assert [event.get("subtype") for event in events if event.get("type") == "result"] == ["success"]
        transcript = next((home / ".claude" / "projects").glob("*/*.jsonl"))
        session = await mirror_of(client, workspace, transcript)
        point = await agent_compaction(client, session)
        assert point["enabled"] is True, point
        assert "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE = 50 in the agent's environment (its hook)" in point["basis"]
    finally:
        await client.close()
    stop_daemon(pid)
    assert_no_secret_in(data_dir)


async def test_the_hook_sends_the_daemon_only_the_points_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in {name for names in AGENT_VARIABLES.values() for name in names}:
        monkeypatch.delenv(name, raising=False)
    for name, value in {**SECRETS, "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50", "CODEX_HOME": "/elsewhere"}.items():
        monkeypatch.setenv(name, value)
    sent: list[bytes] = []
    framed = client_rpc.framed

    def recorded(message: dict[str, Any]) -> bytes:
        sent.append(framed(message))
        return sent[-1]

    monkeypatch.setattr(client_rpc, "framed", recorded)
    workspace = tmp_path / "work"
    workspace.mkdir()
    transcript = workspace / "t.jsonl"

    async def connect(folder: str) -> ContextdClient:
        return await ContextdClient.spawn(data_dir=tmp_path / "data", workspace=folder, shared=False)

    answer = await hooks.run_hook("claude-code", session_start(transcript, workspace), connect)
    assert answer is None
    reports = [json.loads(frame.split(b"\r\n\r\n", 1)[1]) for frame in sent if b"contextd/follow/environment" in frame]
    assert [report["params"]["environment"] for report in reports] == [{"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}]
    everything = b"".join(sent)
    assert not any(secret.encode() in everything for secret in SECRETS.values())
    assert b"/elsewhere" not in everything  # Codex's variable is none of Claude Code's


@pytest.mark.parametrize(("environment", "why"), [
    ({"ANTHROPIC_API_KEY": "sk-ant-x"}, "not a variable the agent's compaction point is worked out from"),
    ({"CODEX_HOME": "/c"}, "not a variable the agent's compaction point is worked out from"),
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": 50}, "string"),
    ({"CLAUDE_CONFIG_DIR": "x" * 4097}, "4096"),
    ({"CLAUDE_CONFIG_DIR": "/a\0b"}, "NUL"),
])
async def test_a_report_outside_the_allow_list_or_bounds_is_refused_naming_the_field(
    client: ContextdClient, environment: dict[str, Any], why: str
) -> None:
    params = {"agent": "claude-code", "transcriptPath": "/t.jsonl", "environment": environment}
    with pytest.raises(ContextdError) as refused:
        await client.request("contextd/follow/environment", params)
    assert refused.value.code == -32602
    fields = refused.value.data["errors"]
    assert fields[0]["field"].startswith("environment") and why in fields[0]["message"], fields
    assert "sk-ant-x" not in json.dumps(refused.value.data)  # a refused value is never echoed
    with pytest.raises(ContextdError) as no_agent:
        await client.request("contextd/follow/environment", {**params, "agent": "cursor"})
    fields_named = [error["field"] for error in no_agent.value.data["errors"]]
    assert "agent" in fields_named and "environment" not in fields_named  # the agent's error only
    kept = await client.request(
        "contextd/follow/environment", {**params, "environment": {"DISABLE_COMPACT": "1", "HOME": "/h"}},
    )
    assert kept == {"transcriptPath": "/t.jsonl", "variables": ["DISABLE_COMPACT", "HOME"]}


async def test_the_real_codexs_hook_gives_the_point_of_its_own_codex_home(tmp_path: Path, shared_env: dict[str, str]) -> None:
    """Codex started with a CODEX_HOME the shared daemon's environment does not name: the
    point is its config.toml's limit, not that of the daemon's CODEX_HOME."""
    codex = agent_command("codex", "codex")
    home, workspace, data_dir = tmp_path / "home", tmp_path / "work", tmp_path / "data"
    codex_home, daemons_codex_home = home / ".codex", tmp_path / "daemons-codex"
    for folder in (workspace, codex_home, daemons_codex_home):
        folder.mkdir(parents=True)
    (daemons_codex_home / "config.toml").write_text("model_auto_compact_token_limit = 50000\n")
    settings = tmp_path / "daemon-settings.json"  # the owner follows the agent's sessions folder
    settings.write_text(json.dumps({"follow": {"roots": {"codex": str(codex_home / "sessions")}}}))
    daemon_env = {**without_agent_variables(shared_env), "HOME": str(home), "CODEX_HOME": str(daemons_codex_home)}
    client = await ContextdClient.spawn(
        data_dir=data_dir, workspace=workspace, env=daemon_env, command=shared_command(data_dir, "--settings", str(settings)),
    )
    pid = (await client.daemon_status())["pid"]
    try:
        await client.follow(enabled=True)
        with FakeLLM() as fake:
            (codex_home / "config.toml").write_text(codex_config(fake))  # its limit: 1,000
            agent_env = {
                **without_agent_variables(offline_environment(home, shared_env)),
                "CODEX_HOME": str(codex_home), "FAKE_API_KEY": "dummy", **SECRETS,
            }
            await asyncio.to_thread(contextd, agent_env, data_dir, "install", "codex")
            await asyncio.to_thread(run_codex, codex, agent_env, workspace, "NOTOOL hello", None)
        transcript = next((codex_home / "sessions").rglob("rollout-*.jsonl"))
        session = await mirror_of(client, workspace, transcript)
        point = await agent_compaction(client, session)
        assert point["tokens"] == 1_000, point
        assert "model_auto_compact_token_limit = 1000 in ~/.codex/config.toml" in point["basis"]
    finally:
        await client.close()
    stop_daemon(pid)
    assert_no_secret_in(data_dir)
