"""The VS Code extension in a real VS Code: code-server in Debian's Chromium, driven through
the workbench's DOM by editors/vscode/e2e/workbench.mjs (playwright-core).

What code-server, node 24 and Chromium need is installed by editors/vscode/e2e/install.sh
(.ci/run runs it). Without them the test is skipped, except in CI (CI=true), where it fails.
Screenshots and logs of the last run are copied to tests/editors/artifacts/vscode-workbench/
(ignored by git), which a failure message names.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import corpus

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
E2E = EXTENSION / "e2e"
INSTALL_HOME = Path(
    os.environ.get("CONTEXTD_VSCODE_E2E_HOME")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "contextd"
    / "vscode-e2e"
)
NODE = INSTALL_HOME / "node24" / "bin" / "node"
CODE_SERVER = INSTALL_HOME / "code-server" / "bin" / "code-server"
ARTIFACTS = REPO / "tests" / "editors" / "artifacts" / "vscode-workbench"
SEED_MESSAGES = 60  # of the shipped demo session: enough entries to fill the tree view
SESSION_NAME = "seeded demo"
CLAUDE_TRANSCRIPT = "claude-code-atlas-short.jsonl.gz"  # of the corpus; its cwd becomes the workspace

# User settings that keep VS Code's own first-run UI out of the way.
USER_SETTINGS = {
    "contextd.compaction.keepRecentTokens": 3000,
    # The shared daemon the window starts follows Claude Code (its folder is a Machine setting).
    "contextd.follow.enabled": True,
    "contextd.follow.agents": ["claude-code"],
    "contextd.follow.intervalSeconds": 0.2,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "telemetry.telemetryLevel": "off",
    "security.workspace.trust.enabled": False,
    "extensions.autoUpdate": False,
    "extensions.autoCheckUpdates": False,
    "update.mode": "none",
    "chat.disableAIFeatures": True,
}


def missing_tools() -> list[str]:
    missing = [str(path) for path in (NODE, CODE_SERVER) if not path.exists()]
    if shutil.which("chromium") is None:
        missing.append("chromium")
    if not (EXTENSION / "node_modules" / "playwright-core").is_dir():
        missing.append("editors/vscode/node_modules (npm ci)")
    return missing


@pytest.fixture
def tools() -> None:
    missing = missing_tools()
    if not missing:
        return
    message = f"the real-VS-Code test needs {', '.join(missing)}: run editors/vscode/e2e/install.sh"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def artifacts(tmp_path: Path) -> Iterator[Path]:
    """The run's screenshots and logs, kept where a person finds them after the run."""
    yield ARTIFACTS
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    for name in ("shots", "user-data/logs"):
        if (tmp_path / name).is_dir():
            shutil.copytree(tmp_path / name, ARTIFACTS / name)
    for log in tmp_path.glob("*.log"):
        shutil.copy(log, ARTIFACTS)


