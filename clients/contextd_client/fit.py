"""Tables and ids that fit a terminal: a number or an id is never cut; ids shorten to the
shortest prefix that is still unique (as git does), a column that cannot fit is left out by
priority, and only free text (a name, a path) is shortened, with an ellipsis."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterable, Sequence

MIN_PREFIX = 8
MIN_TEXT_CELLS = 8
GAP = 2


def unique_prefixes(ids: Iterable[str], minimum: int = MIN_PREFIX) -> dict[str, str]:
    """Each id's shortest prefix of at least `minimum` characters that no other id shares
    (`contextd` takes any unique prefix where it takes an id)."""
    ordered = sorted(set(ids))
    shortest: dict[str, str] = {}
    for index, current in enumerate(ordered):
        neighbours = ordered[max(index - 1, 0) : index] + ordered[index + 1 : index + 2]
        shared = max((common_length(current, other) for other in neighbours), default=0)
        shortest[current] = current[: max(minimum, shared + 1)]
    return shortest


def common_length(first: str, second: str) -> int:
    return len(os.path.commonprefix([first, second]))


def shorten(text: str, cells: int) -> str:
    return text if len(text) <= cells else text[: max(cells - 1, 0)] + "…"


def fit_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    text_columns: Iterable[str] = (),
    drop_order: Sequence[str] = (),
    right_aligned: Iterable[str] = (),
) -> list[str]:
    """The table's lines, none wider than `width` while what is kept allows: `text_columns`
    shrink (to MIN_TEXT_CELLS at least), and while even that is too wide the next column of
    `drop_order` is left out. Other cells are shown whole."""
    text, right = set(text_columns), set(right_aligned)
    kept = list(headers)
    for header in [*drop_order, None]:
        natural = {h: max([len(h), *(len(row[headers.index(h)]) for row in rows)]) for h in kept}
        least = sum(min(cells, MIN_TEXT_CELLS) if h in text else cells for h, cells in natural.items())
        if least + GAP * (len(kept) - 1) <= width or header is None:
            break
        if header in kept:
            kept.remove(header)
    widths = share_room(natural, text, width - GAP * (len(kept) - 1))
    lines = []
    for cells in [list(headers), *map(list, rows)]:
        shown = [shorten(cells[headers.index(h)], widths[h]) for h in kept]
        lines.append(
            (" " * GAP).join(
                cell.rjust(widths[h]) if h in right else cell.ljust(widths[h]) for h, cell in zip(kept, shown, strict=True)
            ).rstrip()
        )
    return lines


def share_room(natural: dict[str, int], text: set[str], room: int) -> dict[str, int]:
    """Widths: every column whole but the text columns, which share what is left, the
    narrower ones taking only what they need."""
    widths = dict(natural)
    shrinking = sorted((h for h in natural if h in text), key=lambda h: natural[h])
    left = room - sum(cells for h, cells in natural.items() if h not in text)
    for position, header in enumerate(shrinking):
        share = left // (len(shrinking) - position)
        widths[header] = max(MIN_TEXT_CELLS, min(natural[header], share))
        left -= widths[header]
    return widths


def wrap(text: str, width: int) -> str:
    """Prose wrapped at word boundaries (never inside a word or number), paragraph by paragraph."""
    return "\n".join(
        textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False) if line else line
        for line in text.splitlines()
    )
