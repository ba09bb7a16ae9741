"""Append latency over real stdio against the real daemon, by session size.

    python benchmarks/bench_append.py [--appends N] [--sizes 100,1000,10000] [--clients 20]

One `contextd serve` per session size, each session filled to exactly that many entries
with large batched appends of generated coding turns, then N single-message appends sent
one request at a time (the next only after the reply), each timed from send to reply by
the client. The messages are the same for every size: user text, assistant text with a
tool call, the tool's result (a source file, a test run, a search), in the order an agent
produces them. The sizes are measured in alternating rounds so that load from other
processes on the shared machine weighs on all of them alike.

The model is given a window far beyond the sessions' size, so the threshold check runs on
every append but no compaction starts: this measures appending, not compacting.

With `--clients N` (N > 1) each size gets a daemon serving a Unix socket, as the shared
one does, with N connections in one workspace, each appending to its own session of that
size at the same time as the others (and hearing their workspace activity); every append
of every client is timed.

The `daemon CPU` column is the CPU time the daemon process used (all its threads: the
history index's writer too) per append during the timed rounds: what an append costs the
daemon, without the scheduler's noise the latencies carry on a shared machine.

The `in-process` column times `LiveSession.append_messages` alone on the same messages
(already validated, no JSON-RPC, no notifications sent), to tell the session's own cost
from the transport's.
Target: the 10,000-entry p50 within 1.5x of the 100-entry p50.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from coding_session import filler_turns, message_tokens
from live_daemon import fill, model_settings, running_daemon, shared_daemon
from contextd.model import Message, Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from contextd_client import ContextdClient
from report import load_average, table_header
from bench_startup import cpu_seconds

SIZES = (100, 1_000, 10_000)
TARGET_RATIO = 1.5
HUGE_WINDOW = 1_000_000_000
WARMUP_APPENDS = 30
ROUND = 50
PAD = "ok, continue"


def prefill_messages(entries: int, seed: int) -> list[dict[str, Any]]:
    """`entries` messages of whole turns, topped up with short user replies to be exact."""
    messages: list[dict[str, Any]] = []
    for turn in filler_turns(seed):
        if len(messages) + len(turn) > entries:
            break
        messages += turn
    return messages + [{"role": "user", "content": PAD}] * (entries - len(messages))


def measured_messages(count: int, seed: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    turns: Iterator[list[dict[str, Any]]] = filler_turns(seed)
    while len(messages) < count:
        messages += next(turns)
    return messages


async def open_filled(client: ContextdClient, entries: int) -> str:
    opened = await client.session_open(name=f"bench-{entries}")
    session_id = opened["sessionId"]
    # A new session already holds entries: the model_change and the name.
    initial = (await client.state(session_id))["entries"]
    await fill(client, session_id, prefill_messages(entries - initial, seed=entries))
    state = await client.state(session_id)
    assert state["entries"] == entries, state["entries"]
    return session_id


async def timed_append(client: ContextdClient, session_id: str, message: dict[str, Any]) -> float:
    start = time.perf_counter()
    await client.append(session_id, [message])
    return (time.perf_counter() - start) * 1000


def in_process_p50(entries: int, measured: list[dict[str, Any]]) -> float:
    """p50 ms of `append_messages` on a session of `entries` entries, without the daemon."""
    as_messages = TypeAdapter(list[Message]).validate_python
    settings = Settings.model_validate(model_settings(HUGE_WINDOW))
    with tempfile.TemporaryDirectory(prefix="contextd-bench-") as root:
        sessions = SessionManager(Store(Path(root)), settings, SilentEvents())
        session = sessions.create(root)
        prefill = as_messages(prefill_messages(entries - session.node_count, seed=entries))
        for start in range(0, len(prefill), 1000):
            session.append_messages(prefill[start : start + 1000])
        times = []
        for message in as_messages(measured):
            started = time.perf_counter()
            session.append_messages([message])
            times.append((time.perf_counter() - started) * 1000)
        sessions.close_all()
    return percentile(times, 0.5)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def held_in_memory(settings: dict[str, Any], entries: int) -> dict[str, Any]:
    """`settings` with every session a daemon appends to held in memory: beyond
    `storage.maxLoadedEntries` (default 100,000; 20 clients of 10,000 entries use 200,000),
    clients taking turns would each find their session just unloaded, and the benchmark would
    time a reload per append, not an append."""
    return {**settings, "storage": {"maxLoadedEntries": max(entries, 100_000)}}


async def run(sizes: list[int], appends: int, clients: int) -> None:
    settings = held_in_memory(model_settings(HUGE_WINDOW), clients * (max(sizes) + WARMUP_APPENDS + appends))
    messages = measured_messages(WARMUP_APPENDS + appends, seed=7)
    measured = messages[WARMUP_APPENDS : WARMUP_APPENDS + appends]
    async with AsyncExitStack() as stack:
        daemons = [await stack.enter_async_context(daemon_clients(settings, clients)) for _ in sizes]
        started = time.perf_counter()
        sessions = [[await open_filled(client, size) for client in daemon] for daemon, size in zip(daemons, sizes)]
        fill_seconds = time.perf_counter() - started
        for daemon, opened in zip(daemons, sessions):
            await asyncio.gather(*(appended(client, session_id, messages[:WARMUP_APPENDS]) for client, session_id in zip(daemon, opened)))
        latencies: list[list[float]] = [[] for _ in sizes]
        pids = [(await daemon[0].daemon_status())["pid"] for daemon in daemons]
        cpu = [0.0 for _ in sizes]
        gc.collect()  # the client's own garbage from filling stays out of the timings
        for start in range(0, len(measured), ROUND):
            for column, (daemon, opened) in enumerate(zip(daemons, sessions)):
                before = cpu_seconds(pids[column])
                rounds = await asyncio.gather(
                    *(appended(client, session_id, measured[start : start + ROUND]) for client, session_id in zip(daemon, opened))
                )
                cpu[column] += cpu_seconds(pids[column]) - before
                latencies[column] += [latency for timings in rounds for latency in timings]
    cpu_per_append = [seconds * 1000 / (len(measured) * clients) for seconds in cpu]
    in_process = [in_process_p50(size, messages) for size in sizes]
    report(sizes, latencies, cpu_per_append, in_process, measured, fill_seconds, clients)


def daemon_clients(settings: dict[str, Any], clients: int) -> Any:
    """One client of a daemon over stdio, or `clients` of one serving a socket."""
    if clients == 1:
        return _one(running_daemon(settings))
    return shared_daemon(settings, clients)


@asynccontextmanager
async def _one(daemon: Any) -> AsyncIterator[list[ContextdClient]]:
    async with daemon as client:
        yield [client]


async def appended(client: ContextdClient, session_id: str, messages: list[dict[str, Any]]) -> list[float]:
    """Each message appended alone, the next once the reply came; the latencies in ms."""
    return [await timed_append(client, session_id, message) for message in messages]


def report(
    sizes: list[int],
    latencies: list[list[float]],
    cpu_per_append: list[float],
    in_process: list[float],
    measured: list[dict[str, Any]],
    fill_seconds: float,
    clients: int,
) -> None:
    tokens = [message_tokens(message) for message in measured]
    load = load_average()
    transport = "over stdio" if clients == 1 else f"over a Unix socket, {clients} clients appending at once"
    print(f"append latency {transport}, {len(measured)} single-message appends per size and client "
          f"({sum(tokens) / len(tokens):.0f} tokens per message on average, max {max(tokens)}); "
          f"{os.cpu_count()} cores, load average {load}; {date.today().isoformat()}")
    print(f"filling the sessions took {fill_seconds:.1f} s\n")
    base = percentile(latencies[0], 0.5)
    print(table_header(
        "entries", "p50 ms", "p90 ms", "p99 ms", "max ms", "p50 vs smallest", "daemon CPU ms per append", "in-process p50 ms",
        text_columns=0,
    ))
    for size, values, daemon_cpu, own in zip(sizes, latencies, cpu_per_append, in_process):
        p50 = percentile(values, 0.5)
        print(f"| {size:,} | {p50:.2f} | {percentile(values, 0.9):.2f} | "
              f"{percentile(values, 0.99):.2f} | {max(values):.2f} | {p50 / base:.2f}x | {daemon_cpu:.3f} | {own:.3f} |")
    ratio = percentile(latencies[-1], 0.5) / base
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(f"\ntarget: p50 at {sizes[-1]:,} entries within {TARGET_RATIO}x of p50 at "
          f"{sizes[0]:,} entries -> {ratio:.2f}x, {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=1000)
    parser.add_argument("--sizes", default=",".join(str(size) for size in SIZES))
    parser.add_argument("--clients", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(run([int(size) for size in args.sizes.split(",")], args.appends, args.clients))


if __name__ == "__main__":
    main()
