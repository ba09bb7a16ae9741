"""Building the SummaryRequest a summarizer receives."""

from __future__ import annotations

from collections.abc import Sequence

from contextd.compaction.prompts import PromptName, load_prompt
from contextd.compaction.serialize import serialize_conversation
from contextd.model import FileDetails, Message, PreserveData
from contextd.summarizers.base import SummaryKind, SummaryRequest

SUMMARY_SHARE_OF_RESERVE = 0.8
"""A summary may use this share of the reserved tokens; the rest is slack for the prompt
framing and for the estimate being off."""

TURN_PREFIX_SHARE_OF_RESERVE = 0.4
"""A turn prefix summary is sent along with the main one, so it gets a smaller share."""


def max_summary_tokens(reserve_tokens: int, share: float = SUMMARY_SHARE_OF_RESERVE) -> int:
    """The output cap of a summary request, a share of the reserve (at least 1 token)."""
    return max(1, int(reserve_tokens * share))


def with_conversation(conversation: str, task: str) -> str:
    """The prompt: the serialized conversation, then the task (previous summary, format, focus)."""
    return f"<conversation>\n{conversation}\n</conversation>\n\n{task}"


def build_request(
    kind: SummaryKind,
    messages: Sequence[Message],
    *,
    template: PromptName,
    max_tokens: int,
    files: FileDetails,
    previous_summary: str | None = None,
    instructions: str | None = None,
    goal: str | None = None,
    previous_preserve_data: PreserveData | None = None,
    whole_history: bool = False,
) -> SummaryRequest:
    """A request whose prompt is the serialized conversation, the previous summary (if any),
    the task from `template`, then the focus asked for by `goal` and `instructions`."""
    sections: list[str] = []
    if previous_summary:
        sections.append(f"<previous-summary>\n{previous_summary}\n</previous-summary>")
    sections.append(load_prompt(template))
    if goal:
        sections.append(f"Focus the document on this goal for the new session: {goal}")
    if instructions:
        sections.append(f"Additional instructions from the user: {instructions}")
    task = "\n\n".join(sections)
    return SummaryRequest(
        kind=kind,
        messages=tuple(messages),
        system_prompt=load_prompt("system"),
        prompt=with_conversation(serialize_conversation(messages), task),
        task=task,
        max_tokens=max_tokens,
        previous_summary=previous_summary,
        instructions=instructions,
        goal=goal,
        files=files,
        previous_preserve_data=previous_preserve_data,
        whole_history=whole_history,
    )
