"""How a provider-native compaction is replayed: OpenAI's whole output (the user messages it
kept, then its item) in the `openai-responses` format in place of the summary (with a split
turn's beginning after it), to the model that made it only; the readable summary everywhere
else (another model, Chat Completions, which cannot take the item); the opaque state kept
out of reprs."""

from __future__ import annotations

import json

from contextd.compaction.context import COMPACTION_PREAMBLE, HISTORY_TOOLS_LINE, entry_message
from contextd.compaction.files import format_file_lists
from contextd.compaction.prepare import TURN_CONTEXT_HEADING, split_turn_context
from contextd.formats import render_context
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    FileDetails,
    PreserveData,
    SummarizerInfo,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

ITEM = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAsecret-state"}
KEPT = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Round the totals."}]}
MAKER = "gpt-5.5"
NATIVE_STATE = PreserveData(openaiItems=[KEPT, ITEM], model=MAKER)
FILES = format_file_lists(FileDetails(readFiles=["src/app.py"], modifiedFiles=["src/cart.py"]))


def compaction(summary: str, preserve: PreserveData | None = NATIVE_STATE) -> CompactionEntry:
    return CompactionEntry(
        id="c1",
        parentId="e9",
        summary=summary,
        firstKeptEntryId="e5",
        tokensBefore=9000,
        tokensAfter=1200,
        reason="manual",
        summarizer=SummarizerInfo(provider="openai-native", model="gpt-5.5"),
        preserveData=preserve,
    )


def context_of(entry: CompactionEntry):
    summary_message = entry_message(entry)
    assert summary_message is not None
    return [
        summary_message,
        UserMessage(content="Now make the totals round half-even."),
        AssistantMessage(
            content=[
                TextContent(text="Switching cart.py to Decimal."),
                ToolCall(id="c1", name="edit", arguments={"path": "cart.py"}),
            ]
        ),
        ToolResultMessage(toolCallId="c1", toolName="edit", content="ok"),
    ]


def test_the_responses_format_replays_the_item_in_place_of_the_summary() -> None:
    entry = compaction("## Goal\n- Round totals" + FILES)

    messages = render_context(context_of(entry), None, "openai-responses", entry, MAKER)["messages"]

    assert messages == [
        KEPT,
        ITEM,
        {"role": "user", "content": "Now make the totals round half-even."},
        {"role": "assistant", "content": "Switching cart.py to Decimal."},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "edit",
            "arguments": '{"path": "cart.py"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]


def test_a_split_turn_beginning_follows_the_item() -> None:
    turn = "- The user asked for half-even rounding\n- cart.py read"
    entry = compaction(f"## Goal\n- Round totals\n\n{TURN_CONTEXT_HEADING}\n\n{turn}{FILES}")

    messages = render_context(context_of(entry), None, "openai-responses", entry, MAKER)["messages"]

    assert messages[:2] == [KEPT, ITEM]
    assert messages[2] == {"role": "user", "content": f"{TURN_CONTEXT_HEADING}\n\n{turn}"}
    assert "src/app.py" not in messages[2]["content"], "file lists belong to the whole summary"
    assert split_turn_context("## Goal\n- no split" + FILES) is None


def test_an_item_that_holds_the_turns_beginning_is_replayed_alone() -> None:
    turn = "- The user asked for half-even rounding"
    entry = compaction(
        f"## Goal\n- Round totals\n\n{TURN_CONTEXT_HEADING}\n\n{turn}{FILES}",
        preserve=PreserveData(openaiItems=[ITEM], model=MAKER, coversSplitTurn=True),
    )

    messages = render_context(context_of(entry), None, "openai-responses", entry, MAKER)["messages"]

    assert messages[0] == ITEM
    assert messages[1] == {"role": "user", "content": "Now make the totals round half-even."}


def test_other_formats_and_other_summarizers_use_the_readable_summary() -> None:
    native = compaction("## Goal\n- Round totals")
    plain = compaction("## Goal\n- Round totals", preserve=None)

    anthropic = render_context(context_of(native), None, "anthropic", native)["messages"]
    neutral = render_context(context_of(native), None, "neutral", native)["messages"]
    chat = render_context(context_of(native), None, "openai", native)["messages"]
    responses_plain = render_context(context_of(plain), None, "openai-responses", plain, MAKER)["messages"]

    readable = COMPACTION_PREAMBLE + "## Goal\n- Round totals" + HISTORY_TOOLS_LINE
    assert anthropic[0]["content"][0]["text"].startswith(readable)
    assert neutral[0]["content"] == readable
    assert chat[0] == {"role": "user", "content": readable}, "Chat Completions takes no item"
    assert responses_plain[0] == {"role": "user", "content": readable}


def test_the_opaque_state_stays_out_of_reprs() -> None:
    entry = compaction("## Goal\n- Round totals")

    assert "secret-state" not in repr(entry) and "secret-state" not in str(entry)
    assert entry.model_dump(exclude_none=True)["preserveData"] == {
        "openaiItems": [KEPT, ITEM],
        "model": MAKER,
    }, "but it is stored"


def test_another_model_gets_the_readable_summary() -> None:
    entry = compaction("## Goal\n- Round totals")

    for model in ("gpt-5.4-mini", "claude-sonnet-4-6", None):
        messages = render_context(context_of(entry), None, "openai-responses", entry, model)["messages"]
        assert messages[0] == {"role": "user", "content": COMPACTION_PREAMBLE + "## Goal\n- Round totals" + HISTORY_TOOLS_LINE}
        assert "gAAAA" not in json.dumps(messages), f"no encrypted state for {model}"


def test_an_entry_written_with_the_item_alone_still_loads_and_replays_to_its_author() -> None:
    stored = compaction("## Goal\n- Round totals").model_dump(exclude_none=True)
    stored["preserveData"] = {"openaiItem": ITEM}

    entry = CompactionEntry.model_validate(stored)

    assert entry.preserveData == PreserveData(openaiItems=[ITEM])
    assert entry.provider_state() == PreserveData(openaiItems=[ITEM], model=MAKER), (
        "what the next compaction builds on names its maker too"
    )
    assert render_context(context_of(entry), None, "openai-responses", entry, MAKER)["messages"][0] == ITEM, (
        "the compaction's summarizer model made it"
    )
