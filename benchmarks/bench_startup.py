"""What a new `contextd` process pays before it is useful.

    python benchmarks/bench_startup.py [--runs 7]

- imports: `python -X importtime -c "import M"` in a fresh process for the command every
  `contextd ...` runs (`contextd_client.command`) and for the daemon's stack
  (`contextd.server`): the import time the interpreter reports, and which heavy packages
  (pydantic, the providers' SDKs, mcp, the follow machinery, ...) each pulls in.
- a new daemon: `python -m contextd serve` over stdio in an empty data directory, timed from
  its start to its reply to `initialize`, then to its reply to the first request that counts
  tokens (`session/open`, then a one-message `session/append`); then a second daemon in the
  same data directory, which finds the encoding's ranks the first one kept
  (tokens/encodings/cache.py).
- a client command against a running shared daemon: `contextd sessions --json` and
  `contextd hook claude-code` with a SessionStart (startup) event, in a temporary HOME and
  runtime dir whose shared daemon is already up: the whole command, as an agent's hook or a
  user pays for it (its CPU time includes any process it waits for).

Each figure is the median of `--runs` runs, in wall time and in the CPU time the process had
used (on a shared machine wall time includes the time the scheduler gave others). The encoding
(o200k_base, about 0.3 s to build) is built once per process; what a request that counts
nothing has to wait for is the question.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any
from report import load_average

HEAVY = (
    "pydantic", "tiktoken", "anthropic", "openai", "httpx", "mcp", "rich", "sqlite3",
    "contextd.model", "contextd.follow", "contextd.summarizers.anthropic", "contextd.history",
)
"""Packages worth knowing whether a start-up imports."""


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU time process `pid` has used so far (Linux: /proc/PID/stat, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def import_profile(module: str) -> tuple[float, float, list[str]]:
    """Importing `module` in a fresh process: the milliseconds `-X importtime` reports, the
    CPU milliseconds it took, and the heavy packages it brings in."""
    probe = (
        f"import sys, time; began = time.process_time(); import {module}; "
        f"print((time.process_time() - began) * 1000, *(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", probe], capture_output=True, text=True, check=True
    )
    last = [line for line in done.stderr.splitlines() if line.startswith("import time:")][-1]
    cpu_ms, *heavy = done.stdout.split()
    return int(last.split("|")[1]) / 1000, float(cpu_ms), heavy


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream: IO[bytes]) -> dict[str, Any]:
    length = 0
    while (line := stream.readline().strip()):
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(stream.read(length))


def reply_to(process: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
    """The reply to request `request_id`, skipping the notifications before it."""
    assert process.stdout is not None
    while True:
        message = read_frame(process.stdout)
        if message.get("id") == request_id:
            return message


def first_replies(data_dir: Path) -> tuple[float, float, float, float]:
    """Seconds from the daemon's start to its `initialize` reply, and to the reply to its
    first counting request; and the CPU seconds it had used at each."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "contextd", "--data-dir", str(data_dir), "--log-level", "WARNING", "serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    assert process.stdin is not None
    send = process.stdin
    try:
        send.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": os.getpid()}}))
        send.flush()
        reply_to(process, 1)
        initialized = time.perf_counter() - started
        initialized_cpu = cpu_seconds(process.pid)
        send.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        send.write(frame({"jsonrpc": "2.0", "id": 2, "method": "contextd/session/open", "params": {"workspace": str(data_dir)}}))
        send.flush()
        session_id = reply_to(process, 2)["result"]["sessionId"]
        message = {"role": "user", "content": "Fix the failing test in src/app.py"}
        send.write(frame({"jsonrpc": "2.0", "id": 3, "method": "contextd/session/append",
                          "params": {"sessionId": session_id, "messages": [message]}}))
        send.flush()
        reply_to(process, 3)
        counted = time.perf_counter() - started
        counted_cpu = cpu_seconds(process.pid)
        send.write(frame({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}))
        send.flush()
        reply_to(process, 4)
        send.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        send.flush()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return initialized, counted, initialized_cpu, counted_cpu


def client_commands(runs: int) -> dict[str, list[tuple[float, float]]]:
    """Wall and CPU seconds (the command's and its children's) of each client command, run
    `runs` times against one shared daemon started before the first."""
    with tempfile.TemporaryDirectory(prefix="ctd-") as root:
        home = Path(root)
        (home / "run").mkdir(mode=0o700)
        env = {**os.environ, "HOME": root, "XDG_RUNTIME_DIR": str(home / "run"),
               "XDG_DATA_HOME": str(home / "data"), "CONTEXTD_SHARED": "1"}
        (home / "t.jsonl").write_text("")
        event = {"hook_event_name": "SessionStart", "source": "startup", "session_id": "bench",
                 "transcript_path": str(home / "t.jsonl"), "cwd": root}
        commands = {"sessions --json": (["sessions", "--json"], ""),
                    "hook claude-code": (["hook", "claude-code"], json.dumps(event))}

        def run(arguments: list[str], stdin: str) -> tuple[float, float]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "contextd", *arguments], input=stdin, text=True,
                           env=env, cwd=root, capture_output=True, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            return time.perf_counter() - started, cpu

        run(["sessions"], "")  # starts the shared daemon
        try:
            return {name: [run(*command) for _ in range(runs)] for name, command in commands.items()}
        finally:
            status = subprocess.run([sys.executable, "-m", "contextd", "status", "--json"],
                                    env=env, capture_output=True, text=True, check=True)
            os.kill(json.loads(status.stdout)["pid"], 15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    load = load_average()
    print(f"start-up, median of {runs} runs; Python {sys.version.split()[0]}; load average {load}\n")
    for module in ("contextd_client.command", "contextd.server"):
        profiles = [import_profile(module) for _ in range(runs)]
        wall = statistics.median(p[0] for p in profiles)
        cpu = statistics.median(p[1] for p in profiles)
        print(f"import {module:<24} {wall:6.0f} ms ({cpu:4.0f} ms cpu)   brings in: {' '.join(profiles[0][2]) or '-'}")
    first: list[tuple[float, float, float, float]] = []
    second: list[tuple[float, float, float, float]] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="contextd-startup-") as root:
            first.append(first_replies(Path(root)))
            second.append(first_replies(Path(root)))
    for daemon, results in (("new daemon", first), ("next daemon", second)):
        for label, wall_at, cpu_at in (("initialize reply", 0, 2), ("first append reply", 1, 3)):
            wall = statistics.median(r[wall_at] for r in results) * 1000
            cpu = statistics.median(r[cpu_at] for r in results) * 1000
            print(f"{daemon + ':':<12} {label:<20} {wall:6.0f} ms ({cpu:4.0f} ms cpu)")
    for name, results in client_commands(runs).items():
        wall = statistics.median(r[0] for r in results) * 1000
        cpu = statistics.median(r[1] for r in results) * 1000
        print(f"against a running shared daemon: contextd {name:<18} {wall:6.0f} ms ({cpu:4.0f} ms cpu)")


if __name__ == "__main__":
    main()
