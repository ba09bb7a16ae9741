"""Provider-native compaction end to end: the daemon (its own, over stdio, through the
Python client) compacts with `openai-native` or `anthropic-native` through the official
SDKs against the local server, stores what the provider returned, replays it in the right
context format (`openai-responses`) to the model that made it, and falls back to the
configured summarizer when the provider fails."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from contextd.compaction.context import COMPACTION_PREAMBLE, HISTORY_TOOLS_LINE
from contextd.importers import save
from contextd_client import ContextdClient, ContextdError

from tests.factories import assistant, coding_turn, result, user
from tests.importers.support import imported, records
from tests.summarizers.fake_provider import (
    OPENAI_COMPACT_PATH,
    FakeProvider,
    Reply,
    fake_encrypted,
)

SECRET = "sk-test-native-0123456789abcdef-never-show-me"
KEY_ENV = "CONTEXTD_TEST_NATIVE_KEY"
BLOCK = "## Goal\n- Fix the bugs in src/module_*.py\n\n## Next Steps\n- Run the tests"


@pytest.fixture
def provider():
    fake = FakeProvider(key=SECRET).start()  # refuses a request without the key, as the APIs do
    yield fake
    fake.stop()


MODEL = "test-model"


def settings_for(name: str, fake: FakeProvider, **summarizer: Any) -> dict[str, Any]:
    model = summarizer.pop("model", MODEL)
    return {
        "defaultModel": model,  # the sessions' model: the one the compaction was made by
        "compaction": {"keepRecentTokens": 3_000},
        "summarizer": {
            "provider": name,
            "model": model,
            "baseUrl": fake.url if name.startswith("anthropic") else fake.openai_url,
            "apiKeyEnv": KEY_ENV,
            "maxRetries": 1,
            "timeoutSeconds": 5,
            **summarizer,
        },
    }


class Run:
    """A daemon of its own with its log (DEBUG) in a file, and every notification it sent."""

    def __init__(self, client: ContextdClient, log: Path) -> None:
        self.client = client
        self.log = log
        self.notifications: list[dict[str, Any]] = []
        client.on(
            None, lambda method, params: self.notifications.append({"method": method, **params})
        )

    async def open(self, session: str) -> None:
        await self.client.session_open(session_id=session)

    async def session_with_history(self, turns: range = range(8)) -> tuple[str, Path]:
        opened = await self.client.session_open()
        await self.add_turns(opened["sessionId"], turns)
        return opened["sessionId"], Path(opened["path"])

    async def add_turns(self, session: str, turns: range) -> None:
        for turn in turns:
            await self.client.append(session, coding_turn(turn))

    def everything_shown(self, *results: Any) -> str:
        """What left the daemon other than the session file: results, notifications, log."""
        return json.dumps([results, self.notifications]) + self.log.read_text()


@pytest_asyncio.fixture
async def start(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    runs: list[Run] = []

    async def begin(settings: dict[str, Any]) -> Run:
        log = tmp_path / f"daemon-{len(runs)}.log"
        with log.open("w") as stderr:
            client = await ContextdClient.spawn(
                data_dir=tmp_path / "data",
                settings=settings,
                workspace=tmp_path,
                log_level="DEBUG",
                stderr=stderr,
                env={**os.environ, KEY_ENV: SECRET},
                shared=False,
            )
        run = Run(client, log)
        runs.append(run)
        return run

    yield begin
    for run in runs:
        await run.client.close()


def long_turn_steps(steps: range) -> list[dict[str, Any]]:
    """Steps of one long turn: a read and its output each, with no new user message."""
    messages: list[dict[str, Any]] = []
    for step in steps:
        body = " ".join(f"step{step}_{n} = load({n})" for n in range(200))
        call = (f"s{step}", "read", {"path": f"lib/part_{step}.py"})
        messages += [
            assistant(f"Reading part {step}.", calls=[call]),
            result(f"s{step}", "read", body),
        ]
    return messages


def compacted_output(sent: Any, summary: str, model: str = MODEL) -> list[dict[str, Any]]:
    """What the fake's `/responses/compact` answered to request `sent`, as contextd keeps it:
    the user messages of its input, then the item."""
    users = [item for item in sent.body["input"] if item.get("role") == "user"]
    kept = [
        {"type": "message", "role": "user", "status": "completed", "content": (
            [{"type": "input_text", "text": item["content"]}] if isinstance(item["content"], str) else item["content"]
        )}
        for item in users
    ]
    return [*kept, compaction_item(summary, model)]


def compaction_lines(path: Path) -> list[dict[str, Any]]:
    return [
        entry
        for entry in map(json.loads, path.read_text().splitlines())
        if entry.get("type") == "compaction"
    ]


async def test_openai_native_stores_its_item_and_replays_it_in_the_openai_format(
    start, provider
) -> None:
    provider.default = Reply.with_summary("first")
    run = await start(settings_for("openai-native", provider))
    session, path = await run.session_with_history()

    compacted = await run.client.compact(session)

    output = compacted_output(provider.requests[0], "first")
    assert compacted["summarizer"] == {"provider": "openai-native", "model": "test-model"}
    assert compacted["summary"].startswith("## Goal"), (
        "a readable checkpoint for people and other formats"
    )
    [stored] = compaction_lines(path)
    assert stored["preserveData"] == {"openaiItems": output, "model": MODEL}
    assert len(output) > 1, "the user messages OpenAI kept are stored with its item"
    assert provider.requests[0].path == OPENAI_COMPACT_PATH

    openai_view = (await run.client.context(session, "openai-responses"))["messages"]
    assert openai_view[: len(output)] == output, "the whole output replayed, as OpenAI's guide says"
    other_model = (await run.client.context(session, "openai-responses", model="gpt-5.4-mini"))["messages"]
    assert other_model[0] == {"role": "user", "content": COMPACTION_PREAMBLE + compacted["summary"] + HISTORY_TOOLS_LINE}, (
        "another model gets the readable summary: OpenAI decrypts the item for its maker only"
    )
    assert all(COMPACTION_PREAMBLE not in json.dumps(message) for message in openai_view)
    calls = {m["call_id"] for m in openai_view if m.get("type") == "function_call"}
    outputs = {m["call_id"] for m in openai_view if m.get("type") == "function_call_output"}
    assert calls == outputs and all(
        "role" not in m or m["role"] in ("user", "assistant") for m in openai_view
    )
    chat_view = (await run.client.context(session, "openai"))["messages"]
    assert chat_view[0] == {"role": "user", "content": COMPACTION_PREAMBLE + compacted["summary"] + HISTORY_TOOLS_LINE}
    anthropic_view = (await run.client.context(session, "anthropic"))["messages"]
    assert anthropic_view[0]["content"][0]["text"] == COMPACTION_PREAMBLE + compacted["summary"] + HISTORY_TOOLS_LINE
    neutral_view = (await run.client.context(session, "neutral"))["messages"]
    assert neutral_view[0]["content"] == COMPACTION_PREAMBLE + compacted["summary"] + HISTORY_TOOLS_LINE
    kept = neutral_view[1:]
    assert len(openai_view) - len(output) >= len([m for m in kept if m["role"] != "assistant"]), (
        "the kept turns follow"
    )

    # The next compaction hands OpenAI its own output first, and keeps the new one.
    await run.add_turns(session, range(8, 14))
    provider.default = Reply.with_summary("second")
    await run.client.compact(session)
    assert provider.requests[-1].body["input"][: len(output)] == output
    second = compacted_output(provider.requests[-1], "second")
    assert (await run.client.context(session, "openai-responses"))["messages"][: len(second)] == second

    shown = run.everything_shown(compacted)
    assert fake_encrypted("first", MODEL) not in shown, "the encrypted state is never logged or sent"
    assert SECRET not in shown and SECRET not in path.read_text()


async def test_anthropic_native_summary_is_the_compaction_block(start, provider) -> None:
    provider.default = Reply.with_summary(BLOCK)
    run = await start(settings_for("anthropic-native", provider))
    session, path = await run.session_with_history()

    compacted = await run.client.compact(session)

    assert compacted["summarizer"] == {"provider": "anthropic-native", "model": "test-model"}
    assert compacted["summary"].startswith(BLOCK)
    sent = provider.requests[-1]
    assert "compact-2026-01-12" in sent.headers["anthropic-beta"]
    assert sent.body["context_management"]["edits"][0]["type"] == "compact_20260112"
    anthropic_view = (await run.client.context(session, "anthropic"))["messages"]
    assert anthropic_view[0]["content"][0]["text"].startswith(COMPACTION_PREAMBLE + BLOCK)
    openai_view = (await run.client.context(session, "openai"))["messages"]
    assert openai_view[0] == {"role": "user", "content": COMPACTION_PREAMBLE + compacted["summary"] + HISTORY_TOOLS_LINE}
    [stored] = compaction_lines(path)
    assert "preserveData" not in stored
    assert SECRET not in run.everything_shown(compacted) + path.read_text()


@pytest.mark.parametrize(
    ("name", "failure", "fallback", "author"),
    [
        (
            "openai-native",
            Reply.error(500, f"upstream exploded for key {SECRET}"),
            ["offline"],
            "offline",
        ),
        (
            "anthropic-native",
            Reply.without_compaction("A plain answer."),
            ["anthropic"],
            "anthropic",
        ),
    ],
    ids=["openai-native-500-to-offline", "anthropic-native-no-block-to-anthropic"],
)
async def test_a_failed_native_compaction_falls_back(
    start, provider, name, failure, fallback, author
) -> None:
    # Each native attempt fails (openai-native: the history's, retried once; anthropic-native:
    # the history's and the split turn's); the fallback's own requests get the default.
    provider.script(failure, failure)
    provider.default = Reply.with_summary("## Goal\n- Fix the bugs (fallback summary)")
    run = await start(settings_for(name, provider, fallback=fallback))
    session, path = await run.session_with_history()

    compacted = await run.client.compact(session)

    assert compacted["summarizer"]["provider"] == author
    assert "## Goal" in compacted["summary"]
    if author != "offline":
        assert "(fallback summary)" in compacted["summary"]
    assert provider.pending == 0, "every native attempt was made"
    [stored] = compaction_lines(path)
    assert "preserveData" not in stored
    openai_view = (await run.client.context(session, "openai"))["messages"]
    assert openai_view[0] == {"role": "user", "content": COMPACTION_PREAMBLE + compacted["summary"] + HISTORY_TOOLS_LINE}
    finished = [n for n in run.notifications if n["method"] == "contextd/compactionFinished"]
    assert finished[-1]["outcome"] == "compacted"
    assert name in run.log.read_text(), "the native failure is logged before the fallback"
    assert SECRET not in run.everything_shown(compacted) + path.read_text()


async def test_openai_native_replays_a_split_turn_after_its_item(start, provider) -> None:
    """A compaction inside one long turn: the item covers the history before the turn, and
    the turn's beginning (summarized offline) follows it, then the kept rest of the turn."""
    provider.default = Reply.with_summary("history")
    run = await start(settings_for("openai-native", provider))
    session, _ = await run.session_with_history(range(4))
    await run.client.append(
        session, [user("Refactor every part under lib/."), *long_turn_steps(range(8))]
    )

    first = await run.client.compact(session)

    assert "## Turn context (split turn)" in first["summary"]
    openai_view = (await run.client.context(session, "openai-responses"))["messages"]
    output = compacted_output(provider.requests[0], "history")
    assert openai_view[: len(output)] == output
    turn = openai_view[len(output)]
    assert turn["role"] == "user"
    assert turn["content"].startswith("## Turn context (split turn)")
    assert "Refactor every part under lib/." in turn["content"]
    assert "<read-files>" not in turn["content"]
    assert openai_view[len(output) + 1]["role"] == "assistant", "then the kept part of the turn"


