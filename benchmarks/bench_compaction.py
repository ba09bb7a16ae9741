"""How long the compaction core takes on large sessions, everything but the summarizer call.

For generated coding sessions of about 50k, 200k and 1M tokens it times the prune plan, the
compaction preparation (cut point, file lists, serialized prompts; the prune applied first,
as the session does) and, inside the latter, the serialization alone. Each figure is the
median of several runs. Run: `python benchmarks/bench_compaction.py [--runs N]`.
Target: the whole at 200k tokens under 50 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from contextd.compaction.prepare import CompactionPreparation, prepare_compaction
from contextd.compaction.prune import plan_prune
from contextd.compaction.serialize import serialize_conversation
from contextd.model import (
    AssistantMessage,
    Entry,
    Message,
    MessageEntry,
    PruneEntry,
    Settings,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from report import load_average, table_header

SIZES = (50_000, 200_000, 1_000_000)
WORDS = "the parser token lexer returns node value error test file path config build".split()


class SessionGenerator:
    """A chain of coding turns: a request, tool steps with outputs of varied size, an answer.

    Tokens are estimated at four characters each, standing in for the session's counts.
    """

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.path: list[Entry] = []
        self.tokens: dict[str, int] = {}

    def text(self, tokens: int) -> str:
        return " ".join(self.random.choices(WORDS, k=max(1, tokens * 4 // 6)))

    def append(self, message: Message) -> None:
        entry_id = f"e{len(self.path)}"
        parent = self.path[-1].id if self.path else None
        entry = MessageEntry(id=entry_id, parentId=parent, message=message)
        self.path.append(entry)
        self.tokens[entry_id] = max(1, len(message.model_dump_json()) // 4)

    def turn(self) -> None:
        self.append(UserMessage(content=self.text(self.random.randint(20, 200))))
        for _ in range(self.random.randint(1, 6)):
            name = self.random.choice(["read", "edit", "bash", "grep"])
            call_id = f"c{len(self.path)}"
            self.append(
                AssistantMessage(
                    content=[
                        ThinkingContent(thinking=self.text(self.random.randint(10, 150))),
                        TextContent(text=self.text(self.random.randint(5, 60))),
                        ToolCall(
                            id=call_id,
                            name=name,
                            arguments={"path": f"src/m{self.random.randint(0, 300)}.py"},
                        ),
                    ],
                    stopReason="toolUse",
                )
            )
            output = self.text(min(20_000, int(self.random.paretovariate(1.5) * 150)))
            self.append(ToolResultMessage(toolCallId=call_id, toolName=name, content=output))
        self.append(
            AssistantMessage(content=[TextContent(text=self.text(self.random.randint(30, 300)))])
        )

    def until(self, total_tokens: int) -> SessionGenerator:
        while sum(self.tokens.values()) < total_tokens:
            self.turn()
        return self


def timings_ms(run: Callable[[], Any], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return times


def measure(size: int, runs: int) -> dict[str, Any]:
    session = SessionGenerator(seed=size).until(size)
    settings = Settings()
    plan = plan_prune(session.path, session.tokens, settings.pruning)
    path = list(session.path)
    if plan is not None:
        path.append(
            PruneEntry(
                id="prune",
                parentId=path[-1].id,
                entryIds=list(plan.entry_ids),
                tokensSaved=plan.tokens_saved,
            )
        )
    preparation = prepare_compaction(path, session.tokens, settings)
    assert isinstance(preparation, CompactionPreparation)
    assert preparation.history_request is not None
    history = preparation.history_request.messages
    prune = timings_ms(lambda: plan_prune(session.path, session.tokens, settings.pruning), runs)
    prepare = timings_ms(lambda: prepare_compaction(path, session.tokens, settings), runs)
    serialize = timings_ms(lambda: serialize_conversation(history), runs)
    totals = [a + b for a, b in zip(prune, prepare, strict=True)]
    return {
        "session tokens": f"{sum(session.tokens.values()):,}",
        "entries": f"{len(session.path):,}",
        "pruned": f"{len(plan.entry_ids) if plan else 0:,}",
        "summarized": f"{len(preparation.summarize_entry_ids):,}",
        "prompt chars": f"{len(preparation.history_request.prompt):,}",
        "prune plan": f"{statistics.median(prune):.1f}",
        "prepare": f"{statistics.median(prepare):.1f}",
        "(serialize)": f"{statistics.median(serialize):.1f}",
        "total": f"{statistics.median(totals):.1f}",
        "best total": f"{min(totals):.1f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    load = load_average()
    print(f"compaction core: milliseconds, median of {runs} runs (best total: the fastest run)")
    print(f"prepare includes serialize; machine load average {load}\n")
    rows = [measure(size, runs) for size in SIZES]
    print(table_header(*rows[0], text_columns=0))
    for row in rows:
        print("| " + " | ".join(row.values()) + " |")


if __name__ == "__main__":
    main()
