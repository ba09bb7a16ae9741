"""The agents' own variables move their transcripts (Claude Code's CLAUDE_CONFIG_DIR, Codex's
CODEX_HOME, pi's PI_CODING_AGENT_DIR and PI_CODING_AGENT_SESSION_DIR): the daemon follows
them there, as the agents write them."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path

from contextd.follow.transcripts import agent_root
from contextd_client import ContextdClient

from tests import corpus
from tests.agents.fake_llm import FakeLLM
from tests.agents.real_agents import PI_OFFLINE, STEP_SECONDS, agent_command, offline_environment
from tests.follow.support import daemon_settings, mirror_id

RUNS = Path(__file__).parents[1] / "agents" / "runs"


def test_each_agent_root_is_where_the_agent_itself_writes() -> None:
    assert agent_root("claude-code", {}) == "~/.claude/projects"
    assert agent_root("claude-code", {"CLAUDE_CONFIG_DIR": "/cfg/claude"}) == "/cfg/claude/projects"
    assert agent_root("codex", {"CODEX_HOME": "/cfg/codex"}) == "/cfg/codex/sessions"
    assert agent_root("codex", {"CODEX_HOME": "  "}) == "~/.codex/sessions"  # blank: not set
    assert agent_root("pi", {"PI_CODING_AGENT_DIR": "/cfg/pi"}) == "/cfg/pi/sessions"
    both = {"PI_CODING_AGENT_DIR": "/cfg/pi", "PI_CODING_AGENT_SESSION_DIR": "~/pi-sessions"}
    assert agent_root("pi", both) == os.path.expanduser("~/pi-sessions") + os.sep


async def test_the_daemon_follows_transcripts_where_the_agents_variables_put_them(tmp_path: Path) -> None:
    """Real transcripts (the pinned Claude Code's and Codex's own runs, a pi corpus session)
    placed where each agent writes them with its variable set, and a HOME with no agent
    folder: every one is mirrored."""
    home, homes = tmp_path / "home", tmp_path / "agents"
    home.mkdir()
    placed = {
        "claude-code": (homes / "claude" / "projects" / "-tmp-imp-cc-work" / "bc07.jsonl",
                        gzip.decompress((RUNS / "claude-code-2.1.328-compact.jsonl.gz").read_bytes())),
        "codex": (homes / "codex" / "sessions" / "2026" / "11" / "25" / "rollout-2026-11-25T21-04-11-01a2.jsonl",
                  gzip.decompress((RUNS / "codex-0.169.0-compact.jsonl.gz").read_bytes())),
        "pi": (homes / "pi" / "sessions" / "--work-coffee--" / "2025-10-05_abc.jsonl",
               corpus.read_bytes("pi-coffee-model-switches.jsonl.gz")),
    }
    for path, data in placed.values():
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
    env = {
        **{name: value for name, value in os.environ.items() if name not in ("PI_CODING_AGENT_SESSION_DIR",)},
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(homes / "claude"),
        "CODEX_HOME": str(homes / "codex"),
        "PI_CODING_AGENT_DIR": str(homes / "pi"),
    }
    client = await ContextdClient.spawn(data_dir=tmp_path / "data", settings=daemon_settings(), env=env, shared=False)
    async with client:
        for agent, (path, _) in placed.items():
            session_id = await mirror_id(client, path)
            assert session_id.startswith(f"{agent}-")


def test_pis_settings_session_dir_comes_after_its_variable_and_before_its_home(tmp_path: Path) -> None:
    agent_dir = tmp_path / "pi-agent"
    agent_dir.mkdir()
    env = {"PI_CODING_AGENT_DIR": str(agent_dir)}
    settings = agent_dir / "settings.json"
    settings.write_text(json.dumps({"sessionDir": str(tmp_path / "kept")}))
    assert agent_root("pi", env) == str(tmp_path / "kept")
    assert agent_root("pi", {**env, "PI_CODING_AGENT_SESSION_DIR": "/env/wins"}) == "/env/wins" + os.sep
    settings.write_text(json.dumps({"sessionDir": "~/pi-kept"}))
    assert agent_root("pi", env) == os.path.expanduser("~/pi-kept")
    # Relative (a folder in each project), damaged or not a string: pi's own folder stays.
    for content in ('{"sessionDir": "rel/sessions"}', "{ damaged", "[]", '{"sessionDir": 3}'):
        settings.write_text(content)
        assert agent_root("pi", env) == str(agent_dir / "sessions")


async def test_the_daemon_follows_the_real_pi_where_its_settings_session_dir_puts_it(tmp_path: Path) -> None:
    """pi 0.73.1 itself (offline, against the scripted server) with `sessionDir` in its
    settings.json writes its session there, flat: the daemon mirrors it from there."""
    pi = agent_command("pi", "pi")
    home, workspace = tmp_path / "home", tmp_path / "work"
    kept = home / "pi-kept"
    workspace.mkdir()
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    (agent_dir / "settings.json").write_text(json.dumps({"sessionDir": "~/pi-kept"}))
    with FakeLLM() as fake:
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": fake.url, "api": "anthropic-messages", "apiKey": "dummy",
            "models": [{"id": "fake-claude", "name": "Fake Claude", "contextWindow": 200000, "maxTokens": 8192}],
        }}}))
        mine = {name: value for name, value in os.environ.items() if not name.startswith("PI_CODING_AGENT")}
        env = {**offline_environment(home, mine), **PI_OFFLINE}
        done = subprocess.run(
            [str(pi), "--provider", "fake", "--model", "fake-claude", "-p", "NOTOOL hello"],
            env=env, cwd=workspace, capture_output=True, text=True, timeout=STEP_SECONDS, check=False,
        )
    assert done.returncode == 0, done.stderr
    [session_file] = kept.glob("*.jsonl")  # flat: no folder per project
    assert not (agent_dir / "sessions").exists() or not list((agent_dir / "sessions").rglob("*.jsonl"))
    client = await ContextdClient.spawn(data_dir=tmp_path / "data", settings=daemon_settings(), env=env, shared=False)
    async with client:
        session_id = await mirror_id(client, session_file)
        assert "hello" in json.dumps((await client.context(session_id))["messages"])