def compaction_item(summary: str, model: str = MODEL) -> dict[str, Any]:
    return {
        "type": "compaction",
        "id": "cmp_fake_0001",
        "encrypted_content": fake_encrypted(summary, model),
    }


async def history_then_one_growing_turn(run: Run) -> tuple[str, Path]:
    """A session whose first compaction keeps a whole turn (from its user message), which
    then grows: the next compaction has only that turn's beginning to summarize."""
    session, path = await run.session_with_history(range(3))
    huge = " ".join(f"value_{n}" for n in range(1500))  # alone more than keepRecentTokens
    await run.client.append(
        session,
        [
            user("Prepare."),
            assistant(calls=[("p", "read", {"path": "big.txt"})]),
            result("p", "read", huge),
            user("Refactor every part under lib/."),
            assistant("Starting."),
        ],
    )
    first = await run.client.compact(session)
    assert "## Turn context (split turn)" not in first["summary"], "kept from the user message"
    await run.client.append(session, long_turn_steps(range(8)))
    return session, path


async def test_the_beginning_of_one_long_turn_is_compacted_after_the_previous_item(
    start, provider
) -> None:
    provider.default = Reply.with_summary("history")
    run = await start(settings_for("openai-native", provider))
    session, path = await history_then_one_growing_turn(run)
    provider.default = Reply.with_summary("the turn")

    second = await run.client.compact(session)

    assert "## Turn context (split turn)" in second["summary"], "the readable summary has it"
    history = compacted_output(provider.requests[0], "history")
    sent = provider.requests[-1].body["input"]
    assert sent[: len(history)] == history, "OpenAI's own output leads"
    assert sent[len(history)] == {"role": "user", "content": "Refactor every part under lib/."}
    turn = compacted_output(provider.requests[-1], "the turn")
    assert compaction_lines(path)[-1]["preserveData"] == {
        "openaiItems": turn,
        "model": MODEL,
        "coversSplitTurn": True,
    }
    view = (await run.client.context(session, "openai-responses"))["messages"]
    assert view[: len(turn)] == turn
    assert "## Turn context" not in json.dumps(view), "the item holds the turn's beginning"


