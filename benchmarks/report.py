"""What every benchmark prints beside its numbers: the machine's load, and markdown tables
(benchmarks/README.md keeps the results as these tables)."""

from __future__ import annotations

import os


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages: a shared machine's load moves every timing."""
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


def table_header(*columns: str, text_columns: int = 1) -> str:
    """A markdown table's header and alignment rows: the first `text_columns` columns
    left-aligned (names), the rest right-aligned (numbers)."""
    alignment = ["---"] * text_columns + ["---:"] * (len(columns) - text_columns)
    return "| " + " | ".join(columns) + " |\n|" + "|".join(alignment) + "|"
