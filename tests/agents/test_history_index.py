"""The FTS5 history index: what a search finds is exactly what holds the word, however the
entries arrived (in one sync or many), and a damaged index is made again."""

from __future__ import annotations

from pathlib import Path

from contextd.history import HistoryIndex, IndexWriter, match_expression
from contextd.model import MessageEntry, UserMessage
from hypothesis import given, settings
from hypothesis import strategies as st

WORDS = ["alpha7", "bravo7", "charlie7", "delta7", "echo7", "foxtrot7"]


def entries_of(texts: list[list[str]]) -> dict[str, MessageEntry]:
    """Entries by id in written order, as a session's tree holds them."""
    return {
        f"e{i}": MessageEntry(id=f"e{i}", parentId=f"e{i - 1}" if i else None, message=UserMessage(content=" ".join(words)))
        for i, words in enumerate(texts)
    }


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(WORDS), max_size=4), min_size=1, max_size=20),
    chunks=st.lists(st.integers(min_value=1, max_value=20), max_size=5),
    word=st.sampled_from(WORDS),
)
def test_a_search_finds_exactly_the_entries_holding_the_word(
    tmp_path_factory: object, texts: list[list[str]], chunks: list[int], word: str
) -> None:
    directory = Path(tmp_path_factory.mktemp("index"))  # type: ignore[attr-defined]
    index = HistoryIndex(directory)
    entries = entries_of(texts)
    growing: dict[str, MessageEntry] = {}
    for size in chunks:  # appended a few at a time, synced after each
        for entry_id in list(entries)[len(growing) : len(growing) + size]:
            growing[entry_id] = entries[entry_id]
        index.sync("s", "t0", growing)
    index.sync("s", "t0", entries)
    found = {hit.entry_id for hit in index.search("s", word, limit=100)}
    assert found == {entry_id for entry_id, words in zip(entries, texts, strict=True) if word in words}
    index.close()


def test_a_session_imported_again_is_indexed_again(tmp_path: Path) -> None:
    index = HistoryIndex(tmp_path)
    index.sync("s", "t0", entries_of([["alpha7"], ["bravo7"]]))
    index.sync("s", "t1", entries_of([["charlie7"]]))  # same id, another file
    assert [hit.entry_id for hit in index.search("s", "alpha7 charlie7", 10)] == ["e0"]
    assert index.search("s", "alpha7", 10) == []


def test_an_unreadable_index_is_made_again(tmp_path: Path) -> None:
    (tmp_path / "history.sqlite3").write_bytes(b"not a database at all" * 100)
    index = HistoryIndex(tmp_path)
    index.sync("s", "t0", entries_of([["delta7"]]))
    assert [hit.entry_id for hit in index.search("s", "delta7", 10)] == ["e0"]


def test_queries_are_words_never_fts_syntax() -> None:
    assert match_expression('NEAR(a b) "x" OR *') == '"NEAR" OR "a" OR "b" OR "x" OR "OR"'
    assert match_expression("src/app.py") == '"src/app.py"'
    assert match_expression("()*") is None


def test_the_writer_keeps_up_with_a_session_another_thread_appends_to(tmp_path: Path) -> None:
    """The writer reads the newest entries of a dict the appending thread keeps growing:
    every entry ends up indexed once, whatever the moment each pass read it."""
    writer = IndexWriter(HistoryIndex(tmp_path))
    entries: dict[str, MessageEntry] = {}
    ticket = 0
    for number in range(600):
        entries[f"e{number}"] = MessageEntry(
            id=f"e{number}", parentId=f"e{number - 1}" if number else None, message=UserMessage(content=f"word{number}")
        )
        if number % 7 == 0:
            ticket = writer.changed("s", "t0", entries)
    writer.wait(ticket)
    writer.wait(writer.changed("s", "t0", entries))
    for number in (0, 1, 299, 598, 599):
        assert [hit.entry_id for hit in writer.index.search("s", f"word{number}", 10)] == [f"e{number}"]
    writer.deleted("s")
    writer.close()
    assert writer.index.search("s", "word5", 10) == []


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
            st.tuples(st.just("note"), st.none()),
            st.tuples(st.just("reimport"), st.none()),
            st.tuples(st.just("delete"), st.none()),
        ),
        max_size=30,
    ),
    word=st.sampled_from(WORDS),
)
def test_whatever_the_writer_was_told_in_between_the_index_ends_as_the_session_is(
    tmp_path_factory: object, steps: list[tuple[str, list[str] | None]], word: str
) -> None:
    """Appends on this thread while the writer thread writes, notes at any point, a session
    imported again (another file: written anew) or deleted: once it is noted and waited for,
    a search finds exactly the entries the session holds with the word."""
    writer = IndexWriter(HistoryIndex(Path(tmp_path_factory.mktemp("writer"))))  # type: ignore[attr-defined]
    entries: dict[str, MessageEntry] = {}
    texts: dict[str, list[str]] = {}
    created = 0
    for action, words in steps:
        if action == "append":
            assert words is not None
            entry_id = f"e{len(texts)}"
            texts[entry_id] = words
            entries[entry_id] = MessageEntry(id=entry_id, parentId=None, message=UserMessage(content=" ".join(words)))
        elif action == "note":
            writer.changed("s", f"t{created}", entries)
        elif action == "reimport":
            created += 1
            entries, texts = {}, {}
        else:
            writer.deleted("s")
    writer.wait(writer.changed("s", f"t{created}", entries))
    found = {hit.entry_id for hit in writer.index.search("s", word, limit=100)}
    assert found == {entry_id for entry_id, words in texts.items() if word in words}
    writer.close()
    writer.index.close()
