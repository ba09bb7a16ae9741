"""Running the real Codex CLI offline against the scripted server: its configuration and
one `codex exec` (see tests/agents/real_agents.py for its environment)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.agents.fake_llm import FakeLLM

RUN_SECONDS = 180


def codex_config(fake: FakeLLM) -> str:
    """The user's config: the scripted provider, a low automatic-compaction limit, nothing
    that calls home (plugins sync from github.com and chatgpt.com), hooks on."""
    return f'''model = "fake-gpt"
model_provider = "fake"
check_for_update_on_startup = false
model_auto_compact_token_limit = 1000

[model_providers.fake]
name = "fake"
base_url = "{fake.url}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
hooks = true
'''


def run_codex(codex: Path, env: dict[str, str], cwd: Path, prompt: str, thread: str | None) -> list[dict[str, Any]]:
    resume = ["resume", thread] if thread else []
    done = subprocess.run(
        [str(codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
         "--dangerously-bypass-hook-trust", "--json", *resume, prompt],
        env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_SECONDS, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
