"""The summarizer prompts shipped in `compaction/prompts/*.md`."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Literal

PromptName = Literal["system", "compaction", "update", "turn_prefix", "branch", "handoff"]

CHECKPOINT_FORMAT_SLOT = "{checkpoint_format}"


@cache
def load_prompt(name: PromptName) -> str:
    """The prompt text, with the shared checkpoint format filled in where it asks for it."""
    text = _read(name)
    return text.replace(CHECKPOINT_FORMAT_SLOT, _read("checkpoint_format").strip()).strip()


def _read(stem: str) -> str:
    return (files("contextd.compaction") / "prompts" / f"{stem}.md").read_text(encoding="utf-8")
