"""Which instructions stand at a leaf: the latest of each source, whatever was compacted."""

from __future__ import annotations

from contextd.compaction.context import (
    instructions_text,
    standing_instructions,
    visible_entries,
)
from contextd.formats import render_context
from contextd.model import (
    CompactionEntry,
    Entry,
    InstructionsEntry,
    MessageEntry,
    SummarizerInfo,
    UserMessage,
)
from contextd.tokens.context_size import context_size
from contextd.tokens.counting import count_entry
from hypothesis import given
from hypothesis import strategies as st

SOURCES = ["AGENTS.md", "environment", "client"]

step = st.one_of(
    st.tuples(st.just("instructions"), st.sampled_from(SOURCES), st.sampled_from(["", "be brief", "use uv", "tabs"])),
    st.tuples(st.just("message"), st.just(""), st.text(min_size=1, max_size=20)),
    st.tuples(st.just("compaction"), st.just(""), st.text(max_size=20)),
)


def build_path(steps: list[tuple[str, str, str]]) -> list[Entry]:
    path: list[Entry] = []
    for index, (kind, source, text) in enumerate(steps):
        parent = path[-1].id if path else None
        entry_id = f"e{index}"
        if kind == "instructions":
            path.append(InstructionsEntry(id=entry_id, parentId=parent, text=text, source=source))
        elif kind == "message":
            path.append(MessageEntry(id=entry_id, parentId=parent, message=UserMessage(content=text)))
        else:
            path.append(
                CompactionEntry(
                    id=entry_id, parentId=parent, summary=text, firstKeptEntryId=parent, tokensBefore=0,
                    tokensAfter=0, reason="manual", summarizer=SummarizerInfo(provider="offline"),
                )
            )
    return path


@given(st.lists(step, max_size=30))
def test_the_latest_text_of_each_source_stands_through_any_compactions(steps: list[tuple[str, str, str]]) -> None:
    path = build_path(steps)
    latest: dict[str, str] = {}
    for kind, source, text in steps:
        if kind == "instructions":
            latest[source] = text
    expected = {source: text for source, text in latest.items() if text}
    standing = standing_instructions(path)
    assert {entry.source: entry.text for entry in standing} == expected
    first_seen = list(dict.fromkeys(source for kind, source, _ in steps if kind == "instructions"))
    assert [entry.source for entry in standing] == [source for source in first_seen if source in expected]
    assert not any(isinstance(entry, InstructionsEntry) for entry in visible_entries(path))
    assert instructions_text(path) == ("\n\n".join(entry.text for entry in standing) or None)


def test_counted_figure_includes_standing_instructions_only() -> None:
    path = build_path([("instructions", "client", "use uv"), ("message", "", "hello"), ("instructions", "AGENTS.md", "tabs")])
    tokens = {entry.id: count_entry(entry, "o200k_base") for entry in path}
    assert tokens["e0"] > 4  # text plus framing
    assert context_size(path, tokens, lambda n: n).tokens == sum(tokens.values())
    withdrawn = build_path([("instructions", "client", "use uv"), ("message", "", "hello"), ("instructions", "client", "")])
    tokens = {entry.id: count_entry(entry, "o200k_base") for entry in withdrawn}
    assert tokens["e2"] == 0
    assert context_size(withdrawn, tokens, lambda n: n).tokens == tokens["e1"]


def test_render_context_puts_the_system_prompt_first_only_in_neutral() -> None:
    messages = [UserMessage(content="hi")]
    assert render_context(messages, None, "neutral") == {"messages": [{"role": "user", "content": "hi"}]}
    neutral = render_context(messages, "be brief", "neutral")
    assert neutral["messages"][0] == {"role": "system", "content": "be brief"} and neutral["system"] == "be brief"
    anthropic = render_context(messages, "be brief", "anthropic")
    assert anthropic == {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "system": "be brief"}
