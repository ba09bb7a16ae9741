"""serialize_conversation: the text a summarizer reads."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from contextd.compaction.serialize import TOOL_TEXT_MAX_CHARS, serialize_conversation, truncate
from contextd.model import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def test_each_role_has_its_label():
    text = serialize_conversation(
        [
            UserMessage(content="Fix the parser"),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="Look at parse()"),
                    TextContent(text="Reading it."),
                    ToolCall(id="1", name="read", arguments={"path": "p.py", "limit": 20}),
                    ToolCall(id="2", name="grep", arguments={"pattern": 'def "x"'}),
                ]
            ),
            ToolResultMessage(toolCallId="1", toolName="read", content="def parse(): ..."),
            ToolResultMessage(toolCallId="2", toolName="grep", content="no match", isError=True),
            AssistantMessage(content=[], stopReason="error", errorMessage="rate limited"),
        ]
    )
    assert text == "\n\n".join(
        [
            "[User]: Fix the parser",
            "[Assistant thinking]: Look at parse()",
            "[Assistant]: Reading it.",
            '[Assistant tool calls]: read(path="p.py", limit=20); grep(pattern="def \\"x\\"")',
            "[Tool result read]: def parse(): ...",
            "[Tool result grep (error)]: no match",
            "[Assistant error]: rate limited",
        ]
    )


def test_long_tool_results_are_truncated_with_a_note():
    output = "y" * (TOOL_TEXT_MAX_CHARS + 500)
    text = serialize_conversation(
        [ToolResultMessage(toolCallId="1", toolName="bash", content=output)]
    )
    assert (
        text
        == f"[Tool result bash]: {'y' * TOOL_TEXT_MAX_CHARS}\n[... 500 more characters truncated]"
    )


def test_long_tool_call_arguments_are_truncated_too():
    call = ToolCall(id="1", name="write", arguments={"path": "a.txt", "content": 'line "one"\n' + "c" * 10_000})
    text = serialize_conversation([AssistantMessage(content=[call])])
    assert text.endswith(f'content="line \\"one\\"\\n{"c" * (TOOL_TEXT_MAX_CHARS - 11)}\n[... 8011 more characters truncated])')


def test_user_blocks_and_images():
    message = UserMessage(
        content=[TextContent(text="What is this?"), ImageContent(data="AAAA", mimeType="image/png")]
    )
    assert serialize_conversation([message]) == "[User]: What is this?\n[image: image/png]"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
# Characters JSON escapes (quotes, backslashes, control characters), ASCII, and beyond the
# Basic Multilingual Plane, lone surrogates included: every length an escape can take.
escape_prone_text = st.text(
    st.sampled_from('"\\\n\t\r\b\f\x00\x1b\x7fa é€😀\ud800'), min_size=0, max_size=60
)


@given(value=json_values | escape_prone_text, max_chars=st.integers(1, 40))
def test_tool_call_arguments_read_as_their_json_a_long_string_cut_in_its_own_characters(value, max_chars):
    """A string argument is cut as a tool result's text is, in its own characters, then
    escaped (its quote left open); any other value's JSON is cut to the limit."""
    call = ToolCall(id="1", name="write", arguments={"content": value})
    text = serialize_conversation([AssistantMessage(content=[call])], tool_text_max_chars=max_chars)
    if isinstance(value, str) and len(value) > max_chars:
        expected = json.dumps(value[:max_chars], ensure_ascii=False)[:-1] + f"\n[... {len(value) - max_chars} more characters truncated]"
    elif isinstance(value, str):
        expected = json.dumps(value, ensure_ascii=False)
    else:
        expected = truncate(json.dumps(value, ensure_ascii=False), max_chars)
    assert text == f"[Assistant tool calls]: write(content={expected})"
