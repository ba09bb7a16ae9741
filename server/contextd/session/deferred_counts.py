"""Counts a mirror's first read leaves for later.

A followed transcript's entries are written into its mirror without being counted: the
figure a mirror shows first is the agent's own latest report plus a count of only what came
after it (DESIGN.md: the provider's usage where one exists after the latest compaction), and
the rest is counted afterwards, in a worker thread, or at once by whatever needs the counts
first (see `LiveState.entry_tokens`). Counting is most of a first read (tiktoken over every
text), so the mirror answers in the time its entries take to read and write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from contextd.model import NON_NODE_TYPES, Entry
from contextd.tokens import count_entry
from contextd.tokens.registry import ModelInfo

BACKGROUND_BATCH = 512
"""Entries counted per trip to the worker thread: small enough that a batch counted with an
encoding a model switch replaced meanwhile is little work lost."""


@dataclass
class PendingCounts:
    """Entries in a session's tree whose counts are not known yet, and the nodes the
    calibration ledger has not taken yet (it takes them in file order, counted)."""

    uncounted: dict[str, Entry] = field(default_factory=dict)
    unledgered: list[Entry] = field(default_factory=list)
    relearn: bool = False
    """The calibration is to be learned again from every node (the counting changed)."""

    def __bool__(self) -> bool:
        return bool(self.unledgered or self.uncounted or self.relearn)

    def add_all(self, entries: Iterable[Entry]) -> None:
        """Entries in file order (a mirror's first read brings thousands at once)."""
        entries = list(entries)
        self.uncounted.update({entry.id: entry for entry in entries})
        self.unledgered.extend([entry for entry in entries if entry.type not in NON_NODE_TYPES])  # is_node, inline

    def batch(self) -> list[Entry]:
        """The next entries for the worker thread (file order)."""
        return [entry for entry, _ in zip(self.uncounted.values(), range(BACKGROUND_BATCH))]

    def clear(self) -> None:
        self.uncounted.clear()
        self.unledgered.clear()
        self.relearn = False


class CountsOnDemand(Mapping[str, int]):
    """The counts known, where an entry not counted yet is counted when first looked up
    (and kept): the figure of a mirror's first read looks up only the entries it needs."""

    def __init__(self, known: dict[str, int], pending: PendingCounts, count: Callable[[Entry], int]) -> None:
        self._known, self._pending, self._count = known, pending, count

    def __getitem__(self, entry_id: str) -> int:
        tokens = self._known.get(entry_id)
        if tokens is None:
            entry = self._pending.uncounted.pop(entry_id)  # KeyError: no such entry, as a dict says
            tokens = self._known[entry_id] = self._count(entry)
        return tokens

    def __iter__(self) -> Iterator[str]:
        yield from self._known
        yield from self._pending.uncounted

    def __len__(self) -> int:
        return len(self._known) + len(self._pending.uncounted)


def count_entries(entries: Sequence[Entry], info: ModelInfo) -> list[int]:
    """Each entry's count for `info`'s counting (pure: run in a worker thread)."""
    return [count_entry(entry, info.encoding, info.image_rule, info.image_scale) for entry in entries]
