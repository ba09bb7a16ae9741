"""Issue 23 items 8 and 9: another local user gets nothing from the daemon. The other user
is real: a child of the test that drops to uid/gid 65534 (nobody) before it touches a
socket or a file, so these tests need root (CI runs them as root)."""

from __future__ import annotations

import asyncio
import encodings.idna  # noqa: F401 - loaded here: the other user may not read the stdlib
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from contextd.rpc.access import AccessRefused
from contextd_client import ContextdClient, ContextdError

from tests.protocol.wire import TRANSPORTS, frame, open_wire
from tests.shared_daemon import shared_environment

OTHER_UID = 65534

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="a second user needs root to become one")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A folder the other user can reach (pytest's own are the owner's only)."""
    folder = Path(tempfile.mkdtemp(prefix="ctd-users-"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def as_other_user(work: Callable[[], Any]) -> Any:
    """`work()` run by uid 65534 in a child process; what it returns (JSON), or its error."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become the other user, do the work, report, leave
        os.close(read_end)
        try:
            os.setgroups([])
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            outcome = {"value": work()}
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            outcome = {"error": f"{type(error).__name__}: {error}"}
        os.write(write_end, json.dumps(outcome).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        report = reader.read()
    os.waitpid(pid, 0)
    return json.loads(report)


def exchange(connect: Callable[[], socket.socket], frames: bytes) -> str:
    """Send `frames`, then read until the daemon closes the connection (or 20 s pass)."""
    received = b""
    with connect() as connection:
        connection.settimeout(20)
        try:
            connection.sendall(frames)
            while chunk := connection.recv(65536):
                received += chunk
        except (TimeoutError, ConnectionResetError, BrokenPipeError):
            pass  # the daemon hung up on us
    return received.decode(errors="replace")


def initialize(**params: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, **params}})


def list_sessions() -> bytes:
    return frame({"jsonrpc": "2.0", "id": 2, "method": "contextd/session/list", "params": {}})


@contextmanager
def tcp_daemon(data_dir: Path, runtime: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "serve", "--tcp", f"127.0.0.1:{port}"],
        env=env, stderr=subprocess.PIPE,
    )
    token_file = runtime / "contextd" / f"tcp-{port}.token"
    try:
        assert daemon.stderr is not None
        while "listening on" not in daemon.stderr.readline().decode():
            assert daemon.poll() is None, "the TCP daemon did not start"
        yield port, daemon
    finally:
        daemon.terminate()
        daemon.wait(30)
    assert not token_file.exists(), "the token goes with its daemon"


# --- 8: TCP needs the owner's token ---------------------------------------------------------


async def test_8_another_user_on_tcp_gets_nothing_but_a_refusal(tmp_path):
    runtime = Path(tempfile.mkdtemp(prefix="ctd-"))
    with tcp_daemon(tmp_path / "data", runtime) as (port, _daemon):
        token_file = runtime / "contextd" / f"tcp-{port}.token"
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        assert oct(token_file.parent.stat().st_mode & 0o777) == "0o700"

        def connect() -> socket.socket:
            return socket.create_connection(("127.0.0.1", port))

        def try_everything() -> dict[str, Any]:
            try:
                token_file.read_text()
                read = "read"
            except PermissionError:
                read = "denied"
            return {
                "token": read,
                "without": exchange(connect, initialize() + list_sessions()),
                "wrong": exchange(connect, initialize(authToken="guess") + list_sessions()),
                "skipping": exchange(connect, list_sessions() + frame({"jsonrpc": "2.0", "method": "exit"})),
            }

        outcome = await asyncio.to_thread(as_other_user, try_everything)
        assert "value" in outcome, outcome
        seen = outcome["value"]
        assert seen["token"] == "denied"
        for attempt in ("without", "wrong"):
            assert "-32020" in seen[attempt] and "authToken" in seen[attempt], seen[attempt]
            assert '"sessions"' not in seen[attempt]
        assert "-32002" in seen["skipping"] and '"sessions"' not in seen["skipping"]

        # The owner's client reads the token by itself and is served.
        env_runtime = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        try:
            async with await ContextdClient.connect("127.0.0.1", port) as client:
                opened = await client.session_open(name="mine")
                assert opened["sessionId"]
            with pytest.raises(ContextdError) as refused:
                await ContextdClient.connect("127.0.0.1", port, token="not it")
            assert refused.value.code == -32020
        finally:
            if env_runtime is None:
                os.environ.pop("XDG_RUNTIME_DIR")
            else:
                os.environ["XDG_RUNTIME_DIR"] = env_runtime