async def test_when_the_turns_compaction_fails_the_previous_item_stands(start, provider) -> None:
    provider.default = Reply.with_summary("history")
    run = await start(settings_for("openai-native", provider, fallback=["offline"]))
    session, path = await history_then_one_growing_turn(run)
    provider.script(Reply.error(500, "down"), Reply.error(500, "down"))

    second = await run.client.compact(session)

    assert second["summarizer"]["provider"] == "offline"
    assert provider.pending == 0, "the native attempt was made, and retried"
    history = compacted_output(provider.requests[0], "history")
    assert compaction_lines(path)[-1]["preserveData"] == {"openaiItems": history, "model": MODEL}
    view = (await run.client.context(session, "openai-responses"))["messages"]
    assert view[: len(history)] == history
    assert view[len(history)]["content"].startswith("## Turn context (split turn)"), (
        "then our text of the turn"
    )


async def test_the_turns_beginning_after_our_own_summary_stays_offline(start, provider) -> None:
    """OpenAI cannot build on a summary it did not write without losing it from the replay:
    after an offline compaction, the beginning of the turn is summarized offline, no call."""
    offline = settings_for("openai-native", provider)
    offline["summarizer"]["provider"] = "offline"
    run = await start(offline)
    session, path = await history_then_one_growing_turn(run)
    await run.client.change_settings(settings_for("openai-native", provider))

    second = await run.client.compact(session)

    assert second["summarizer"]["provider"] == "openai-native", "the new setting applies"
    assert "## Turn context (split turn)" in second["summary"]
    assert provider.requests == []
    assert all("preserveData" not in line for line in compaction_lines(path))


