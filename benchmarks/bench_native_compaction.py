"""What the provider-native summarizers would send for real sessions, and whether it is valid.

    python benchmarks/bench_native_compaction.py

For each real transcript of tests/fixtures/real (imported as `contextd import` does), a
manual compaction at its end with default settings (keepRecentTokens 20000):

- the history to summarize (a split turn's beginning is summarized apart): its messages and
  their tokens as the context counts them;
- anthropic-native: the o200k tokens of the one user turn it sends (the serialized
  transcript with tool outputs whole; `short` is the prompt other summarizers get, tool
  outputs cut to 2,000 characters), and whether that clears
  the 50,000 input tokens from which Anthropic's API compacts (Claude's tokenizer counts
  more tokens than o200k for the same text, so "yes" here is a yes there; the daemon asks
  the API's own counter before the paid call);
- openai-native: the Responses input items `/responses/compact` gets and their JSON size, and
  the function calls among them left without their output or outputs without their call
  (the API refuses such input; the target is 0);
- the readable summary stored beside OpenAI's item: the offline checkpoint's tokens.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from contextd.compaction.prepare import NothingToCompact, prepare_compaction
from contextd.importers import IMPORTERS, save
from contextd.model import Settings
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store
from contextd.summarizers.anthropic_native import MIN_TRIGGER_TOKENS, whole_prompt
from contextd.summarizers.offline import summarize_offline
from contextd.summarizers.openai_native import compact_input
from contextd.tokens import count_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.corpus
from tests.corpus import NAMES, agent_of, read_text  # noqa: E402


def unpaired(items: list[dict]) -> int:
    calls = {item["call_id"] for item in items if item.get("type") == "function_call"}
    outputs = {item["call_id"] for item in items if item.get("type") == "function_call_output"}
    return len(calls ^ outputs)


def row(file: str, scratch: Path) -> str:
    lines = read_text(file).splitlines()
    session_id, _ = save(IMPORTERS[agent_of(file)](lines), scratch, workspace="/bench", name=None)
    session = SessionManager(Store(scratch), Settings(), SilentEvents()).get(session_id)
    name = file.removesuffix(".jsonl.gz")
    prepared = prepare_compaction(session.path, session.entry_tokens, session.settings, calibration=session.calibration)
    if isinstance(prepared, NothingToCompact):
        return f"{name:<36} {session.tokens:>9,}  nothing to compact"
    if prepared.history_request is None:
        # One long turn: only its beginning is summarized (both native summarizers send it).
        assert prepared.turn_prefix_request is not None
        prompt_tokens = count_text(whole_prompt(prepared.turn_prefix_request), "o200k_base")
        clears = "yes" if prompt_tokens >= MIN_TRIGGER_TOKENS else "no"
        return f"{name:<36} {session.tokens:>9,}  one turn: its beginning, {prompt_tokens:,} tokens whole ({clears})"
    request = prepared.history_request
    tokens, calibration = session.entry_tokens, session.calibration
    history_ids = prepared.summarize_entry_ids[: len(request.messages)]  # then the turn's beginning
    span = sum(round(tokens.get(entry_id, 0) * calibration) for entry_id in history_ids)
    short_tokens = count_text(request.prompt, "o200k_base")
    prompt_tokens = count_text(whole_prompt(request), "o200k_base")
    items = compact_input(request, session.model_id)
    size_kb = len(json.dumps(items).encode()) / 1024
    readable = count_text(summarize_offline(request), "o200k_base")
    clears = "yes" if prompt_tokens >= MIN_TRIGGER_TOKENS else "no"
    return (
        f"{name:<36} {session.tokens:>9,} {len(request.messages):>6} {span:>9,} {short_tokens:>9,} {prompt_tokens:>9,} {clears:>6}"
        f" {len(items):>6} {size_kb:>8.0f} {unpaired(items):>8} {readable:>9,}"
    )


def main() -> None:
    print("manual compaction at the end, default settings; tokens are o200k counts")
    print()
    print(
        f"{'session':<36} {'context':>9} {'msgs':>6} {'span':>9} {'short':>9} {'prompt':>9} {'>=50k':>6}"
        f" {'items':>6} {'KB':>8} {'unpaired':>8} {'readable':>9}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        for file in NAMES:
            print(row(file, Path(scratch) / file))


if __name__ == "__main__":
    main()