def test_8_tcp_listens_beyond_loopback_only_when_asked(tmp_path):
    refused = subprocess.run(
        [sys.executable, "-m", "contextd", "--data-dir", str(tmp_path), "serve", "--tcp", "0.0.0.0:7777"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert refused.returncode == 2 and "not a loopback address" in refused.stderr and "--allow-remote" in refused.stderr


# --- 9: the socket's folder, its peers, the log ----------------------------------------------


def long_runtime(base: Path) -> Path:
    """An XDG_RUNTIME_DIR too long for a socket path: the fallback folder in TMPDIR is used."""
    runtime = base / ("r" * 120)
    runtime.mkdir(parents=True)
    return runtime


def serve_shared(data_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """`contextd serve --shared` as an editor starts it, sending initialize and exit."""
    return subprocess.run(
        [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "serve", "--shared", "--grace", "1"],
        input=initialize() + frame({"jsonrpc": "2.0", "method": "exit"}),
        env=env, capture_output=True, timeout=120, check=False,
    )


def test_9_a_fallback_folder_another_user_made_is_refused(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o1777)
    tmp.chmod(0o1777)
    squatted = tmp / f"contextd-{os.getuid()}"

    def squat() -> str:
        squatted.mkdir(mode=0o777)
        squatted.chmod(0o777)
        return "made"

    assert as_other_user(squat) == {"value": "made"}
    env = {**os.environ, "TMPDIR": str(tmp), "XDG_RUNTIME_DIR": str(long_runtime(tmp_path))}
    done = serve_shared(tmp_path / "data", env)
    assert done.returncode == 1
    message = done.stderr.decode()
    assert f"{squatted} belongs to uid {OTHER_UID}, not to you" in message
    assert list(squatted.iterdir()) == [], "nothing was created, sent or logged there"


def test_9_a_fallback_folder_open_to_others_or_a_symlink_is_refused(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "XDG_RUNTIME_DIR": str(long_runtime(tmp_path))}
    folder = tmp / f"contextd-{os.getuid()}"
    folder.mkdir()
    folder.chmod(0o755)
    done = serve_shared(tmp_path / "data", env)
    assert done.returncode == 1 and "is open to other users (mode 755)" in done.stderr.decode()
    folder.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    folder.symlink_to(tmp_path / "elsewhere")
    done = serve_shared(tmp_path / "data", env)
    assert done.returncode == 1 and "symlink" in done.stderr.decode()
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_9_a_planted_log_symlink_is_not_followed(tmp_path):
    with shared_environment() as env:
        from contextd.rpc.shared import socket_path

        os.environ["XDG_RUNTIME_DIR"], saved = env["XDG_RUNTIME_DIR"], os.environ.get("XDG_RUNTIME_DIR")
        try:
            path = socket_path(tmp_path / "data")
        finally:
            os.environ.pop("XDG_RUNTIME_DIR")
            if saved is not None:
                os.environ["XDG_RUNTIME_DIR"] = saved
        path.parent.mkdir(mode=0o700)
        victim = tmp_path / "victim.txt"
        victim.write_text("the owner's file\n")
        path.with_suffix(".log").symlink_to(victim)
        done = serve_shared(tmp_path / "data", env)
        assert done.returncode == 1 and f"{path.with_suffix('.log')} is a symlink" in done.stderr.decode()
        assert victim.read_text() == "the owner's file\n"


@contextmanager
def other_users_daemon(folder: Path) -> Iterator[Path]:
    """A socket of uid 65534's that answers anything (as a squatter's daemon would), open to all."""
    path = folder / "squat.sock"
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.setgroups([])
        os.setgid(OTHER_UID)
        os.setuid(OTHER_UID)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        os.chmod(path, 0o777)
        server.listen()
        os.write(write_end, b"ready")
        server.settimeout(60)
        try:
            while True:
                connection, _ = server.accept()
                connection.sendall(frame({"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {}}}))
        finally:
            os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 5) == b"ready"
    os.close(read_end)
    try:
        yield path
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


async def test_9_a_client_refuses_a_daemon_of_another_user(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    with other_users_daemon(folder) as path:
        with pytest.raises(AccessRefused) as refused:
            await ContextdClient.connect_unix(path)
        assert f"runs as uid {OTHER_UID}, not as you" in str(refused.value)


async def test_9_the_daemon_refuses_a_peer_of_another_user(tmp_path):
    runtime = Path(tempfile.mkdtemp(prefix="ctd-"))
    runtime.chmod(0o755)
    path = runtime / "d.sock"
    daemon = subprocess.Popen(
        [sys.executable, "-m", "contextd", "--data-dir", str(tmp_path / "data"), "serve", "--socket", str(path)],
        stderr=subprocess.PIPE,
    )
    try:
        assert daemon.stderr is not None
        while "listening on" not in daemon.stderr.readline().decode():
            assert daemon.poll() is None
        assert oct(path.stat().st_mode & 0o777) == "0o600", "created 0600, not chmod-ed after"
        path.chmod(0o666)  # as if another user had slipped in before it was tightened

        def connect() -> socket.socket:
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(str(path))
            return connection

        seen = await asyncio.to_thread(as_other_user, lambda: exchange(connect, initialize() + list_sessions()))
        assert seen == {"value": ""}, "closed before anything was read or answered"
        async with await ContextdClient.connect_unix(path) as owner:
            assert "sessions" in await owner.session_list()
        daemon.terminate()
        assert "connection refused: a client runs as uid 65534" in daemon.communicate(timeout=30)[1].decode()
    finally:
        if daemon.poll() is None:
            daemon.kill()


# --- 8: follow.roots beyond the user's agent folders come from the owner's settings only -----


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_8_a_client_cannot_point_following_at_another_folder(transport, tmp_path):
    owners = tmp_path / "owners-transcripts"
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"follow": {"roots": {"codex": str(owners)}}}))
    async with open_wire(transport, tmp_path / "data", "--settings", str(settings)) as wire:
        secret = tmp_path / "only-the-owner-reads-this"
        for roots in ({"claude-code": str(secret)}, {"pi": "~/.pi/agent/sessions/../../../.ssh"}, {"pi": "a\u0000b"}):
            refused = await wire.call("contextd/follow", {"enabled": True, "roots": roots})
            assert refused["error"]["code"] == -32602, refused
            field = refused["error"]["data"]["errors"][0]["field"]
            assert field == f"roots.{next(iter(roots))}"
        described = await wire.result("contextd/follow", {})
        assert described["enabled"] is False and described["roots"] == {"codex": str(owners)}
        for roots in ({"claude-code": "~/.claude/projects"}, {"pi": "~/.pi/agent/sessions/some-project"}, {"codex": str(owners)}):
            accepted = await wire.call("contextd/follow", {"roots": roots})
            assert "result" in accepted, accepted
