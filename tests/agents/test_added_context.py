"""What the hook adds after an agent's compaction: contextd's facts the agent's summary
lacks, most important first, within the budget."""

from __future__ import annotations

from contextd_client.agents.added_context import HEADER, added_context, holds_almost_nothing, tokens

OURS = """## Goal
- Fix the flaky parser test

## User Messages (newest first)
- "keep the public API unchanged"

## Constraints & Preferences
- Never edit files under vendor/.
- Keep the public API unchanged.

## Progress

### Done
- [x] `make lint` passed

### Blocked
```
`pytest tests/test_parser.py` failed: AssertionError: 41 != 42
```

<modified-files>
src/parser.py
</modified-files>
"""


def test_adds_what_the_agents_summary_lacks() -> None:
    added = added_context(OURS, "The user wants the parser test fixed. Keep the public API unchanged.")
    assert added.startswith(HEADER)
    assert "Never edit files under vendor/." in added
    assert "`pytest tests/test_parser.py` failed: AssertionError: 41 != 42" in added
    assert "src/parser.py" in added
    assert "- Keep the public API unchanged." not in added  # the agent's summary says it


def test_nothing_to_add_when_the_summary_says_it_all() -> None:
    assert added_context(OURS, OURS) == ""


def test_stays_within_the_budget_keeping_the_most_important_first() -> None:
    many = OURS.replace("- Never edit files under vendor/.", "\n".join(f"- Constraint number {i} about module_{i}." for i in range(300)))
    added = added_context(many, "", max_tokens=400)
    assert tokens(added) <= 400 and "Constraint number 0 " in added and "Constraint number 299" not in added


def test_files_read_are_a_part_of_their_own_after_the_others() -> None:
    summary = OURS.replace("<modified-files>", "<read-files>\ndocs/notes.md\n</read-files>\n\n<modified-files>")
    added = added_context(summary, "")
    assert added.index("### Files read\n- docs/notes.md") > added.index("### Files modified\n- src/parser.py")
    assert "<read-files>" not in added


def test_what_two_parts_hold_is_given_once() -> None:
    summary = OURS.replace('- "keep the public API unchanged"', '- "Never edit files under vendor/"')
    added = added_context(summary, "")
    assert added.count("Never edit files under vendor/") == 1
    assert "### Standing constraints and preferences (the user's words)\n- Never edit files under vendor/." in added


def test_a_long_pasted_message_is_cut_a_constraint_never() -> None:
    log = " ".join(f"line{i} of the pasted console log" for i in range(400))
    constraint = "Never edit vendor/ " + " ".join(f"rule{i}" for i in range(300))
    summary = OURS.replace('- "keep the public API unchanged"', f'- "{log}"').replace("- Never edit files under vendor/.", f"- {constraint}")
    added = added_context(summary, "", max_tokens=4000)
    assert constraint in added
    assert "line0 of the pasted console log" in added and "line399" not in added and "[…]" in added


def test_one_long_list_does_not_crowd_out_the_other_parts() -> None:
    commands = "\n".join(f"- `make target{i}` ok" for i in range(300))
    summary = OURS.replace("## Progress", f"## Commands (latest run)\n{commands}\n\n## Progress")
    added = added_context(summary, "", max_tokens=400)
    assert tokens(added) <= 400
    assert "`make target0` ok" in added and "`make target299` ok" not in added
    assert "src/parser.py" in added and "`pytest tests/test_parser.py` failed" in added


def test_the_agents_latest_replies_newest_first_reasoning_included() -> None:
    entries = [
        {"role": "user", "tool": None, "text": "which Node do we need?"},
        {"role": "assistant", "tool": None, "text": "We need Node 20; asdf can pin it."},
        {"role": "assistant", "tool": "shell", "text": 'shell {"command": "node -v"}'},
        {"role": "toolResult", "tool": "shell", "text": "v18.15.0"},
        {"role": "assistant", "tool": None, "text": "**Advising on Node**\n\nSuggest nvm or Volta.\nUpgrade Node to 20+."},
    ]
    added = added_context(OURS, "", span_entries=entries)
    replies = added.split("### The agent's latest replies that ended a turn (its reasoning first)\n", 1)[1]
    assert replies.index("**Advising on Node** Suggest nvm or Volta. Upgrade Node to 20+.") < replies.index("asdf can pin it")
    assert "node -v" not in added and "v18.15.0" not in added  # a call, a tool's output


def test_file_lists_put_the_files_the_agents_calls_name_most_first() -> None:
    files = "\n".join(f"src/module_{i}.py" for i in range(40))
    summary = OURS.replace("<modified-files>", f"<read-files>\n{files}\n</read-files>\n\n<modified-files>")
    entries = [{"role": "assistant", "tool": "shell", "text": f"shell sed -n 1,80p src/module_39.py (look {i})"} for i in range(5)]
    added = added_context(summary, "", max_tokens=400, span_entries=entries)
    assert "### Files read\n- src/module_39.py\n- src/module_0.py" in added
    assert "src/module_38.py" not in added  # the budget ends the list, not the most used file


def test_absolute_paths_shortened_to_the_agents_own_relative_form() -> None:
    summary = OURS.replace("src/parser.py\n</modified-files>", "/home/me/app/src/parser.py\n/home/me/app/src/lexer.py\n</modified-files>")
    summary = summary.replace("<modified-files>", "<read-files>\nsrc/parser.py\n</read-files>\n\n<modified-files>")
    added = added_context(summary, "")
    assert "(a file path not starting with / is under /home/me/app/)" in added
    assert "### Files modified\n- src/parser.py\n- src/lexer.py" in added and "/home/me/app/src/" not in added.split("\n", 1)[1]


def test_what_the_earlier_compaction_folded_comes_when_its_own_summary_holds_nothing() -> None:
    earlier = OURS.replace("src/parser.py", "src/queries.ts").replace("41 != 42", "Node >=20.9.0 is required")
    added = added_context(OURS, "", earlier_span=earlier)
    part = added.split("### From before the agent's earlier compaction, whose summary holds almost nothing\n", 1)[1]
    assert "Node >=20.9.0 is required" in part and "src/queries.ts" in part
    assert "Never edit files under vendor/" not in part  # the newer span's parts hold it already
    assert holds_almost_nothing("Codex compacted the conversation here; its summary is stored encrypted.")
    assert not holds_almost_nothing(OURS * 3)
