"""How many tokens a text, a message or a session entry costs a model.

Text is counted exactly with the model's BPE encoding. What a provider adds around it
(message framing, images) cannot be known exactly without the provider, so it is a small
documented estimate instead.
"""

from __future__ import annotations

import json

from contextd.compaction.context import entry_message
from contextd.model import (
    AssistantMessage,
    Entry,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserBlock,
)
from contextd.tokens.encodings import load_encoding

MESSAGE_OVERHEAD_TOKENS = 4
"""Framing of one message: a start marker, the role, a separator and an end marker.

OpenAI's chat format is `<|start|>{role}<|message|>{content}<|end|>`, which is four tokens
around the content; Anthropic and Google frame messages similarly. The cost is per message, so
ignoring it undercounts long tool-heavy sessions by thousands of tokens.
"""

IMAGE_TOKENS = 1600
"""An image's cost, whatever its size: the most Anthropic charges for one (about
width * height / 750 for a ~1.15 megapixel image after its downscaling), and close to what
OpenAI charges for a high-detail image of that size. Exact image tokens are provider-specific.
"""


def count_text(text: str, encoding: str) -> int:
    """Tokens of `text`; special tokens such as `<|endoftext|>` count as the plain text they are."""
    return len(load_encoding(encoding).encode_ordinary(text))


def count_message(message: Message, encoding: str) -> int:
    """Tokens of a message as a model sees it: framing plus every block of its content."""
    if isinstance(message, AssistantMessage):
        content = sum(_count_assistant_block(block, encoding) for block in message.content)
    else:
        content = _count_content(message.content, encoding)
    return MESSAGE_OVERHEAD_TOKENS + content


def count_entry(entry: Entry, encoding: str) -> int:
    """Tokens an entry adds to the context: its message, or the user message a summary or
    handoff becomes; entries that add no message (prunes, labels, ...) count 0."""
    message = entry_message(entry)
    return 0 if message is None else count_message(message, encoding)


def _count_content(content: str | list[UserBlock], encoding: str) -> int:
    if isinstance(content, str):
        return count_text(content, encoding)
    return sum(_count_user_block(block, encoding) for block in content)


def _count_user_block(block: UserBlock, encoding: str) -> int:
    if isinstance(block, ImageContent):
        return IMAGE_TOKENS
    return count_text(block.text, encoding)


def _count_assistant_block(
    block: TextContent | ThinkingContent | ToolCall, encoding: str
) -> int:
    if isinstance(block, TextContent):
        return count_text(block.text, encoding)
    if isinstance(block, ThinkingContent):
        return count_text(block.thinking, encoding)
    arguments = json.dumps(block.arguments, ensure_ascii=False)
    return count_text(block.name, encoding) + count_text(arguments, encoding)