async def test_a_session_of_one_long_turn_is_compacted_natively(start, provider) -> None:
    provider.default = Reply.with_summary("one turn")
    run = await start(settings_for("openai-native", provider))
    opened = await run.client.session_open()
    session, path = opened["sessionId"], Path(opened["path"])
    await run.client.append(
        session, [user("Refactor every part under lib/."), *long_turn_steps(range(12))]
    )

    compacted = await run.client.compact(session)

    assert "## Turn context (split turn)" in compacted["summary"]
    assert provider.requests[0].body["input"][0] == {
        "role": "user",
        "content": "Refactor every part under lib/.",
    }
    [stored] = compaction_lines(path)
    output = compacted_output(provider.requests[0], "one turn")
    assert stored["preserveData"] == {"openaiItems": output, "model": MODEL, "coversSplitTurn": True}
    view = (await run.client.context(session, "openai-responses"))["messages"]
    assert view[: len(output)] == output and view[len(output)]["role"] == "assistant"


@pytest.mark.parametrize("name", ["openai-native", "anthropic-native"])
async def test_a_failure_without_fallback_changes_nothing_and_shows_no_key(
    start, provider, name
) -> None:
    provider.default = Reply.error(401, f"invalid x-api-key {SECRET}")
    run = await start(settings_for(name, provider))
    session, path = await run.session_with_history()
    before = path.read_bytes()

    with pytest.raises(ContextdError) as failed:
        await run.client.compact(session)

    assert failed.value.code == -32006
    assert f"{name}: HTTP 401" in str(failed.value)
    assert path.read_bytes() == before, "nothing stored on failure"
    finished = [n for n in run.notifications if n["method"] == "contextd/compactionFinished"]
    assert finished[-1]["outcome"] == "failed"
    assert SECRET not in run.everything_shown(str(failed.value)) + path.read_text()


