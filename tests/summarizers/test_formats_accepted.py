"""Every context format makes requests the real APIs accept: each real transcript of
tests/fixtures/real, at its leaf and just before each of its compactions, rendered in the
`anthropic`, `openai` and `openai-responses` formats and read with the official SDKs' param
types and the APIs' documented rules (tests/summarizers/api_rules.py); and the Anthropic
format's own repairs (unsigned thinking, empty text, tool ids) on the cases that need them."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

import openai
import pytest
from contextd.compaction.context import build_context, opening_compaction
from contextd.formats import (
    OPENAI_CHAT_MAX_TOOL_ID_CHARS,
    OPENAI_RESPONSES_MAX_CALL_ID_CHARS,
    anthropic_tool_id,
    openai_tool_id,
    render_context,
)
from contextd.importers import IMPORTERS
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    Entry,
    ModelChangeEntry,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from hypothesis import given
from hypothesis import strategies as st

from tests.corpus import NAMES, agent_of, read_text
from tests.summarizers.api_rules import (
    ANTHROPIC_TOOL_ID,
    anthropic_problems,
    openai_chat_problems,
    openai_responses_problems,
)
from tests.summarizers.fake_provider import FakeProvider, Reply


@cache
def session_path(name: str) -> tuple[Entry, ...]:
    imported = IMPORTERS[agent_of(name)](read_text(name).splitlines())
    entries = {entry.id: entry for entry in imported.entries}
    path: list[Entry] = []
    current = imported.leaf_id
    while current is not None:
        path.append(entries[current])
        current = entries[current].parentId
    return tuple(reversed(path))


def moments(path: tuple[Entry, ...]) -> list[tuple[Entry, ...]]:
    """The leaf, and the moment before each compaction (its context at its fullest)."""
    befores = [path[:index] for index, entry in enumerate(path) if isinstance(entry, CompactionEntry) and index]
    return [*befores, path]


def session_model(path: tuple[Entry, ...]) -> str | None:
    models = [entry.model for entry in path if isinstance(entry, ModelChangeEntry)]
    return models[-1] if models else None


def requests(path: tuple[Entry, ...]) -> dict[str, dict[str, Any]]:
    """The request body each format's context makes for the session's own model (so that a
    Codex compaction's item is replayed), with the system prompt where its API takes it."""
    messages = [item.message for item in build_context(path, {})]
    opening = opening_compaction(path)
    model = session_model(path)
    system = "You are a coding agent."
    anthropic = render_context(messages, system, "anthropic", opening, model)
    chat = render_context(messages, system, "openai", opening, model)
    responses = render_context(messages, system, "openai-responses", opening, model)
    return {
        "anthropic": {"model": "claude-sonnet-4-6", "max_tokens": 4096, "system": anthropic["system"], "messages": anthropic["messages"]},
        "openai": {"model": "gpt-5.5", "messages": [{"role": "system", "content": chat["system"]}, *chat["messages"]]},
        "openai-responses": {"model": "gpt-5.5", "instructions": responses["system"], "input": responses["messages"]},
    }


CHECKS = {
    "anthropic": anthropic_problems,
    "openai": openai_chat_problems,
    "openai-responses": openai_responses_problems,
}


@pytest.mark.parametrize("name", NAMES)
def test_every_real_transcript_renders_requests_the_apis_accept(name: str) -> None:
    path = session_path(name)
    problems = {}
    for moment in moments(path):
        for fmt, body in requests(moment).items():
            if found := CHECKS[fmt](body):
                problems[(fmt, moment[-1].id)] = found
    assert problems == {}
    assert len(path) > 10, "a real session, not an empty import"


def test_codex_compaction_items_are_among_the_requests_checked() -> None:
    """The corpus test covers the replay of an imported Codex compaction's item."""
    replayed = [
        name
        for name in NAMES
        if any(item.get("type") == "compaction" for item in requests(session_path(name))["openai-responses"]["input"])
    ]
    assert any(name.startswith("codex-") for name in replayed)


def test_the_checks_can_fail() -> None:
    """The checks refuse what the APIs refuse (else the corpus test above proves nothing)."""
    unsigned = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}
    empty = {"role": "user", "content": [{"type": "text", "text": " "}]}
    bad_id = {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1|fc_2", "name": "x", "input": {}}]}
    base = {"model": "claude-sonnet-4-6", "max_tokens": 10}
    user = {"role": "user", "content": "hi"}
    assert anthropic_problems({**base, "messages": [user, unsigned, user]})
    assert anthropic_problems({**base, "messages": [empty]})
    assert anthropic_problems({**base, "messages": [user, bad_id]})
    assert anthropic_problems({**base, "messages": [user], "temprature": 1}) == ["temprature: unknown field"]
    assert openai_chat_problems({"model": "gpt-5.5", "messages": [{"role": "tool", "tool_call_id": "a", "content": "x"}]})
    long_id = [{"role": "assistant", "tool_calls": [{"id": "c" * 41, "type": "function", "function": {"name": "x", "arguments": "{}"}}]}]
    assert openai_chat_problems({"model": "gpt-5.5", "messages": long_id})
    assert openai_responses_problems({"model": "gpt-5.5", "input": [{"type": "function_call_output", "call_id": "a", "output": "x"}]})
    long_call = [{"type": "function_call", "call_id": "c" * 65, "name": "x", "arguments": "{}"}]
    assert openai_responses_problems({"model": "gpt-5.5", "input": long_call})


# --- the Anthropic format's repairs ------------------------------------------------------------


def codex_turn(call_id: str) -> list[Any]:
    """What a Codex-imported session holds: thinking without a signature, ids with `|`, a
    tool whose output is empty."""
    return [
        UserMessage(content="Run the tests."),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="I should run pytest."),
                TextContent(text=""),
                ToolCall(id=call_id, name="shell", arguments={"command": "pytest -q"}),
            ]
        ),
        ToolResultMessage(toolCallId=call_id, toolName="shell", content=""),
        AssistantMessage(content=[ThinkingContent(thinking="Done.")]),
        UserMessage(content=[TextContent(text="")]),
        UserMessage(content="Thanks."),
    ]


