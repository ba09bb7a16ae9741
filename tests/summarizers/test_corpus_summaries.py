"""The offline summaries of every real transcript, compacted twice as the daemon does it
(benchmarks/bench_real_retention.py): nothing a reader marked resolved is shown as current,
the facts a developer needs are kept, and every summary is one a model can afford.

Each transcript's resolved items (fixed errors, answered questions, superseded goals,
reverted decisions) and facts are in benchmarks/real_facts/, written from the transcript
before any summary of it was read.
"""

from __future__ import annotations

import asyncio
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_real_retention as bench  # noqa: E402

FACTS = sorted((BENCHMARKS / "real_facts").glob("*.json"))
MAX_SUMMARY_TOKENS = 6000


@cache
def compacted(name: str) -> tuple[dict[str, Any], list[bench.Measure]]:
    facts = json.loads((BENCHMARKS / "real_facts" / f"{name}.json").read_text())
    return facts, asyncio.run(bench.run_one(facts, keep=4000, later=8, show=False))


def cases() -> list[Any]:
    return [pytest.param(file.stem, number, id=f"{file.stem}-{number}") for file in FACTS for number in (1, 2)]


@pytest.mark.parametrize(("name", "number"), cases())
def test_nothing_resolved_is_shown_as_current(name: str, number: int) -> None:
    facts, measures = compacted(name)
    assert facts["stale"], "each transcript lists the items a reader marked resolved"
    assert measures[number - 1].stale_current == []


@pytest.mark.parametrize("name", [file.stem for file in FACTS])
def test_the_facts_a_developer_needs_are_kept(name: str) -> None:
    facts, (first, second) = compacted(name)
    if facts["transcript"] in bench.AUTONOMOUS:
        assert first.kept >= bench.TARGETS["autonomous"][0]
    else:
        assert first.kept >= bench.TARGETS["conversational"][0]
        assert second.kept >= bench.TARGETS["conversational"][1]


@pytest.mark.parametrize("name", [file.stem for file in FACTS])
def test_every_summary_is_one_a_model_can_afford(name: str) -> None:
    _, measures = compacted(name)
    for measure in measures:
        assert measure.summary_tokens <= min(MAX_SUMMARY_TOKENS, measure.budget)


def test_the_corpus_holds_autonomous_runs() -> None:
    assert len(bench.AUTONOMOUS) >= 4
    assert bench.AUTONOMOUS <= {file.stem for file in FACTS}