async def test_a_codex_rollouts_own_compaction_is_replayed_and_built_on(
    start, provider, tmp_path
) -> None:
    """A real Codex rollout: its `compacted` record's encrypted item is kept on the imported
    compaction, replayed in the openai format, and leads the next openai-native compaction."""
    name = "codex-knearme-two-compactions.jsonl.gz"
    [*_, codex_item] = [
        item
        for _, raw in records(name)
        if raw.get("type") == "compacted"
        for item in raw["payload"]["replacement_history"]
        if item.get("type") == "compaction"
    ]
    session, path = save(imported(name), tmp_path / "data", workspace=str(tmp_path), name=name)
    provider.default = Reply.with_summary("after codex")
    codex_model = "gpt-5.2-codex"  # the rollout's model: the one that made its item
    run = await start(settings_for("openai-native", provider, model=codex_model))
    await run.open(session)

    openai_view = (await run.client.context(session, "openai-responses"))["messages"]
    assert openai_view[0] == codex_item
    another = (await run.client.context(session, "openai-responses", model="gpt-5.5"))["messages"]
    assert codex_item not in another, "another model cannot read Codex's item"

    await run.add_turns(session, range(8))
    compacted = await run.client.compact(session)

    assert provider.requests[0].body["input"][0] == codex_item
    assert compacted["summarizer"]["provider"] == "openai-native"
    assert compaction_lines(path)[-1]["preserveData"]["openaiItems"][-1][
        "encrypted_content"
    ] == fake_encrypted("after codex", codex_model)


async def test_a_deprecated_model_is_named_in_the_daemons_log_with_its_date(start, provider) -> None:
    settings = settings_for("openai", provider, model="gpt-4.1-mini")
    settings["defaultModel"] = "claude-sonnet-4-5"
    run = await start(settings)

    await run.client.session_open()

    log = run.log.read_text()
    assert "WARNING" in log and "defaultModel 'claude-sonnet-4-5' is deprecated: its vendor shuts it down on 2026-11-30" in log
    assert "summarizer.model 'gpt-4.1-mini' is deprecated: its vendor shuts it down on 2027-01-14" in log
    assert log.count("'gpt-4.1-mini' is deprecated") == 1, "once per model"