def run(command: list[str], cwd: Path = REPO, **kwargs) -> str:
    result = subprocess.run(
        command,
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,
    )
    assert result.returncode == 0, (
        f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result.stdout


def contextd(data_dir: Path, *args: str) -> dict:
    return json.loads(
        run(
            [
                sys.executable,
                "-m",
                "contextd",
                "--data-dir",
                str(data_dir),
                *args,
                "--json",
            ]
        )
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(
                f"code-server exited with {server.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"code-server did not answer in 90 s:\n{log.read_text()[-3000:]}")


class UsersSummarizer:
    """The user's own summarizing service (`summarizer.provider` "remote"), which the sessions
    of the remote workspace use. The driver says how it answers, in the file `mode`: `refuse`
    (400 at once: a compaction that fails), `hold` (no answer until the mode changes: a
    compaction that runs until someone stops it), else a summary."""

    def __init__(self, mode: Path) -> None:
        self.mode = mode
        mode.write_text("refuse")
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("content-length", 0)))
                status, body = service.answer()
                payload = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the daemon stopped waiting (a cancelled compaction)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/summarize"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self) -> tuple[int, dict]:
        deadline = time.monotonic() + 300
        while self.mode.read_text().strip() == "hold" and time.monotonic() < deadline:
            time.sleep(0.2)
        if self.mode.read_text().strip() == "refuse":
            return 400, {"error": "the summarizing service refuses this conversation"}
        return 200, {"summary": "## Goal\nFinish the checks.\n\n## Progress\nThe checks ran."}

    def close(self) -> None:
        self.mode.write_text("answer")  # a request still held ends
        self.server.shutdown()
        self.server.server_close()


class Workbench:
    """The run directory of one test: profile, workspace, data, logs and screenshots."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.user_data = root / "user-data"
        self.extensions = root / "extensions"
        self.workspace = root / "workspace"
        self.empty_workspace = root / "empty-workspace"
        self.data = root / "contextd-data"
        self.shots = root / "shots"
        self.xdg = root / "xdg"
        self.claude_projects = root / "claude-projects"
        for path in (
            self.user_data / "User",
            self.user_data / "Machine",
            self.extensions,
            self.workspace,
            self.shots,
        ):
            path.mkdir(parents=True)
        (self.workspace / "README.md").write_text("# scratch workspace\n")
        # A workspace with no session, where following is off: what a new user meets first.
        (self.empty_workspace / ".vscode").mkdir(parents=True)
        (self.empty_workspace / ".vscode" / "settings.json").write_text(
            json.dumps({"contextd.follow.enabled": False})
        )
        # A workspace whose sessions the user's own service summarizes (UsersSummarizer).
        self.remote_workspace = root / "remote-workspace"
        (self.remote_workspace / ".vscode").mkdir(parents=True)
        (self.remote_workspace / ".vscode" / "settings.json").write_text(
            json.dumps({"contextd.summarizer.provider": "remote", "contextd.summarizer.maxRetries": 0})
        )
        # Claude Code's settings, where the daemon finds them (CLAUDE_CONFIG_DIR): its
        # auto-compaction at 60% of its effective window, which a mirror's tooltip shows.
        self.claude_config = root / "claude-config"
        self.claude_config.mkdir()
        (self.claude_config / "settings.json").write_text(
            json.dumps({"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "60"}})
        )

    def env(self) -> dict[str, str]:
        # code-server writes its config, logs and a device id under the XDG dirs: keep them
        # here. XDG_RUNTIME_DIR places the shared daemon's socket: the window, the test's
        # script agent and the checks below all reach the same daemon through it.
        return {
            **os.environ,
            "PATH": f"{NODE.parent}:{os.environ['PATH']}",
            "XDG_CONFIG_HOME": str(self.xdg / "config"),
            "XDG_DATA_HOME": str(self.xdg / "data"),
            "XDG_CACHE_HOME": str(self.xdg / "cache"),
            "XDG_RUNTIME_DIR": str(self.xdg / "run"),
            "CONTEXTD_E2E_LOG": str(self.root / "e2e.log"),
            "CLAUDE_CONFIG_DIR": str(self.claude_config),
        }

    def shared_daemon(self) -> dict | None:
        """`contextd status` of the shared daemon the window attached to, if it runs."""
        result = subprocess.run(
            [sys.executable, "-m", "contextd", "--data-dir", str(self.data), "status", "--json"],
            check=False, capture_output=True, text=True, timeout=60, env=self.env(),
        )
        return json.loads(result.stdout) if result.returncode == 0 else None

    def stop_shared_daemon(self) -> None:
        """The shared daemon outlives code-server (it serves any client for a grace period):
        keep its log with the artifacts and stop it."""
        status = self.shared_daemon()
        if status is None:
            return
        log = Path(status["address"]).with_suffix(".log")
        if log.is_file():
            shutil.copy(log, self.root / "shared-daemon.log")
        os.kill(status["pid"], signal.SIGTERM)
        deadline = time.monotonic() + 20
        while self.shared_daemon() is not None and time.monotonic() < deadline:
            time.sleep(0.2)

    def interpreter_wrapper(self) -> Path:
        """contextd.pythonPath: this interpreter, through a wrapper that records the daemon's
        pid (exec keeps it) and fails like a missing install while the test asks it to."""
        wrapper = self.root / "python"
        wrapper.write_text(
            "#!/bin/sh\n"
            f'echo "$$ $*" >> "{self.root}/python-used.log"\n'
            f'if [ -e "{self.root}/fail-start" ]; then\n'
            '  echo "No module named contextd (the test broke this interpreter)" >&2; exit 1\n'
            "fi\n"
            f'exec "{sys.executable}" "$@"\n'
        )
        wrapper.chmod(0o755)
        return wrapper

    def configure(self, summarizer_url: str) -> None:
        # contextd.pythonPath and contextd.storage.dataDir are machine-overridable: in a remote
        # window (code-server is one) VS Code ignores them in User settings, so the Machine
        # settings hold them; the User settings' interpreter does not exist, and is not used.
        machine = {
            "contextd.pythonPath": str(self.interpreter_wrapper()),
            "contextd.storage.dataDir": str(self.data),
            "contextd.follow.roots": {"claude-code": str(self.claude_projects)},
        }
        (self.user_data / "Machine" / "settings.json").write_text(
            json.dumps(machine, indent=2)
        )
        # A followed root beyond ~/.claude/projects is the daemon owner's to name, not an
        # editor's (protocol.md, Who may connect): the user settings file names it too.
        owner = self.xdg / "config" / "contextd" / "settings.json"
        owner.parent.mkdir(parents=True, exist_ok=True)
        # Where a summarizer sends the conversation is the owner's to say too.
        owner.write_text(json.dumps({
            "follow": {"roots": {"claude-code": str(self.claude_projects)}},
            "summarizer": {"remoteEndpoint": summarizer_url},
        }))
        user = {**USER_SETTINGS, "contextd.pythonPath": "/nonexistent/python"}
        (self.user_data / "User" / "settings.json").write_text(
            json.dumps(user, indent=2)
        )

    def install(self, vsix: Path) -> None:
        run(
            [
                str(CODE_SERVER),
                "--user-data-dir",
                str(self.user_data),
                "--extensions-dir",
                str(self.extensions),
                "--install-extension",
                str(vsix),
            ],
            env=self.env(),
        )

    def log_files(self, pattern: str) -> list[Path]:
        return sorted((self.user_data / "logs").glob(pattern))


def log_records(log: str) -> list[str]:
    """A VS Code log's records: a time-stamped line and its continuation (a stack trace)."""
    return re.split(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", log)


def build_extensions(root: Path) -> tuple[Path, Path, Path]:
    bin_dir = EXTENSION / "node_modules" / ".bin"
    vsix = root / "contextd.vsix"
    run(
        [str(bin_dir / "vsce"), "package", "--no-dependencies", "-o", str(vsix)],
        cwd=EXTENSION,
    )
    helper = root / "contextd-e2e-helper.vsix"
    run(
        [
            str(bin_dir / "vsce"),
            "package",
            "--allow-missing-repository",
            "--skip-license",
            "-o",
            str(helper),
        ],
        cwd=E2E / "helper",
    )
    # The driver computes what the extension shows with the extension's own pure code.
    format_module = root / "shown.mjs"
    run(
        [
            str(bin_dir / "esbuild"),
            "e2e/shown.ts",
            "--bundle",
            "--format=esm",
            "--platform=node",
            f"--outfile={format_module}",
        ],
        cwd=EXTENSION,
    )
    return vsix, helper, format_module


@pytest.mark.timeout(900)
def test_the_extension_in_a_real_vscode(
    tools: None, artifacts: Path, tmp_path: Path
) -> None:
    bench = Workbench(tmp_path)
    vsix, helper, format_module = build_extensions(tmp_path)
    summarizer = UsersSummarizer(tmp_path / "summarizer-mode")
    bench.configure(summarizer.url)
    bench.install(vsix)
    bench.install(helper)

    # Seeded by a daemon of the test's own (CONTEXTD_SHARED=0, tests/conftest.py): the shared
    # daemon is started by the window, so it runs with the settings the extension gives it.
    seed = tmp_path / "seed.jsonl"
    demo = (
        (REPO / "server" / "contextd" / "demo" / "session.jsonl")
        .read_text()
        .splitlines()
    )
    seed.write_text("\n".join(demo[:SEED_MESSAGES]) + "\n")
    seeded = contextd(
        bench.data,
        "replay",
        str(seed),
        "--name",
        SESSION_NAME,
        "--workspace",
        str(bench.workspace),
    )
    session_id = seeded["sessionId"]
    tree = contextd(bench.data, "tree", session_id)
    expect = {
        "sessionId": session_id,
        "sessionName": SESSION_NAME,
        "usage": seeded["state"]["usage"],
        "treeNodes": [{"type": node["type"], "preview": node["preview"]} for node in tree["nodes"]],
    }
    (tmp_path / "expect.json").write_text(json.dumps(expect))
    # A real Claude Code transcript, as if Claude Code ran in this workspace; the driver
    # puts it where Claude Code keeps its sessions once the window is up.
    transcript = corpus.read_bytes(CLAUDE_TRANSCRIPT)
    (tmp_path / "claude-transcript.jsonl").write_bytes(
        transcript.replace(b'"cwd":"/Users/Sam"', b'"cwd":' + json.dumps(str(bench.workspace)).encode())
    )

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server_log = tmp_path / "code-server.log"
    with server_log.open("w") as log:
        server = subprocess.Popen(
            [
                str(CODE_SERVER),
                "--bind-addr",
                f"127.0.0.1:{port}",
                "--auth",
                "none",
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                "--disable-getting-started-override",
                "--user-data-dir",
                str(bench.user_data),
                "--extensions-dir",
                str(bench.extensions),
                str(bench.workspace),
            ],
            env=bench.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_healthy(url, server, server_log)
        driver = subprocess.run(
            [str(NODE), str(E2E / "workbench.mjs")],
            cwd=EXTENSION,
            env={
                **bench.env(),
                "CS_URL": url,
                "WS": str(bench.workspace),
                "WS_EMPTY": str(bench.empty_workspace),
                "WS_REMOTE": str(bench.remote_workspace),
                "SUMMARIZER_MODE": str(summarizer.mode),
                "SHOTS": str(bench.shots),
                "RUN": str(tmp_path),
                "EXPECT": str(tmp_path / "expect.json"),
                "FORMAT": str(format_module),
                "CHROMIUM": shutil.which("chromium") or "chromium",
                "PYTHON": sys.executable,
                "DATA": str(bench.data),
                "CLAUDE_TRANSCRIPT": str(tmp_path / "claude-transcript.jsonl"),
                "CLAUDE_PROJECT": str(bench.claude_projects / "-workspace"),
            },
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        # The extension host and the daemons it started are in code-server's process group.
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        bench.stop_shared_daemon()
        summarizer.close()
    report = (
        f"{driver.stdout}\n{driver.stderr[-3000:]}\nscreenshots and logs: {artifacts}"
    )
    print(report)
    assert driver.returncode == 0, report

    # The daemon ran with contextd.pythonPath from the Machine settings, attached to the
    # shared daemon of the data dir, handing it the window's settings to start with.
    used = (tmp_path / "python-used.log").read_text()
    assert used.strip(), f"the daemon never ran with contextd.pythonPath\n{report}"
    assert f"--data-dir {bench.data} serve --shared --settings " in used, used

    # Move Here is stored: the session's leaf is the entry chosen in the tree view (whose row
    # shows the start of its preview).
    after = contextd(bench.data, "tree", session_id)
    leaf = next(node for node in after["nodes"] if node["id"] == after["leafId"])
    row = (tmp_path / "moved-to.txt").read_text().rstrip("…")
    assert row and (leaf["preview"] or leaf["type"]).startswith(row), (leaf, row)

    # One click in the empty workspace's idle item turned following on for that workspace.
    empty_settings = json.loads((bench.empty_workspace / ".vscode" / "settings.json").read_text())
    assert empty_settings["contextd.follow.enabled"] is True, empty_settings

    # The tooltip's summary line is the compaction's stored one-line summary.
    compaction = next(node for node in after["nodes"] if node["type"] == "compaction")
    tooltip = (tmp_path / "tooltip.txt").read_text()
    assert f"Summary: {compaction['shortSummary']}" in tooltip, tooltip

    # The remote workspace's session: the compaction that failed and the one the first window
    # cancelled wrote nothing; the one Compact Now ran after them is its only compaction.
    remote_session = (tmp_path / "remote-session.txt").read_text()
    remote_tree = contextd(bench.data, "tree", remote_session)
    assert [node["type"] for node in remote_tree["nodes"]].count("compaction") == 1, remote_tree["nodes"]

    # The logs: no unhandled error in the extension host; the output channel's levels are right.
    host_log = "\n".join(
        path.read_text() for path in bench.log_files("*/exthost*/remoteexthost.log")
    )
    # Ours: from the extension's own files or with its words, not another extension's error
    # whose stack merely passes through this cache's path (.cache/contextd/vscode-e2e).
    unhandled = [
        record
        for record in log_records(host_log)
        if "[error]" in record and re.search(r"contextd\.contextd|contextd:", record)
    ]
    assert not unhandled, "\n\n".join(unhandled)
    channel = "\n".join(
        path.read_text()
        for path in bench.log_files("*/exthost*/contextd.contextd/contextd.log")
    )
    assert "the daemon did not start" in channel, channel[-3000:]
    misfiled = [
        line
        for line in channel.splitlines()
        if "[info] [Error" in line or line.rstrip().endswith("] false")
    ]
    assert not misfiled, "\n".join(misfiled)
