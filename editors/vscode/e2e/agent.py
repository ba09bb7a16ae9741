"""The test's script agent: drives a session of the workspace through the Python client,
attached to the same shared daemon as the VS Code window (same XDG_RUNTIME_DIR and data
dir), the way an agent run from a terminal does. Prints the session id and the figure the
daemon answered the last append with, as one JSON object.

usage: python agent.py DATA_DIR WORKSPACE NAME
"""

from __future__ import annotations

import json
import sys

from contextd_client import SyncContextdClient


def main(data_dir: str, workspace: str, name: str) -> None:
    with SyncContextdClient.spawn(data_dir=data_dir, workspace=workspace, shared=True) as client:
        session_id = client.session_open(workspace=workspace, name=name)["sessionId"]
        client.append(session_id, [{"role": "user", "content": "Run the nightly checks. " * 30}])
        result = client.append(
            session_id,
            [{"role": "assistant", "content": [{"type": "text", "text": "All checks pass. " * 80}], "stopReason": "stop"}],
        )
        print(json.dumps({"sessionId": session_id, "usage": result["usage"]}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
