"""Human output of the CLI: the usage bar, event lines, tables and the session tree.

Pure functions from the daemon's results to text, so the commands only decide what to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from contextd_client import types as t

BAR_WIDTH = 40
FULL, EMPTY, THRESHOLD_MARK = "█", "░", "│"


def tokens(value: int) -> str:
    return f"{value:,}"


def usage_bar(usage: t.TokenUsage | dict[str, Any], width: int = BAR_WIDTH) -> str:
    """`[█████░░░│░░] 42.0%  84,000 / 200,000 tokens (compacts at 170,000, counted)`."""
    window = max(int(usage["contextWindow"]), 1)
    filled = min(width, round(width * usage["tokens"] / window))
    mark = min(width - 1, round(width * usage["thresholdTokens"] / window))
    cells = [FULL if index < filled else EMPTY for index in range(width)]
    if mark >= filled:
        cells[mark] = THRESHOLD_MARK
    return (
        f"[{''.join(cells)}] {usage['percent']:5.1f}%  "
        f"{tokens(usage['tokens'])} / {tokens(window)} tokens "
        f"(compacts at {tokens(usage['thresholdTokens'])}, {usage['source']})"
    )


def compaction_started(params: t.CompactionStarted | dict[str, Any]) -> str:
    return f"⟳ compacting ({params['reason']}) at {tokens(params['tokensBefore'])} tokens…"


def compaction_finished(params: t.CompactionFinished | dict[str, Any]) -> str:
    outcome = params["outcome"]
    if outcome == "compacted":
        return (
            f"✓ compacted ({params['reason']}): {tokens(params['tokensBefore'])} → "
            f"{tokens(params.get('tokensAfter', 0))} tokens"
        )
    retry = ", will retry" if params.get("willRetry") else ""
    error = f": {params['error']}" if params.get("error") else ""
    return f"✗ compaction {outcome} ({params['reason']}){error}{retry}"


def notification_line(method: str, params: dict[str, Any], at: datetime) -> str:
    """One line per notification for `contextd watch`."""
    name = method.removeprefix("contextd/")
    session = str(params.get("sessionId", ""))
    if method == t.TOKEN_USAGE:
        detail = usage_bar(params, width=20)
    elif method == t.COMPACTION_STARTED:
        detail = compaction_started(params)
    elif method == t.COMPACTION_FINISHED:
        detail = compaction_finished(params)
    elif method == t.SESSION_CHANGED:
        detail = f"leaf {params.get('leafId')} ({params.get('cause')})"
    elif method == t.IDLE_TIMER:
        due = f" due {params['dueAt']}" if params.get("dueAt") else ""
        detail = f"idle timer {params.get('state')}{due}"
    else:
        detail = str(params)
    return f"{at:%H:%M:%S.%f}"[:-3] + f"  {session}  {name:<20} {detail}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(header), *(len(row[i]) for row in rows)) for i, header in enumerate(headers)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(headers, widths)).rstrip()]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return "\n".join(lines)


def sessions_table(sessions: Sequence[t.SessionSummary]) -> str:
    if not sessions:
        return "No sessions."
    rows = [
        [
            session["sessionId"],
            session.get("name") or "",
            str(session["entries"]),
            tokens(session["tokens"]),
            session["updatedAt"][:19].replace("T", " "),
            session["workspace"],
        ]
        for session in sessions
    ]
    return table(["SESSION", "NAME", "ENTRIES", "TOKENS", "UPDATED", "WORKSPACE"], rows)


def node_title(node: t.TreeNode, id_width: int = 0) -> str:
    kind = node.get("role") or node["type"]
    label = f" [{node['label']}]" if node.get("label") else ""
    preview = " ".join(node.get("preview", "").split())
    if len(preview) > 60:
        preview = preview[:59] + "…"
    return f"{node['id']:<{id_width}}  {kind:<14} {tokens(node['tokens']):>7}  {preview}{label}"


def tree_lines(result: t.TreeResult) -> list[str]:
    """The tree as text: a straight line of history stays flat; a fork indents its branches."""
    nodes = {node["id"]: node for node in result["nodes"]}
    roots = [node["id"] for node in result["nodes"] if node["parentId"] not in nodes]
    leaf = result.get("leafId")
    on_leaf_path = _path_ids(nodes, leaf)
    id_width = max((len(node_id) for node_id in nodes), default=0)
    lines: list[str] = []

    def walk(node_id: str, indent: str, glyph: str) -> None:
        continuation = {"├─": "│ ", "└─": "  ", "": ""}[glyph]
        lead = glyph
        while True:
            marker = "  ← leaf" if node_id == leaf else ""
            dot = "●" if node_id in on_leaf_path else "○"
            lines.append(f"{indent}{lead}{dot} {node_title(nodes[node_id], id_width)}{marker}")
            lead = continuation
            children = [child for child in nodes[node_id].get("children", []) if child in nodes]
            if len(children) != 1:
                break
            node_id = children[0]
        for index, child in enumerate(children):
            walk(child, indent + continuation, "└─" if index == len(children) - 1 else "├─")

    for root in roots:
        walk(root, "", "")
    return lines


def _path_ids(nodes: dict[str, t.TreeNode], leaf: str | None) -> set[str]:
    path: set[str] = set()
    while leaf is not None and leaf in nodes and leaf not in path:
        path.add(leaf)
        leaf = nodes[leaf]["parentId"]
    return path