def test_the_anthropic_format_repairs_what_the_api_refuses() -> None:
    messages = render_context(codex_turn("call_1|fc_2"), None, "anthropic")["messages"]

    assert anthropic_problems({"model": "claude-sonnet-4-6", "max_tokens": 10, "messages": messages}) == []
    [tool_use] = [block for block in messages[1]["content"] if block["type"] == "tool_use"]
    [result] = messages[2]["content"][:1]
    assert messages[1]["content"] == [tool_use], "unsigned thinking and empty text left out"
    assert tool_use["id"] == result["tool_use_id"] == anthropic_tool_id("call_1|fc_2")
    assert tool_use["id"].startswith("call_1_fc_2_x")
    assert "content" not in result, "an empty output goes without an empty text block"
    assert messages[2]["content"][1:] == [{"type": "text", "text": "Thanks."}]
    assert len(messages) == 3, "the turn of only unsigned thinking is left out, the users merged"


def test_signed_thinking_and_valid_ids_go_unchanged() -> None:
    turn = [
        UserMessage(content="Go."),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="Plan.", signature="sig-abc"),
                ToolCall(id="toolu_01A", name="read", arguments={}),
            ]
        ),
        ToolResultMessage(toolCallId="toolu_01A", toolName="read", content="text"),
    ]

    messages = render_context(turn, None, "anthropic")["messages"]

    assert messages[1]["content"] == [
        {"type": "thinking", "thinking": "Plan.", "signature": "sig-abc"},
        {"type": "tool_use", "id": "toolu_01A", "name": "read", "input": {}},
    ]


@given(st.lists(st.text(min_size=1, max_size=80), min_size=1, max_size=30, unique=True))
def test_tool_id_mapping_fits_the_pattern_and_never_merges_two_ids(ids: list[str]) -> None:
    mapped = [anthropic_tool_id(tool_id) for tool_id in ids]

    assert all(ANTHROPIC_TOOL_ID.match(one) for one in mapped)
    assert len(set(mapped)) == len(ids)
    assert mapped == [anthropic_tool_id(tool_id) for tool_id in ids], "deterministic"


def test_ids_that_differ_only_in_refused_characters_stay_apart() -> None:
    ids = ["call_1|fc_2", "call_1:fc_2", "call_1 fc_2", "call_1_fc_2"]

    mapped = {anthropic_tool_id(tool_id) for tool_id in ids}

    assert len(mapped) == 4 and "call_1_fc_2" in mapped
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", one) for one in mapped)


# --- the OpenAI formats' repair of long ids -------------------------------------------------------

PI_TOOL_ID = "call-a84e9c6c-b956-4180-8a60-4127cd45ef2e"
"""An id pi recorded (pi-coffee-model-switches): 41 characters, one over Chat Completions' limit."""


