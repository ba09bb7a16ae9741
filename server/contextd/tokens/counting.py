"""How many tokens a text, a message or a session entry costs a model.

Text is counted exactly with the model's BPE encoding. What a provider adds around it
(message framing) cannot be known exactly without the provider, so it is a small documented
estimate instead; an image costs what its provider's documented rule gives for its size
(`contextd.tokens.images`), in the provider's own tokens: a count that calibration will
multiply passes that factor's prior as `image_scale`, which images are divided by, so the
calibrated figure shows them at their cost instead of a quarter more for Claude.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache

from contextd.compaction.context import entry_message
from contextd.compaction.serialize import json_text
from contextd.model import CompactionEntry, Entry, InstructionsEntry, Message, PreserveData
from contextd.tokens.encodings import load_encoding
from contextd.tokens.images import ImageRule, image_tokens

MESSAGE_OVERHEAD_TOKENS = 4
"""Framing of one message: a start marker, the role, a separator and an end marker.

OpenAI's chat format is `<|start|>{role}<|message|>{content}<|end|>`, which is four tokens
around the content; Anthropic and Google frame messages similarly. The cost is per message, so
ignoring it undercounts long tool-heavy sessions by thousands of tokens.
"""

CHUNK_CHARS = 65_536
"""Longer texts are encoded in pieces of at most this many characters: tiktoken's pre-tokenizer
is quadratic on a long run with no split point (a minified file, a run of one character) and
panics, killing the caller, on about 1.5 million whitespace characters."""


def count_text(text: str, encoding: str) -> int:
    """Tokens of `text`; special tokens such as `<|endoftext|>` count as the plain text they are."""
    return _count(_encoder(encoding), text)


def count_message(
    message: Message, encoding: str, images: ImageRule = ImageRule.ANTHROPIC, image_scale: float = 1.0
) -> int:
    """Tokens of a message as a model sees it: framing plus every block of its content, its
    images counted by the `images` rule and divided by `image_scale`."""
    encode = _encoder(encoding)
    content = message.content
    # `_count` is inlined for short texts: on a short message a call costs a good part of
    # what encoding the text does.
    if isinstance(content, str):
        return MESSAGE_OVERHEAD_TOKENS + (len(encode(content)) if len(content) <= CHUNK_CHARS else _count(encode, content))
    tokens = MESSAGE_OVERHEAD_TOKENS
    for block in content:  # told apart by tag: a model's isinstance is slow to say no
        if block.type == "text":
            text = block.text
        elif block.type == "thinking":
            text = block.thinking
        elif block.type == "toolCall":
            text = json_text(block.arguments)
            if name_joins_arguments(block.name, text):
                text = block.name + text
            else:
                tokens += _count(encode, block.name)
        else:
            tokens += round(image_tokens(block.data, images) / image_scale)
            continue
        tokens += len(encode(text)) if len(text) <= CHUNK_CHARS else _count(encode, text)
    return tokens


def name_joins_arguments(name: str, arguments_json: str) -> bool:
    """Whether a tool call's name and its arguments' JSON count as many tokens together as
    apart, so that they take one encoder call instead of two (each call costs about what
    encoding a short text does).

    They do when the name ends with an ASCII letter or digit and the JSON opens with `{`:
    in the shipped encodings' patterns a letter runs on only into letters, marks or an
    apostrophe's contraction and a digit only into digits, and no pattern looks ahead past
    either, so the joined text splits into the name's pre-tokens then the JSON's, and BPE
    merges only within a pre-token."""
    return name[-1:] in _WORD_ENDS and arguments_json[:1] == "{"


_WORD_ENDS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def count_entry(
    entry: Entry, encoding: str, images: ImageRule = ImageRule.ANTHROPIC, image_scale: float = 1.0
) -> int:
    """Tokens an entry adds to the context: its message, the user message a summary or
    handoff becomes, or its instructions; entries that add no message (prunes, labels, ...)
    count 0. Images are counted by the `images` rule and divided by `image_scale` (the
    model's: `ModelInfo.image_rule`, `ModelInfo.image_scale`)."""
    if isinstance(entry, InstructionsEntry):
        # Part of the system prompt: framed like one message, gone when withdrawn.
        return MESSAGE_OVERHEAD_TOKENS + count_text(entry.text, encoding) if entry.text else 0
    message = entry_message(entry)
    counted = 0 if message is None else count_message(message, encoding, images, image_scale)
    if isinstance(entry, CompactionEntry) and entry.preserveData is not None:
        # The provider's own summary, sent in its place, may be larger than the text we hold
        # (Codex's is encrypted: contextd holds a one-line note for it).
        return max(counted, encrypted_tokens(entry.preserveData))
    return counted


ENCRYPTED_CHARS_PER_TOKEN = 16 / 3
"""An encrypted item's characters per token of the text it holds: base64 gives 3 bytes per
4 characters, the text about 4 bytes per token."""
ENCRYPTION_OVERHEAD_CHARS = 76
"""What the envelope around the text takes (version, time, IV and MAC: 57 bytes in base64)."""


def encrypted_tokens(data: PreserveData) -> int:
    """The tokens an encrypted provider summary holds, estimated from its length."""
    contents = [item.get("encrypted_content") for item in data.openaiItems]
    return sum(
        max(round((len(content) - ENCRYPTION_OVERHEAD_CHARS) / ENCRYPTED_CHARS_PER_TOKEN), 0)
        for content in contents
        if isinstance(content, str)
    )


@cache
def _encoder(encoding: str) -> Callable[[str], list[int]]:
    return load_encoding(encoding).encode_ordinary


def _count(encode: Callable[[str], list[int]], text: str) -> int:
    if len(text) <= CHUNK_CHARS:
        return len(encode(text))
    return sum(len(encode(chunk)) for chunk in split_for_counting(text, CHUNK_CHARS))


def split_for_counting(text: str, size: int) -> Iterator[str]:
    """`text` in pieces of at most `size` characters whose token counts add up to the whole's.

    Each piece ends, where possible, right after a letter or digit that a line break follows:
    neither encoding's pattern puts a letter or digit and a following line break in one
    pre-token, so BPE never merges across such a cut. A stretch of `size` characters without
    one is cut hard, which can miscount by a token or two per cut.
    """
    start = 0
    while len(text) - start > size:
        end = _cut_point(text, start, start + size)
        yield text[start:end]
        start = end
    yield text[start:]


def _cut_point(text: str, start: int, limit: int) -> int:
    """The last exact cut in (start, limit], else `limit`."""
    newline = text.rfind("\n", start + 1, limit + 1)
    while newline > start:
        cut = newline - 1 if text[newline - 1] == "\r" else newline
        if cut > start and text[cut - 1].isalnum():
            return cut
        newline = text.rfind("\n", start + 1, newline)
    return limit

