"""The shipped prompts and the requests built from them."""

from __future__ import annotations

import pytest
from contextd.compaction.prompts import load_prompt
from contextd.compaction.request import build_request, max_summary_tokens
from contextd.model import FileDetails, UserMessage

CHECKPOINT_SECTIONS = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
]


@pytest.mark.parametrize("name", ["compaction", "update", "branch"])
def test_checkpoint_prompts_ask_for_every_section_in_order(name):
    text = load_prompt(name)
    positions = [text.index(section) for section in CHECKPOINT_SECTIONS]
    assert positions == sorted(positions)
    assert "{" not in text  # every slot was filled


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