def called_and_answered(tool_id: str) -> list[Any]:
    return [
        UserMessage(content="Read the menu."),
        AssistantMessage(content=[ToolCall(id=tool_id, name="read", arguments={"path": "menu.md"})]),
        ToolResultMessage(toolCallId=tool_id, toolName="read", content="espresso"),
    ]


async def refused_as_recorded_taken_as_rendered(
    provider: FakeProvider,
    api_key: str,
    send: Callable[[openai.AsyncOpenAI, Any], Awaitable[Any]],
    as_recorded: list[Any],
    rendered: list[Any],
    refusal: str,
) -> None:
    """Through the openai SDK, the strict fake server refuses `as_recorded` with the API's 400
    (`refusal`) and takes `rendered`."""
    provider.script(Reply.with_summary("ok"))
    async with openai.AsyncOpenAI(api_key=api_key, base_url=provider.openai_url, max_retries=0) as client:
        with pytest.raises(openai.BadRequestError, match=refusal):
            await send(client, as_recorded)
        await send(client, rendered)


async def test_a_tool_id_over_40_characters_is_refused_by_the_api_and_mapped_by_the_format(
    provider: FakeProvider, api_key: str
) -> None:
    """The strict fake server answers the real API's 400 for pi's id sent as recorded; the
    `openai` format sends it mapped, the call and its result alike, and is taken."""
    as_recorded = [
        {"role": "user", "content": "Read the menu."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": PI_TOOL_ID, "type": "function", "function": {"name": "read", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": PI_TOOL_ID, "content": "espresso"},
    ]
    rendered = render_context(called_and_answered(PI_TOOL_ID), None, "openai")["messages"]

    await refused_as_recorded_taken_as_rendered(
        provider, api_key, lambda client, messages: client.chat.completions.create(model="gpt-5.5", messages=messages),
        as_recorded, rendered, "maximum length 40, but got a string with length 41",
    )

    [call] = rendered[1]["tool_calls"]
    assert call["id"] == rendered[2]["tool_call_id"] == openai_tool_id(PI_TOOL_ID, OPENAI_CHAT_MAX_TOOL_ID_CHARS)
    assert len(call["id"]) == 40 and call["id"].startswith(PI_TOOL_ID[:22])


BRIDGE_TOOL_ID = "cursor-pi-bridge-run-c2417032-9686-40f2-bd3c-a763fbaa7693-tool-10"
"""An id a tool bridge wrote into a pi session (reported against pi-cursor-sdk): 65
characters, one over the Responses API's limit for `call_id`."""


async def test_a_call_id_over_64_characters_is_refused_by_the_api_and_mapped_by_the_format(
    provider: FakeProvider, api_key: str
) -> None:
    """The strict fake server answers the real API's 400 for the bridge's id sent as recorded;
    the `openai-responses` format sends it mapped, the call and its output alike, and is taken."""
    as_recorded = [
        {"role": "user", "content": "Read the menu."},
        {"type": "function_call", "call_id": BRIDGE_TOOL_ID, "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": BRIDGE_TOOL_ID, "output": "espresso"},
    ]
    rendered = render_context(called_and_answered(BRIDGE_TOOL_ID), None, "openai-responses")["messages"]

    await refused_as_recorded_taken_as_rendered(
        provider, api_key, lambda client, items: client.responses.compact(model="gpt-5.5", input=items),
        as_recorded, rendered, "maximum length 64, but got a string with length 65",
    )

    call, output = rendered[1], rendered[2]
    assert call["call_id"] == output["call_id"] == openai_tool_id(BRIDGE_TOOL_ID, OPENAI_RESPONSES_MAX_CALL_ID_CHARS)
    assert len(call["call_id"]) == 64 and call["call_id"].startswith(BRIDGE_TOOL_ID[:46])


@pytest.mark.parametrize("longest", [OPENAI_CHAT_MAX_TOOL_ID_CHARS, OPENAI_RESPONSES_MAX_CALL_ID_CHARS])
@given(ids=st.lists(st.text(min_size=1, max_size=120), min_size=1, max_size=30, unique=True))
def test_openai_tool_ids_fit_stay_apart_and_short_ones_go_unchanged(longest: int, ids: list[str]) -> None:
    mapped = [openai_tool_id(tool_id, longest) for tool_id in ids]

    assert all(len(one) <= longest for one in mapped)
    assert len(set(mapped)) == len(ids)
    assert all(one == tool_id for one, tool_id in zip(mapped, ids, strict=True) if len(tool_id) <= longest)
