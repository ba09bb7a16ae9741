"""The handoff document that starts a fresh session where this one stands."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextd.compaction.context import build_context, visible_entries
from contextd.compaction.files import carried_details, collect_files
from contextd.compaction.request import build_request, max_summary_tokens
from contextd.model import Entry, Settings
from contextd.summarizers.base import SummaryRequest


@dataclass(frozen=True)
class HandoffPreparation:
    """The request for a handoff document and the entries its messages come from (one id
    per message of `request.messages`), for the document's sources."""

    request: SummaryRequest
    entry_ids: tuple[str, ...]


def prepare_handoff(
    path: Sequence[Entry],
    entry_tokens: Mapping[str, int],
    settings: Settings,
    goal: str | None = None,
) -> HandoffPreparation:
    """The request for a handoff document of the context at the end of `path`.

    The summarizer reads the whole current context (a compaction summary on the path
    included) and writes goal, constraints, done / in progress, decisions, exact file paths
    and next steps, focused on `goal` when given. The request's files cover the context and
    what its summaries carried. The session sends it and starts the new session with a
    `handoff` entry holding the document.
    """
    context = build_context(path, entry_tokens)
    messages = [item.message for item in context]
    files = collect_files(messages, settings.compaction, carried_details(visible_entries(path)))
    request = build_request(
        "handoff",
        messages,
        template="handoff",
        max_tokens=max_summary_tokens(settings.compaction.reserveTokens),
        files=files,
        goal=goal,
    )
    return HandoffPreparation(request, tuple(item.entry_id for item in context))
