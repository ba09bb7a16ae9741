"""`contextd sessions --stats`: each session's compression statistics, as a table and as
JSON, checked against figures the test works out itself from the session's tree, context
and file (a real Codex rollout with its own compactions plus one of ours, and a session
that pruned)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from contextd_client import ContextdClient

from tests.cli.commands import run, run_json
from tests.corpus import read_text
from tests.client.helpers import long_conversation, user

MESSAGE_KINDS = {"message", "compaction", "branch_summary", "handoff"}
"""The node types the model reads as messages: what the branch's history is made of."""


async def expected_stats(client: ContextdClient, session_id: str) -> dict[str, Any]:
    """The statistics, worked out from the tree (node tokens, compaction figures), the
    context the model gets, the session's figure and the prune lines of the session file."""
    tree = await client.tree(session_id)
    state = await client.state(session_id)
    context = await client.context(session_id)
    nodes = {node["id"]: node for node in tree["nodes"]}
    path: list[dict[str, Any]] = []
    node_id = tree["leafId"]
    while node_id is not None:
        path.insert(0, nodes[node_id])
        node_id = nodes[node_id]["parentId"]
    history = [node for node in path if node["type"] in MESSAGE_KINDS]
    compactions = [node for node in path if node["type"] == "compaction"]
    on_path = {node["id"] for node in path}
    lines = [json.loads(line) for line in Path(state["path"]).read_text().splitlines()[1:]]
    prunes = [line for line in lines if line["type"] == "prune" and line["id"] in on_path]
    history_tokens = sum(node["tokens"] for node in history)
    return {
        "sessionId": session_id,
        "treeNodes": len(nodes),
        "history": {"entries": len(history), "tokens": history_tokens},
        "context": {
            "entries": sum(1 for message in context["messages"] if message["role"] != "system"),
            "tokens": state["usage"]["tokens"],
        },
        "compactions": {
            "count": len(compactions),
            "tokensSaved": sum(max(0, c["tokensBefore"] - c["tokensAfter"]) for c in compactions),
            "summaryTokens": compactions[-1]["tokens"] if compactions else 0,
        },
        "prunes": {"count": len(prunes), "tokensSaved": sum(p["tokensSaved"] for p in prunes)},
        "ratio": round(state["usage"]["tokens"] / history_tokens, 4),
        "breakdown": state["usage"]["breakdown"],
    }


def import_real_rollout(data_dir: Path, tmp_path: Path) -> str:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(read_text("codex-knearme-compacted.jsonl.gz"), encoding="utf-8")
    imported = run_json(data_dir, "import", str(rollout), "--from", "codex", "--name", "knearme")
    compacted = run(data_dir, "compact", imported["sessionId"])
    assert compacted.returncode == 0, compacted.stderr
    return str(imported["sessionId"])


async def pruned_session(data_dir: Path, tmp_path: Path) -> str:
    """Tool output over the threshold: the daemon prunes it, then we compact once."""
    settings = {
        "defaultModel": "gpt-4o",
        "pruning": {"protectTokens": 1_500, "minimumSavings": 1_000},
        "compaction": {"keepRecentTokens": 2_000},
    }
    async with await ContextdClient.spawn(data_dir=data_dir, settings=settings, workspace=tmp_path) as client:
        session_id = (await client.session_open(workspace=tmp_path, name="pruned"))["sessionId"]
        appended = await client.append(session_id, long_conversation(6))
        await client.change_settings({**settings, "compaction": {**settings["compaction"],
                                                                 "thresholdTokens": appended["usage"]["tokens"]}})
        await client.append(session_id, [user("What is left to do?")])
        tree = await client.tree(session_id)
        assert [node["type"] for node in tree["nodes"]].count("prune") == 1
        await client.compact(session_id)
    return session_id


async def test_sessions_stats_match_figures_worked_out_from_each_session(data_dir: Path, tmp_path: Path) -> None:
    real = await asyncio.to_thread(import_real_rollout, data_dir, tmp_path)
    pruned = await pruned_session(data_dir, tmp_path)
    async with await ContextdClient.spawn(data_dir=data_dir) as client:
        expected = {session: await expected_stats(client, session) for session in (real, pruned)}
    assert expected[real]["compactions"]["count"] >= 2  # the rollout's own compaction and ours
    assert expected[pruned]["prunes"]["count"] == 1 and expected[pruned]["prunes"]["tokensSaved"] > 1_000

    listed = await asyncio.to_thread(run_json, data_dir, "sessions", "--stats")
    rows = {row["sessionId"]: row for row in listed["sessions"]}
    assert set(rows) == {real, pruned}
    for session, figures in expected.items():
        assert rows[session]["stats"] == figures
    assert rows[real]["name"] == "knearme" and rows[real]["entries"] == expected[real]["treeNodes"]

    # For people: one row per session with the same figures, while another daemon holds one
    # of them: that row has no figures and says why, the others are still shown.
    async with await ContextdClient.spawn(data_dir=data_dir) as holder:
        await holder.session_open(session_id=pruned)
        done = await asyncio.to_thread(run, data_dir, "sessions", "--stats")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["SESSION", "NAME", "ENTRIES", "TOKENS", "COMPACTIONS", "SAVED", "PRUNES",
                                "PRUNED", "SUMMARY", "RATIO"]
    real_row = next(line for line in lines if line.startswith(real))
    figures = expected[real]
    for cell in (
        f"{figures['context']['entries']} / {figures['history']['entries']}",
        f"{figures['context']['tokens']:,} / {figures['history']['tokens']:,}",
        f"{figures['compactions']['tokensSaved']:,}",
        f"{figures['compactions']['summaryTokens']:,}",
        f"{figures['ratio']:.3f}",
    ):
        assert cell in real_row
    parts = figures["breakdown"]
    assert sum(parts.values()) == figures["context"]["tokens"]
    assert f"{real}  instructions {parts['instructions']:,} · summary {parts['summary']:,} · " \
        f"messages {parts['messages']:,} · unseen {parts['unseen']:,}" in lines
    assert parts["unseen"] > 0  # the rollout's reports taught what Codex sends unseen
    held_row = next(line for line in lines if line.startswith(pruned))
    assert held_row.split()[2:] == ["-"] * 8
    assert f"{pruned}: no statistics" in done.stderr and "-32003" in done.stderr


def test_sessions_stats_on_an_empty_data_dir(data_dir: Path) -> None:
    done = run(data_dir, "sessions", "--stats")
    assert done.returncode == 0 and done.stdout.strip() == "No sessions."
    assert run_json(data_dir, "sessions", "list", "--stats") == {"sessions": []}
