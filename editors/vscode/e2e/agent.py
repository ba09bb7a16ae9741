"""The test's script agent, attached to the same shared daemon as the VS Code window (same
XDG_RUNTIME_DIR and data dir) through the Python client, the way a script run from a
terminal attaches.

  agent.py DATA_DIR WORKSPACE drive NAME   drives a new session NAME of the workspace: prints
                                           its id and the figure of its last append
  agent.py DATA_DIR WORKSPACE mirror AGENT prints the id and figure of the workspace's
                                           mirror of AGENT's session (e.g. claude-code)

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


def main(data_dir: str, workspace: str, mode: str, argument: str) -> None:
    with SyncContextdClient.spawn(data_dir=data_dir, workspace=workspace, shared=True) as client:
        action = {"drive": drive, "mirror": mirror}[mode]
        print(json.dumps(action(client, workspace, argument)))


if __name__ == "__main__":
    main(*sys.argv[1:5])
