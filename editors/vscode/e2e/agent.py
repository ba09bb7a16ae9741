"""The test's script agent, attached to the same shared daemon as the VS Code window (same
XDG_RUNTIME_DIR and data dir) through the Python client, the way a script run from a
terminal attaches.

  agent.py DATA_DIR WORKSPACE drive NAME   drives a new session NAME of the workspace: prints
                                           its id and the figure of its last append
  agent.py DATA_DIR WORKSPACE mirror AGENT prints the id and figure of the workspace's
                                           mirror of AGENT's session (e.g. claude-code)
  agent.py DATA_DIR WORKSPACE fill ID      fills session ID past 95% of its window, the
                                           threshold crossed by one last append (so its
                                           automatic compaction runs once)

Each prints one JSON object: {"sessionId", "usage"}, a mirror also its "name" and "source".
"""

from __future__ import annotations

import json
import sys

from contextd_client import SyncContextdClient


def drive(client: SyncContextdClient, workspace: str, name: str) -> dict:
    session_id = client.session_open(workspace=workspace, name=name)["sessionId"]
    client.append(session_id, [{"role": "user", "content": "Run the nightly checks. " * 30}])
    result = client.append(
        session_id,
        [{"role": "assistant", "content": [{"type": "text", "text": "All checks pass. " * 80}], "stopReason": "stop"}],
    )
    return {"sessionId": session_id, "usage": result["usage"]}


def mirror(client: SyncContextdClient, workspace: str, agent: str) -> dict:
    rows = client.session_list(workspace=workspace)["sessions"]
    row = next(row for row in rows if (row.get("source") or {}).get("agent") == agent)
    usage = client.state(row["sessionId"])["usage"]
    return {"sessionId": row["sessionId"], "name": row.get("name"), "source": row["source"], "usage": usage}


def fill(client: SyncContextdClient, workspace: str, session_id: str) -> dict:
    before = client.state(session_id)["usage"]["tokens"]
    # A first, small append says what a word costs; the second takes the figure to ~97.5%.
    probe = client.append(session_id, [{"role": "user", "content": checks(400)}])["usage"]
    per_word = (probe["tokens"] - before) / 400
    words = int((0.975 * probe["contextWindow"] - probe["tokens"]) / per_word)
    # As turns, so that a compaction has older ones to fold (it keeps the recent ones whole).
    turns = [
        {"role": "user", "content": checks(words // 20)} if turn % 2 == 0
        else {"role": "assistant", "content": [{"type": "text", "text": checks(words // 20)}], "stopReason": "stop"}
        for turn in range(20)
    ]
    result = client.append(session_id, turns)
    return {"sessionId": session_id, "usage": result["usage"]}


def checks(words: int) -> str:
    """A check log of `words` words, varied like a real one (repeated text tokenizes unlike it)."""
    return " ".join(f"check{index % 97}" if index % 2 else "passed" for index in range(words))


def main(data_dir: str, workspace: str, mode: str, argument: str) -> None:
    with SyncContextdClient.spawn(data_dir=data_dir, workspace=workspace, shared=True) as client:
        action = {"drive": drive, "mirror": mirror, "fill": fill}[mode]
        print(json.dumps(action(client, workspace, argument)))


if __name__ == "__main__":
    main(*sys.argv[1:5])
