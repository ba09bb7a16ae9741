"""A transcript line applies whole or not at all.

A real transcript gets, at a drawn place, a copy of one of its own lines with one field (of
the line's own, at any depth) holding a value of another JSON type, as no agent writes it;
the copied line itself is left out, so no id is there twice. Whatever the importer makes of
it, `contextd import` and a follower (the file fed in parts, the importer's state saved as
JSON and restored between them) agree, and:

- a line the import refuses ("a field could not be read") costs nothing: the import is the
  one of the file with a blank line in its place (same line numbers), to the entry, the leaf,
  the usage reported pending after every part (the figure's input) and the session's
  description, the refusal being the only problem more;
- a line the importer takes by its own rules (a field it ignores or tolerates, a record it
  skips by design) harms no other line: no other line is reported corrupt that was not
  before, nothing the user or the model said on another line is lost (a tool result may
  fall away by design, where the line moved the conversation off its call), and every entry
  hangs below one made before it.

A half-applied line fails the first (an entry made, an answer cut short, a problem said
before the line was refused), or the second (what it left behind refused a later line or
spoiled an answer other lines made, the entries that waited for the first model were lost
with it). FOUND_HALF_APPLIED (below) holds one case of each the audit found.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.corpus import NAMES, agent_of
from tests.importers.line_damage import (
    WRONG_VALUES,
    Outcome,
    children,
    field_at,
    in_parts,
    replaced,
    whole_file,
    wrong_values_for,
)
from tests.importers.support import source_lines

AFTER = 40
"""Lines of the transcript kept after the damaged one (enough for what it could harm)."""
REFUSED = "a field could not be read"


@st.composite
def field_paths(draw: st.DrawFn, record: dict[str, Any]) -> tuple[str | int, ...]:
    """A field of `record` at any depth: a key drawn at each level, going deeper or not."""
    path: list[str | int] = []
    value: Any = record
    while options := children(value):
        key, value = draw(st.sampled_from(options))
        path.append(key)
        if not children(value) or not draw(st.booleans()):
            break
    return tuple(path)


@dataclass(frozen=True)
class Damage:
    """Line `index` (from 0) of transcript `name`, its field at `path` holding the WRONG_VALUES
    of `wrong`, moved to line `number` (from 1) of the transcript left without it."""

    name: str
    index: int
    path: tuple[str | int, ...]
    wrong: str
    number: int

    def lines(self) -> list[str]:
        lines = list(source_lines(self.name))
        damaged = json.dumps(replaced(json.loads(lines[self.index]), self.path, WRONG_VALUES[self.wrong]))
        rest = (lines[: self.index] + lines[self.index + 1 :])[: self.number - 1 + AFTER]
        return [*rest[: self.number - 1], damaged, *rest[self.number - 1 :]]


@st.composite
def damages(draw: st.DrawFn, agent: str) -> Damage:
    name = draw(st.sampled_from([name for name in NAMES if agent_of(name) == agent]))
    lines = source_lines(name)
    index = draw(st.sampled_from([index for index, line in enumerate(lines) if line.startswith("{")]))
    record = json.loads(lines[index])
    path = draw(field_paths(record))
    wrong = draw(st.sampled_from(wrong_values_for(field_at(record, path))))
    # In its place, or anywhere after the first line (pi's header: a file starting otherwise is
    # no pi session at all).
    at = draw(st.one_of(st.just(index), st.integers(min(index, 1), len(lines) - 1)))
    return Damage(name, index, path, wrong, at + 1)


def assert_whole_or_nothing(agent: str, damaged: list[str], number: int, cuts: list[int]) -> None:
    blank = [*damaged[: number - 1], "", *damaged[number:]]
    for read in (lambda lines: whole_file(agent, lines), lambda lines: in_parts(agent, lines, cuts)):
        outcome, without = read(damaged), read(blank)
        refusals = [problem for problem in outcome.problems if problem.line == number and problem.message.startswith(REFUSED)]
        if refusals:
            assert _compared(outcome) == _compared(without)
            assert set(outcome.problems) - set(refusals) == set(without.problems)
        else:
            corrupt_elsewhere = {p for p in outcome.problems if p.kind == "corrupt" and p.line != number}
            assert corrupt_elsewhere <= set(without.problems)
            assert not conversation(without) - conversation(outcome)
            assert_every_entry_below_an_earlier_one(outcome)
    assert _compared(whole_file(agent, damaged), pending=False) == _compared(in_parts(agent, damaged, cuts), pending=False)


def _compared(outcome: Outcome, *, pending: bool = True) -> tuple[Any, ...]:
    return (outcome.entries, outcome.leaf, outcome.described, *([outcome.pending_usage] if pending else []))


def conversation(outcome: Outcome) -> Counter[str]:
    """What the user and the model said (each content block), wherever it hangs: a tool
    result may fall away by design where a line moved the conversation off its call."""
    said: Counter[str] = Counter()
    for entry in outcome.entries:
        message = entry.get("message")
        if message is not None and message["role"] in ("user", "assistant"):
            content = message["content"]
            said.update(json.dumps(block, sort_keys=True) for block in ([content] if isinstance(content, str) else content))
    return said


def assert_every_entry_below_an_earlier_one(outcome: Outcome) -> None:
    made: set[str] = set()
    for entry in outcome.entries:
        assert entry["parentId"] is None or entry["parentId"] in made, entry["id"]
        made.add(entry["id"])
    assert outcome.leaf is None or outcome.leaf in made


@pytest.mark.parametrize("agent", ["claude-code", "codex", "pi"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_line_with_a_field_of_another_type_applies_whole_or_not_at_all(agent: str, data: st.DataObject) -> None:
    damage = data.draw(damages(agent))
    damaged = damage.lines()
    cuts = data.draw(st.lists(st.integers(1, len(damaged)), max_size=4))
    assert_whole_or_nothing(agent, damaged, damage.number, cuts)


FOUND_HALF_APPLIED = {
    "claude-code: an answer's record with a parent of another type ended the answer before it": Damage(
        "claude-code-vps-glm47.jsonl.gz", 296, ("parentUuid",), "list", 103
    ),
    "claude-code: an answer's record with a numeric timestamp refused the record after it": Damage(
        "claude-code-flow-killed-background.jsonl.gz", 72, ("timestamp",), "number", 64
    ),
    "claude-code: a user record with a numeric content said a repair before it was refused": Damage(
        "claude-code-atlas-sonnet45.jsonl.gz", 593, ("message", "content"), "number", 390
    ),
    "claude-code: a record waiting for the first model, refused, lost the others waiting": Damage(
        "claude-code-atlas-opus41.jsonl.gz", 0, ("parentUuid",), "list", 1
    ),
    "claude-code: a queued notification with a numeric timestamp failed the import's end": Damage(
        "claude-code-flow-killed-background.jsonl.gz", 84, ("timestamp",), "number", 85
    ),
    "codex: a call with a numeric name dropped the whole answer, other lines' items with it": Damage(
        "codex-knearme-compacted.jsonl.gz", 275, ("payload", "name"), "number", 276
    ),
    "codex: a compaction with a kept message of numeric content was added before the refusal": Damage(
        "codex-knearme-compacted.jsonl.gz", 1218, ("payload", "replacement_history", 3, "content"), "number", 1219
    ),
    "pi: an entry whose type is a list was reported unknown and skipped, then refused": Damage(
        "pi-coffee-deepseek.jsonl.gz", 5, ("type",), "list", 4
    ),
    "pi: an answer waiting for the first model made the root, then was refused": Damage(
        "pi-termux-qwen.jsonl.gz", 7, ("parentId",), "list", 2
    ),
}
"""Lines the audit found half applied (each failed `assert_whole_or_nothing` before)."""


@pytest.mark.parametrize("damage", FOUND_HALF_APPLIED.values(), ids=FOUND_HALF_APPLIED.keys())
def test_the_lines_found_half_applied_apply_whole_or_not_at_all(damage: Damage) -> None:
    assert_whole_or_nothing(agent_of(damage.name), damage.lines(), damage.number, [damage.number // 2, damage.number + 3])
