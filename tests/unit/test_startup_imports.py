"""What a new process imports before it does anything (issue 28, bench_startup.py): every
`contextd ...` command and every new daemon pays for these imports, so what they do not use
must not be among them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile


def imported_by(statement: str, *modules: str) -> dict[str, bool]:
    """Which of `modules` a fresh interpreter has loaded after running `statement` (with no
    user settings file)."""
    probe = f"import json, sys; {statement}; print(json.dumps({{m: m in sys.modules for m in {modules!r}}}))"
    with tempfile.TemporaryDirectory() as config_home:
        env = {**os.environ, "XDG_CONFIG_HOME": config_home}
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60, env=env)
    return json.loads(done.stdout)


def test_the_contextd_command_imports_neither_pydantic_nor_the_daemons_models():
    found = imported_by("import contextd_client.command", "pydantic", "tiktoken", "contextd.model", "contextd.results")
    assert found == dict.fromkeys(found, False)


def test_a_daemon_that_follows_nothing_loads_no_follow_machinery_and_builds_no_protocol_model():
    statement = (
        "import tempfile; from contextd.server import create_daemon; "
        "create_daemon(data_dir=tempfile.mkdtemp()); "
        "from contextd.results import TokenUsage, AppendResult; "
        "assert not TokenUsage.__pydantic_complete__ and not AppendResult.__pydantic_complete__"
    )
    found = imported_by(statement, "contextd.follow", "contextd.follow.follower", "contextd.importers")
    assert found == dict.fromkeys(found, False)


def test_the_demo_reads_its_shipped_session_without_pydantic():
    found = imported_by("from contextd_client.demo import demo_messages; demo_messages()", "pydantic", "contextd.model")
    assert found == dict.fromkeys(found, False)
