"""What contextd's counting costs over calling tiktoken directly, on the same texts.

    python benchmarks/bench_counting.py

For each workload, `ours` is `count_message` (or `count_text`) over every message, `raw` is
tiktoken's `Encoding.encode_ordinary` over the texts those messages hold, already extracted
(tool arguments already JSON), so the ratio is everything contextd adds: walking the blocks,
serialising tool arguments, and chunking long texts. Target: ratio <= 1.2. The texts are the
project's own Python sources and Markdown documents, so the mix is real code, prose and JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from contextd.model import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from contextd.tokens import count_message, count_text, get_encoding

ROOT = Path(__file__).resolve().parents[1]
ENCODING = "o200k_base"


def code_files() -> list[str]:
    return [path.read_text(encoding="utf-8") for path in sorted((ROOT / "server").rglob("*.py"))]


def prose_paragraphs() -> list[str]:
    documents = sorted(ROOT.glob("*.md")) + sorted((ROOT / "server").rglob("*.md"))
    text = "\n\n".join(path.read_text(encoding="utf-8") for path in documents)
    return [part for part in text.split("\n\n") if part.strip()]


def conversation() -> list[Message]:
    """A coding session: the user asks, the assistant reads and edits files, tools answer."""
    messages: list[Message] = []
    prose = prose_paragraphs()
    for index, source in enumerate(code_files()):
        lines = source.splitlines()
        path = f"server/module_{index}.py"
        old = "\n".join(lines[:8])
        new = old.replace("def ", "async def ")
        messages += [
            UserMessage(content=prose[index % len(prose)]),
            AssistantMessage(
                content=[
                    TextContent(text=prose[(index + 1) % len(prose)]),
                    ToolCall(id=f"r{index}", name="read_file", arguments={"path": path}),
                ]
            ),
            ToolResultMessage(toolCallId=f"r{index}", toolName="read_file", content=source),
            AssistantMessage(
                content=[
                    ToolCall(
                        id=f"e{index}",
                        name="edit_file",
                        arguments={"path": path, "old_string": old, "new_string": new},
                    )
                ]
            ),
            ToolResultMessage(toolCallId=f"e{index}", toolName="edit_file", content="Edited."),
        ]
    return messages


def texts_of(message: Message) -> list[str]:
    """What `raw` encodes for a message: the same texts count_message counts."""
    if isinstance(message, AssistantMessage):
        texts: list[str] = []
        for block in message.content:
            if isinstance(block, ToolCall):
                texts += [block.name, json.dumps(block.arguments, ensure_ascii=False)]
            else:
                texts.append(block.text if isinstance(block, TextContent) else block.thinking)
        return texts
    if isinstance(message.content, str):
        return [message.content]
    return [block.text for block in message.content if isinstance(block, TextContent)]


def compare(ours: Callable[[], object], raw: Callable[[], object]) -> tuple[float, float]:
    """Seconds per call of each: the best of several samples, taken alternately so that load
    from other processes on a shared machine weighs on both alike."""
    loops = max(1, int(0.05 / max(seconds_per_call(raw, 1), 1e-9)))
    ours_samples, raw_samples = [], []
    for _ in range(9):
        ours_samples.append(seconds_per_call(ours, loops))
        raw_samples.append(seconds_per_call(raw, loops))
    return min(ours_samples), min(raw_samples)


def seconds_per_call(run: Callable[[], object], loops: int) -> float:
    """CPU seconds, not wall-clock: time spent descheduled on a busy machine is not the code's."""
    started = time.process_time()
    for _ in range(loops):
        run()
    return (time.process_time() - started) / loops


def main() -> None:
    encode = get_encoding(ENCODING).encode_ordinary
    session = conversation()
    short = [message for message in session if sum(map(len, texts_of(message))) < 400]
    log = ToolResultMessage(
        toolCallId="bash_1",
        toolName="bash",
        content="\n".join(
            f"2025-01-01T00:00:{i % 60:02d}Z INFO request {i} served in {i % 97} ms"
            for i in range(40_000)
        ),
    )
    workloads: list[tuple[str, list[Message]]] = [
        ("session (code+prose+JSON)", session),
        ("short messages only", short),
        ("tool calls (JSON args)", [m for m in session if isinstance(m, AssistantMessage)]),
        ("tool results (code)", [m for m in session if isinstance(m, ToolResultMessage)]),
        ("one 2.3 MB log result", [log]),
    ]
    print(f"encoding {ENCODING}; best of 9 alternating samples; CPU ms per pass over the workload\n")
    print(row("workload", "msgs", "tokens", "ours ms", "raw ms", "ratio"))
    for name, messages in workloads:
        texts = [text for message in messages for text in texts_of(message)]
        ours, raw = compare(
            lambda: [count_message(message, ENCODING) for message in messages],
            lambda: [encode(text) for text in texts],
        )
        tokens = sum(len(encode(text)) for text in texts)
        print(row(name, len(messages), tokens, ms(ours), ms(raw), f"{ours / raw:.2f}"))
    texts = [text for message in session for text in texts_of(message)]
    ours, raw = compare(
        lambda: [count_text(text, ENCODING) for text in texts],
        lambda: [encode(text) for text in texts],
    )
    print(row("count_text, session texts", len(texts), "", ms(ours), ms(raw), f"{ours / raw:.2f}"))


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def row(*cells: object) -> str:
    name, *numbers = cells
    return f"{name!s:<28}" + "".join(f"{cell!s:>10}" for cell in numbers)


if __name__ == "__main__":
    main()
