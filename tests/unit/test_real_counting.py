"""Counting every message of the real corpus equals tiktoken on the texts it holds.

count_message takes shortcuts (a tool call's name and arguments encoded in one call); the
count must stay what encoding each text apart gives, in every shipped encoding.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextd.model import AssistantMessage, Message, ToolCall
from contextd.tokens import MESSAGE_OVERHEAD_TOKENS, count_message, get_encoding
from contextd.tokens.counting import name_joins_arguments
from contextd.tokens.images import ImageRule, image_tokens

from tests.corpus import NAMES
from tests.importers.support import imported

SHIPPED = ["o200k_base", "cl100k_base"]


def texts_of(message: Message) -> list[str]:
    """The texts a model reads in a message, each as tiktoken would be given it."""
    if isinstance(message.content, str):
        return [message.content]
    texts: list[str] = []
    for block in message.content:
        if block.type == "toolCall":
            texts += [block.name, json.dumps(block.arguments, ensure_ascii=False)]
        elif block.type in ("text", "thinking"):
            texts.append(block.text if block.type == "text" else block.thinking)
    return texts


def plain_count(message: Message, encoding: str) -> int:
    encode = get_encoding(encoding).encode_ordinary
    images = [] if isinstance(message.content, str) else [b for b in message.content if b.type == "image"]
    return (
        MESSAGE_OVERHEAD_TOKENS
        + sum(len(encode(text)) for text in texts_of(message))
        + sum(image_tokens(block.data, ImageRule.ANTHROPIC) for block in images)
    )


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("encoding", SHIPPED)
def test_every_corpus_message_counts_what_tiktoken_counts(name, encoding):
    messages = [entry.message for entry in imported(name).entries if entry.type == "message"]
    assert messages
    assert [count_message(m, encoding) for m in messages] == [plain_count(m, encoding) for m in messages]


def test_the_corpus_tool_calls_take_the_joined_count():
    """The join is not a corner case: the corpus's tool names all take it."""
    calls = [
        block
        for name in NAMES
        for entry in imported(name).entries
        if entry.type == "message" and entry.message.role == "assistant"
        for block in entry.message.content
        if block.type == "toolCall"
    ]
    joined = [call for call in calls if name_joins_arguments(call.name, json.dumps(call.arguments))]
    assert len(calls) > 1000 and len(joined) == len(calls)


NAME_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(NAME_CHARS, max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(NAME_CHARS, max_size=10), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(
    name=st.text(NAME_CHARS, min_size=1, max_size=12) | st.from_regex(r"[A-Za-z_][\w.-]{0,20}", fullmatch=True),
    arguments=st.dictionaries(st.text(NAME_CHARS, max_size=10), JSON_VALUES, max_size=5),
    encoding=st.sampled_from(SHIPPED),
)
def test_a_tool_call_counts_its_name_and_arguments_apart(name: str, arguments: dict[str, Any], encoding: str):
    call = AssistantMessage(content=[ToolCall(id="c", name=name, arguments=arguments)])
    assert count_message(call, encoding) == plain_count(call, encoding)
    encode = get_encoding(encoding).encode_ordinary
    arguments_json = json.dumps(arguments, ensure_ascii=False)
    if name_joins_arguments(name, arguments_json):
        assert len(encode(name + arguments_json)) == len(encode(name)) + len(encode(arguments_json))
