"""OpenAI's Responses API compaction as a summarizer: `POST /responses/compact` through the
official SDK.

The API reads the conversation as Responses input items (after the previous compaction's
output, when the same model wrote it) and answers the user messages it kept and one
`compaction` item whose `encrypted_content` only OpenAI can read, for that model. That
output, whole, is what the `openai-responses` context format replays to that model; every
reader of text (another model, the other formats, Chat Completions included, the tree, a
person) gets the offline summarizer's checkpoint of the same messages, written locally.

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
        model = self.model or DEFAULT_MODEL
        with sdk_failures(openai, self.provider, key):
            async with self._client(key) as client, request.answer_deadline():
                compacted = await client.responses.compact(
                    model=model, input=compact_input(request, model)
                )
        output = _compacted_output(compacted)
        text = await self._readable.summarize(request)
        return PreservedSummary(text, PreserveData.of_openai_output(output, model))


def compact_input(request: SummaryRequest, model: str) -> list[Any]:
    """The conversation to compact, led by what the previous compaction left: what OpenAI
    answered then, when `model` made it (OpenAI decrypts its item for that model only), else
    that summary's text."""
    earlier: list[dict[str, Any]] = []
    previous = request.previous_preserve_data
    if previous is not None and previous.model == model:
        earlier.extend(dict(item) for item in previous.openaiItems)
    elif request.previous_summary:
        earlier.append({"role": "user", "content": COMPACTION_PREAMBLE + request.previous_summary})
    return [*earlier, *to_openai_responses(request.messages)]


def _compacted_output(compacted: Any) -> list[dict[str, Any]]:
    """The whole output, as OpenAI's guide says to pass it on: the user messages it kept,
    then its compaction item (which must be there, with its encrypted state)."""
    output = getattr(compacted, "output", None)
    if not isinstance(output, list):
        raise malformed_reply(OpenAINativeSummarizer.provider, "no output")
    items = [item for item in output if getattr(item, "type", None) == "compaction"]
    encrypted = getattr(items[-1], "encrypted_content", None) if items else None
    if not isinstance(encrypted, str) or not encrypted:
        raise malformed_reply(OpenAINativeSummarizer.provider, "no compaction item")
    # The SDK reads the kept user messages into its assistant-message model; the dump keeps
    # every field as OpenAI sent it, so the serializer's type complaints are noise.
    return [item.model_dump(mode="json", exclude_none=True, warnings=False) for item in output]
