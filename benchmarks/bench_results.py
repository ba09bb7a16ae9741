"""What a big result costs the daemon beyond encoding it: `contextd/tree` of 5,000 nodes and
`contextd/session/context` of about 1.7 MB, in-process (issue 28, issue 29's leftover).

    python benchmarks/bench_results.py [--entries 5000] [--rounds 15]

For each, the reply as the daemon makes it (the method's function of server.py, from the
live session to the result) and sends it (`contextd.rpc.messages.encode` of the reply),
against the floor: `json.dumps` of the same reply as plain JSON values. Medians of
alternating rounds, CPU time; the ratio is what to compare across machines and commits.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pydantic import TypeAdapter

from bench_append import HUGE_WINDOW, prefill_messages
from live_daemon import model_settings
from contextd import server
from contextd.model import Message, Settings
from contextd.results import ContextParams, SessionParams
from contextd.rpc.messages import encode, reply
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store


def cpu_ms(action: Callable[[], Any]) -> tuple[float, Any]:
    """CPU ms of `action` and what it returned (freed after the time is taken)."""
    gc.collect()
    began = time.process_time()
    made = action()
    return (time.process_time() - began) * 1000, made


def measure(make: Callable[[], Any], rounds: int) -> dict[str, float]:
    """Medians over alternating rounds: making the result, encoding its reply, the floor."""
    wire = json.loads(encode(reply(1, make())))
    times: dict[str, list[float]] = {"made": [], "sent": [], "floor": []}
    for _ in range(rounds):
        floor, _ = cpu_ms(lambda: json.dumps(wire, separators=(",", ":")).encode("ascii"))
        made, result = cpu_ms(make)
        sent, data = cpu_ms(lambda: encode(reply(1, result)))
        times["floor"].append(floor)
        times["made"].append(made)
        times["sent"].append(sent)
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {**medians, "MB": len(data) / 1e6, "ratio": (medians["made"] + medians["sent"]) / medians["floor"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    settings = Settings.model_validate(model_settings(HUGE_WINDOW))
    with tempfile.TemporaryDirectory(prefix="contextd-bench-") as root:
        sessions = SessionManager(Store(Path(root)), settings, SilentEvents())
        try:
            session = sessions.create(root)
            messages = TypeAdapter(list[Message]).validate_python(prefill_messages(args.entries, seed=args.entries))
            for start in range(0, len(messages), 1000):
                session.append_messages(messages[start : start + 1000])
            connection: Any = SimpleNamespace(daemon=SimpleNamespace(sessions=sessions))
            ids = {"sessionId": session.session_id}
            replies = {
                f"contextd/tree, {session.node_count:,} nodes": lambda: server.tree(connection, SessionParams(**ids)),
                "contextd/session/context, neutral": lambda: server.session_context(connection, ContextParams(**ids)),
                "contextd/session/context, anthropic": lambda: server.session_context(
                    connection, ContextParams(**ids, format="anthropic")
                ),
            }
            print(f"{'reply':<40} {'MB':>5} {'made ms':>8} {'sent ms':>8} {'json.dumps ms':>14} {'(made+sent)/floor':>18}")
            for name, make in replies.items():
                row = measure(make, args.rounds)
                print(
                    f"{name:<40} {row['MB']:>5.2f} {row['made']:>8.1f} {row['sent']:>8.1f} {row['floor']:>14.1f}"
                    f" {row['ratio']:>17.2f}x"
                )
        finally:
            sessions.close_all()


if __name__ == "__main__":
    main()
