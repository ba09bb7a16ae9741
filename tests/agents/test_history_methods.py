"""contextd/history/*: the whole history of a session on demand, through a real daemon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from contextd_client import ContextdClient
from contextd_client.rpc import ContextdError

from tests.agents.sessions import compacted_session
from tests.client.helpers import long_conversation, tool_turn, user

INVALID_PARAMS = -32602
ENTRY_NOT_FOUND = -32007


async def test_search_finds_what_a_compaction_folded_away(client: ContextdClient) -> None:
    session, compaction = await compacted_session(client)
    found = await client.request("contextd/history/search", {"sessionId": session, "query": "quokkaline"})
    hit = found["hits"][0]
    assert hit["role"] == "toolResult" and hit["tool"] == "bash"
    assert hit["branch"] == "current" and hit["foldedBy"] == compaction["entryId"]
    assert "[quokkaline]" in hit["snippet"]
    got = await client.request("contextd/history/get", {"sessionId": session, "entryIds": [hit["entryId"]]})
    assert "AssertionError: 41 != 42" in got["entries"][0]["text"]


async def test_search_ranks_the_entry_with_more_of_the_words_first(client: ContextdClient) -> None:
    session = (await client.session_open())["sessionId"]
    await client.append(session, [
        user("the harbour crane is blue"),
        {"role": "assistant", "content": [{"type": "text", "text": "the harbour crane is blue and the harbour crane is tall"}]},
        user("the crane"),
    ])
    found = await client.request("contextd/history/search", {"sessionId": session, "query": "harbour crane", "limit": 2})
    texts = [hit["snippet"] for hit in found["hits"]]
    assert len(texts) == 2 and all("[harbour]" in text for text in texts)


async def test_the_index_takes_entries_as_they_are_appended_and_is_rebuilt_when_missing(
    client: ContextdClient, tmp_path: Path
) -> None:
    session = (await client.session_open())["sessionId"]
    await client.append(session, [user("first words about zebrafish")])
    assert (await client.request("contextd/history/search", {"sessionId": session, "query": "okapi"}))["hits"] == []
    await client.append(session, [{"role": "assistant", "content": [{"type": "text", "text": "an okapi appeared"}]}])
    hits = (await client.request("contextd/history/search", {"sessionId": session, "query": "okapi"}))["hits"]
    assert [hit["role"] for hit in hits] == ["assistant"]
    index = tmp_path / "data" / "history.sqlite3"
    assert index.is_file()
    index.unlink()
    hits = (await client.request("contextd/history/search", {"sessionId": session, "query": "zebrafish okapi"}))["hits"]
    assert {hit["role"] for hit in hits} == {"user", "assistant"}


async def test_an_abandoned_branch_is_searched_and_placed(client: ContextdClient) -> None:
    session = (await client.session_open())["sessionId"]
    first = await client.append(session, [user("start here")])
    await client.append(session, [{"role": "assistant", "content": [{"type": "text", "text": "trying the walrus approach"}]}])
    await client.navigate(session, first["entryIds"][0])
    await client.append(session, [{"role": "assistant", "content": [{"type": "text", "text": "trying another way"}]}])
    hit = (await client.request("contextd/history/search", {"sessionId": session, "query": "walrus"}))["hits"][0]
    assert hit["branch"] == "abandoned"


async def test_get_keeps_to_the_token_budget(client: ContextdClient) -> None:
    session = (await client.session_open())["sessionId"]
    appended = await client.append(session, long_conversation(3))
    read_result = appended["entryIds"][2]
    whole = (await client.request("contextd/history/get", {"sessionId": session, "entryIds": [read_result]}))["entries"][0]
    cut = (await client.request("contextd/history/get", {"sessionId": session, "entryIds": [read_result], "maxTokens": 50}))["entries"][0]
    assert cut["truncated"] and cut["tokens"] <= 50 and whole["text"].startswith(cut["text"].split("\n[…")[0])
    around = await client.request("contextd/history/get", {"sessionId": session, "around": read_result, "maxTokens": 100_000})
    ids = [entry["entryId"] for entry in around["entries"]]
    assert read_result in ids and appended["entryIds"][1] in ids and appended["entryIds"][3] in ids
    assert ids == sorted(ids, key=lambda i: ids.index(i))  # in the order written


async def test_sources_name_the_entries_of_a_summary_item(client: ContextdClient) -> None:
    session, compaction = await compacted_session(client)
    sources = await client.request("contextd/history/sources", {"sessionId": session, "entryId": compaction["entryId"]})
    assert sources["items"] and all(item["entryIds"] for item in sources["items"])
    first = sources["items"][0]
    one = await client.request("contextd/history/sources", {"sessionId": session, "entryId": compaction["entryId"], "item": 0})
    assert one["items"] == [first]


async def test_summarize_a_span_another_agent_chose(client: ContextdClient) -> None:
    session = (await client.session_open())["sessionId"]
    appended = await client.append(session, [
        user("Never touch the vendored folder."),
        *tool_turn("c1", "edit", {"path": "src/app.py", "old": "a", "new": "b"}, "edited"),
        user("Now the docs."),
    ])
    kept = appended["entryIds"][-1]
    span = await client.request("contextd/history/summarize", {"sessionId": session, "firstKeptEntryId": kept})
    assert "Never touch the vendored folder." in span["summary"]
    assert span["firstKeptEntryId"] == kept and kept not in span["summarizeEntryIds"]
    assert span["details"]["modifiedFiles"] == ["src/app.py"]
    whole = await client.request("contextd/history/summarize", {"sessionId": session})
    assert whole["firstKeptEntryId"] is None and kept in whole["summarizeEntryIds"]
    branch = await client.request("contextd/history/summarize", {"sessionId": session, "afterEntryId": appended["entryIds"][0]})
    assert appended["entryIds"][0] not in branch["summarizeEntryIds"] and kept in branch["summarizeEntryIds"]


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("contextd/history/search", {"query": ""}, "query"),
        ("contextd/history/search", {"query": "x", "limit": 0}, "limit"),
        ("contextd/history/get", {"entryIds": ["a"], "around": "a"}, None),
        ("contextd/history/get", {}, None),
        ("contextd/history/get", {"entryIds": ["a"], "maxTokens": 0}, "maxTokens"),
    ],
)
async def test_bad_params_are_refused_naming_the_field(
    client: ContextdClient, method: str, params: dict[str, Any], field: str | None
) -> None:
    session = (await client.session_open())["sessionId"]
    with pytest.raises(ContextdError) as refused:
        await client.request(method, {"sessionId": session, **params})
    assert refused.value.code == INVALID_PARAMS
    if field is not None:
        assert field in str(refused.value.data)


async def test_an_unknown_entry_is_refused(client: ContextdClient) -> None:
    session = (await client.session_open())["sessionId"]
    with pytest.raises(ContextdError) as refused:
        await client.request("contextd/history/get", {"sessionId": session, "entryIds": ["nope"]})
    assert refused.value.code == ENTRY_NOT_FOUND
    hits = await client.request("contextd/history/search", {"sessionId": session, "query": "\"*) OR NEAR(("})
    assert hits["hits"] == []  # FTS syntax in a query is searched as words, never an error
