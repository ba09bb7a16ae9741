"""The shipped prompts and the requests built from them."""

from __future__ import annotations

import pytest
from contextd.compaction.prompts import load_prompt
from contextd.compaction.request import build_request, max_summary_tokens
from contextd.model import FileDetails, UserMessage
from contextd.summarizers.checkpoint import COMMANDS, EARLIER, Layout
from contextd.summarizers.extract import SUMMARY_PREAMBLES
from contextd.summarizers.offline import (
    CHECKPOINT_LAYOUT,
    HANDOFF_LAYOUT,
    TURN_PREFIX_LAYOUT,
)
from contextd.summarizers.user_messages import CONTINUATION_PREFIXES

# A model's summary is asked for the sections the offline summary prints, in its order, but
# for those code writes itself: the artifact trail (commands) is appended to a model's
# answer, and a free-text earlier summary is carried into the sections (see update.md).
WRITTEN_BY_CODE = {COMMANDS, EARLIER}
PROMPT_LAYOUTS = [
    ("compaction", CHECKPOINT_LAYOUT),
    ("update", CHECKPOINT_LAYOUT),
    ("branch", CHECKPOINT_LAYOUT),
    ("handoff", HANDOFF_LAYOUT),
    ("turn_prefix", TURN_PREFIX_LAYOUT),
]


def asked_headings(layout: Layout) -> list[str]:
    return [
        part.heading for part in layout if part.heading and not WRITTEN_BY_CODE & set(part.keys)
    ]


@pytest.mark.parametrize(("name", "layout"), PROMPT_LAYOUTS)
def test_model_prompts_ask_for_the_offline_summarys_sections_in_its_order(name, layout):
    lines = [line.strip() for line in load_prompt(name).splitlines()]
    headings = asked_headings(layout)

    assert [line for line in lines if line in headings] == headings
    assert "{" not in load_prompt(name)  # every slot was filled


def test_a_summary_inside_the_transcript_is_carried_forward_by_every_model_prompt():
    # Handoffs and branch summaries read contexts that open with an earlier summary, and an
    # imported Claude Code session can hold its own continuation summary as a user message.
    system = " ".join(load_prompt("system").split())
    for opening in [*SUMMARY_PREAMBLES, *CONTINUATION_PREFIXES]:
        first_words = " ".join(opening.split()[:5])
        assert first_words in system, opening
    assert "carry its facts forward" in system and "never drop them" in system
    assert "carry its facts forward" in " ".join(load_prompt("update").split())


def test_update_prompt_keeps_what_is_true_and_moves_finished_work_to_done():
    text = load_prompt("update")
    assert "<previous-summary>" in text and "still true" in text
    assert 'from "In Progress" to "Done"' in text


def test_system_prompt_forbids_continuing_the_conversation():
    assert "do not continue the conversation" in load_prompt("system")


def test_request_layout_and_budget():
    request = build_request(
        "compaction",
        [UserMessage(content="hello")],
        template="update",
        max_tokens=max_summary_tokens(16384),
        files=FileDetails(readFiles=["a.py"]),
        previous_summary="## Goal\nold",
    )
    assert request.max_tokens == 13107
    assert request.prompt.startswith(
        "<conversation>\n[User]: hello\n</conversation>\n\n"
        "<previous-summary>\n## Goal\nold\n</previous-summary>\n\n"
    )
    assert request.system_prompt == load_prompt("system")
    assert request.files.readFiles == ["a.py"]
    assert max_summary_tokens(1) == 1
