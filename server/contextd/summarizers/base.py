"""What every summarizer takes and returns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Literal, Protocol

from contextd.model import FileDetails, Message, PreserveData

SummaryKind = Literal["compaction", "turn_prefix", "branch", "handoff"]
AnswerDeadline = Callable[[], AbstractAsyncContextManager[object]]


@dataclass(frozen=True)
class SummaryRequest:
    """One thing to summarize, in both forms a summarizer may want.

    LLM summarizers send `system_prompt` and `prompt` (the serialized conversation with
    the instructions); the offline summarizer reads `messages` directly.
    """

    kind: SummaryKind
    messages: Sequence[Message]
    system_prompt: str
    prompt: str
    max_tokens: int
    task: str = ""
    """The prompt without the conversation: the previous summary, the task, the focus (for
    a summarizer that sends the conversation its own way)."""
    previous_summary: str | None = None
    instructions: str | None = None
    goal: str | None = None
    files: FileDetails = field(default_factory=FileDetails)
    previous_preserve_data: PreserveData | None = field(default=None, repr=False)
    """The previous compaction's provider state, for a native compaction to build on."""
    followed_by_request: bool = False
    """The user's next request follows these messages (a split turn's beginning is summarized
    apart): what the messages ask or offer the user at their end is answered already."""
    whole_history: bool = False
    """A split turn's beginning with no history before it: these messages, after
    `previous_preserve_data` if any, are all the context holds before the kept part, so a
    provider's compaction of them stands for everything summarized."""
    answer_deadline: AnswerDeadline = field(default=nullcontext, repr=False, compare=False)
    """Bounds a provider's wait for its answer: every provider enters it around its HTTP
    exchange (the request is then cancelled when time runs out, its connection closed), and
    around nothing else. The summarizer chain sets it for each attempt; the offline work a
    summarizer does (the extractive checkpoint, in a thread nothing could stop) is never
    under it: it needs no network, and a deadline there only fails it on a loaded machine."""


@dataclass(frozen=True)
class PreservedSummary:
    """A provider-native compaction's answer: the readable summary and the provider's own
    opaque state, which the compaction entry keeps as `preserveData`."""

    text: str
    preserve_data: PreserveData = field(repr=False)


class SummarizerError(Exception):
    """A summarizer gave up; the message is safe to show (it never holds a key)."""


class Summarizer(Protocol):
    provider: str
    model: str | None

    async def summarize(self, request: SummaryRequest) -> str | PreservedSummary: ...
