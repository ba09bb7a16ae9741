"""A summary holding the key the daemon read is redacted before it is stored and sent, in
every form the issue found passing: upper case, hex, lower-case URL escapes of `+ / =`
(issue 23, item 11). Over stdio and over the shared daemon's socket."""

from __future__ import annotations

from typing import Any

from contextd_client.rpc import ContextdError

from tests.e2e.storage import daemons as daemons  # noqa: F401 - the fixture
from tests.factories import coding_turn

KEY = "sk-ant-api03-Qv7+Zk/9Lw2=Tn4Xm8Rb"
FORMS = {
    "plain": KEY,
    "upper case": KEY.upper(),
    "hex": KEY.encode().hex(),
    "lower-case escapes": KEY.replace("+", "%2b").replace("/", "%2f").replace("=", "%3d"),
}
SUMMARIZER_FAILED = -32006


async def test_a_summary_is_redacted_before_it_is_stored_and_sent(daemons, tmp_path, monkeypatch):
    settings = {
        "compaction": {"reserveTokens": 2_000, "keepRecentTokens": 3_000},
        # a provider that cannot be reached: the daemon reads the key, then fails
        "summarizer": {"provider": "anthropic", "baseUrl": "http://127.0.0.1:9", "apiKeyEnv": "TEST_KEY", "maxRetries": 0},
    }
    daemons.env["TEST_KEY"] = KEY
    leaked_summary = "Where things stand. " + " ".join(f"{name}: {form}." for name, form in FORMS.items())

    calls: list[dict[str, Any]] = []

    async def before_compact(params: dict[str, Any]) -> dict[str, Any] | None:
        """The first compaction goes to the provider; the second takes this summary."""
        calls.append(params)
        return {"summary": leaked_summary} if len(calls) > 1 else None

    data, project = tmp_path / "data", tmp_path / "project"
    client = await daemons.start(data, project, settings, before_compact=before_compact)
    session = (await client.session_open(name="with a key around"))["sessionId"]
    await client.append(session, [message for turn in range(8) for message in coding_turn(turn)])
    try:
        await client.compact(session)  # the provider fails: the key was read
    except ContextdError as error:
        assert error.code == SUMMARIZER_FAILED and KEY not in error.message
    else:
        raise AssertionError("the unreachable provider should have failed")

    result = await client.compact(session)  # the client's hook supplies the summary
    stored = "".join(path.read_text() for path in data.glob("workspaces/*/sessions/*.jsonl"))
    assert "[redacted]" in result["summary"] and "[redacted]" in stored
    for text in (result["summary"], result["shortSummary"] or "", stored):
        for name, form in FORMS.items():
            for start in range(len(form) - 8):
                fragment = form[start : start + 8].lower()
                assert fragment not in text.lower(), f"{name} form leaked: {fragment!r}"
    assert "Where things stand." in result["summary"]
