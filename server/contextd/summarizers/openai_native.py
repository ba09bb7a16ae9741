"""OpenAI's Responses API compaction as a summarizer: `POST /responses/compact` through the
official SDK.

The API reads the conversation as Responses input items (after the previous compaction's
item, when OpenAI wrote that one too) and answers the user messages and one `compaction`
item whose `encrypted_content` only OpenAI can read. That item is the summary the
`openai-responses` context format replays; every reader of text (the other formats, Chat
Completions included, the tree, a person) gets the offline summarizer's checkpoint of the
same messages, written locally.

A split turn's beginning is compacted too when it is the whole history (one long turn, after
nothing or after OpenAI's own item); otherwise it, branch summaries and handoff documents are
for reading, so they get that checkpoint alone and call no API.
"""

from __future__ import annotations

from typing import Any

import openai

from contextd.compaction.context import COMPACTION_PREAMBLE
from contextd.formats import to_openai_responses
from contextd.model import PreserveData, SummarizerSettings
from contextd.summarizers.base import PreservedSummary, SummaryRequest
from contextd.summarizers.errors import malformed_reply, sdk_failures
from contextd.summarizers.offline import OfflineSummarizer
from contextd.summarizers.openai import OpenAIConnection

DEFAULT_MODEL = "gpt-5.5"


class OpenAINativeSummarizer(OpenAIConnection):
    provider = "openai-native"

    def __init__(self, settings: SummarizerSettings) -> None:
        super().__init__(settings)
        self.model: str | None = settings.model or DEFAULT_MODEL
        self._readable = OfflineSummarizer(settings)

    async def summarize(self, request: SummaryRequest) -> str | PreservedSummary:
        if request.kind != "compaction" and not request.whole_history:
            return await self._readable.summarize(request)
        key = self._key()
        with sdk_failures(openai, self.provider, key, self._timeout):
            async with self._client(key) as client:
                compacted = await client.responses.compact(
                    model=self.model or DEFAULT_MODEL, input=compact_input(request)
                )
        item = _compaction_item(compacted)
        text = await self._readable.summarize(request)
        return PreservedSummary(text, PreserveData.of_openai_item(item))


def compact_input(request: SummaryRequest) -> list[Any]:
    """The conversation to compact, led by what the previous compaction left: OpenAI's own
    item when it wrote it, else that summary's text."""
    earlier: list[dict[str, Any]] = []
    if request.previous_preserve_data is not None:
        earlier.append(dict(request.previous_preserve_data.openaiItem))
    elif request.previous_summary:
        earlier.append({"role": "user", "content": COMPACTION_PREAMBLE + request.previous_summary})
    return [*earlier, *to_openai_responses(request.messages)]


def _compaction_item(compacted: Any) -> dict[str, Any]:
    output = getattr(compacted, "output", None)
    if not isinstance(output, list):
        raise malformed_reply(OpenAINativeSummarizer.provider, "no output")
    items = [item for item in output if getattr(item, "type", None) == "compaction"]
    encrypted = getattr(items[-1], "encrypted_content", None) if items else None
    if not isinstance(encrypted, str) or not encrypted:
        raise malformed_reply(OpenAINativeSummarizer.provider, "no compaction item")
    dumped: dict[str, Any] = items[-1].model_dump(mode="json", exclude_none=True)
    return dumped
