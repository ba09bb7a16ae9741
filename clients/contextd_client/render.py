"""Human output of the CLI: the usage bar, event lines, tables and the session tree.

Pure functions from the daemon's results to text, so the commands only decide what to show.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
import json
from typing import Any, cast

from contextd_client import types as t

MAX_BAR_CELLS = 50
MIN_BAR_CELLS = 10
DEFAULT_WIDTH = 80
FULL, EMPTY, THRESHOLD_MARK = "█", "░", "│"


def tokens(value: int) -> str:
    return f"{value:,}"


def usage_figure(usage: t.TokenUsage | dict[str, Any]) -> str:
    """`42.0%  16,800 / 40,000 tokens · threshold 34,000`: the threshold is where the daemon
    compacts (tokenUsage.thresholdTokens)."""
    window = tokens(max(int(usage["contextWindow"]), 1))
    return (
        f"{usage['percent']:5.1f}%  {tokens(usage['tokens']):>{len(window)}} / {window} tokens"
        f" · threshold {tokens(usage['thresholdTokens'])}"
    )


def usage_bar(usage: t.TokenUsage | dict[str, Any], cells: int) -> str:
    """`[█████░░░│░░]`: the fill, and the threshold mark while the fill is below it."""
    window = max(int(usage["contextWindow"]), 1)
    filled = min(cells, round(cells * usage["tokens"] / window))
    mark = min(cells - 1, round(cells * usage["thresholdTokens"] / window))
    glyphs = [FULL if index < filled else EMPTY for index in range(cells)]
    if mark >= filled:
        glyphs[mark] = THRESHOLD_MARK
    return f"[{''.join(glyphs)}]"


def usage_line(usage: t.TokenUsage | dict[str, Any], width: int = DEFAULT_WIDTH) -> str:
    """The bar and the figure in at most `width` columns; too narrow for a bar, the figure."""
    figure = usage_figure(usage)
    cells = min(MAX_BAR_CELLS, width - len(figure) - 3)
    if cells < MIN_BAR_CELLS:
        return figure[:width]
    return f"{usage_bar(usage, cells)} {figure}"


class UsageLine:
    """A rich renderable of the latest usage of `source.last`, drawn at the console's width
    each time it is refreshed (so a resized terminal gets a fitting line)."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        if self.source.last is not None:
            yield Text(usage_line(self.source.last, options.max_width), no_wrap=True, overflow="crop")


def compaction_started(params: t.CompactionStarted) -> str:
    return f"⟳ compacting ({params['reason']}) at {tokens(params['tokensBefore'])} tokens…"


def compaction_finished(params: t.CompactionFinished) -> str:
    outcome = params["outcome"]
    if outcome == "compacted":
        return (
            f"✓ compacted ({params['reason']}): {tokens(params['tokensBefore'])} → "
            f"{tokens(params.get('tokensAfter', 0))} tokens"
        )
    retry = ", will retry" if params.get("willRetry") else ""
    if outcome == "promoted":
        return (
            f"↑ promoted ({params['reason']}): {params.get('previousModel')} → {params.get('model')}, "
            f"window {tokens(params.get('contextWindow', 0))} tokens{retry}"
        )
    error = f": {params['error']}" if params.get("error") else ""
    # A skip is not a failure: nothing was tried, the reason says what the user can do.
    mark = "·" if outcome == "skipped" else "✗"
    return f"{mark} compaction {outcome} ({params['reason']}){error}{retry}"


def idle_timer(timer: t.IdleTimer) -> str:
    due = f" due {timer['dueAt']}" if "dueAt" in timer else ""
    return f"idle timer {timer['state']}{due}"


def notification_line(method: str, params: dict[str, Any], at: datetime) -> str:
    """One line per notification for `contextd watch`."""
    name = method.removeprefix("contextd/")
    session = str(params.get("sessionId", ""))
    if method == t.TOKEN_USAGE:
        detail = f"{usage_bar(params, 20)} {usage_figure(params)}"
    elif method == t.COMPACTION_STARTED:
        detail = compaction_started(cast(t.CompactionStarted, params))
    elif method == t.COMPACTION_FINISHED:
        detail = compaction_finished(cast(t.CompactionFinished, params))
    elif method == t.SESSION_CHANGED:
        detail = f"leaf {params.get('leafId')} ({params.get('cause')})"
    elif method == t.IDLE_TIMER:
        detail = idle_timer(cast(t.IdleTimer, params))
    else:
        detail = str(params)
    return f"{at:%H:%M:%S.%f}"[:-3] + f"  {session}  {name:<20} {detail}"


AGENT_LABELS = {"claude-code": "Claude Code", "codex": "Codex", "pi": "pi"}


def follow_line(
    activity: dict[str, Any], compactions: int, at: datetime, width: int | None = None, ids: Iterable[str] = ()
) -> str:
    """One line per change of a mirrored session for `contextd follow`: when, which agent,
    which session, how full its context is, how often the agent compacted it. With a
    terminal `width`, the session's name is shortened to fit (an unnamed one shows its id's
    unique prefix among `ids`); the figures stay whole."""
    from contextd_client.fit import shorten, unique_prefixes

    usage = activity["usage"]
    agent = AGENT_LABELS.get(str(activity.get("source", {}).get("agent", "")), "")
    session_id = activity["sessionId"]
    figure = f"{tokens(usage['tokens'])}/{tokens(usage['contextWindow'])}"
    counted = f"{compactions} compaction" + ("" if compactions == 1 else "s")
    rest = f"{figure}  {usage['percent']:.1f}%  {counted}"
    lead = f"{at:%H:%M:%S}  {agent:<11}  "
    name = activity.get("name")
    if width is None:
        return f"{lead}{name or session_id}  {rest}"
    label = shorten(name, max(width - len(lead) - len(rest) - 2, 8)) if name else unique_prefixes([*ids, session_id])[session_id]
    return f"{lead}{label}  {rest}"


def follow_point_line(activity: dict[str, Any]) -> str | None:
    """Under a mirror's `follow_line`, where its agent compacts it (its `agentCompaction`),
    aligned with the agent's name; None when the daemon has no point for it."""
    point = activity["usage"].get("agentCompaction")
    if not point:
        return None
    agent = AGENT_LABELS.get(str(activity.get("source", {}).get("agent", "")), "the agent")
    indent = " " * len(f"{datetime.min:%H:%M:%S}  ")
    if point["tokens"] is None:
        return f"{indent}{agent} does not compact it on its own (its auto-compaction is off)"
    return f"{indent}{agent} compacts it at ~{tokens(point['tokens'])} ({point['percent']:g}%)"


def follow_watching(agents: Sequence[str], workspace: str | None, mirrors_elsewhere: int) -> str:
    """What `contextd follow` watches while it has nothing to show yet."""
    named = ", ".join(AGENT_LABELS.get(agent, agent) for agent in agents) or "no agent"
    where = f"of {workspace}" if workspace else "of every folder"
    text = f"Watching the {named} transcripts {where}; none yet (a line comes with each change)."
    if workspace and mirrors_elsewhere:
        text += f" {mirrors_elsewhere} mirror(s) of other folders: contextd follow --all shows them."
    return text


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(header), *(len(row[i]) for row in rows)) for i, header in enumerate(headers)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(headers, widths)).rstrip()]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return "\n".join(lines)


SESSION_COLUMNS = ["SESSION", "NAME", "ENTRIES", "TOKENS", "UPDATED", "WORKSPACE"]


def session_rows(sessions: Sequence[t.SessionSummary]) -> list[list[str]]:
    return [
        [
            session["sessionId"],
            f"(damaged: {session['damaged']})" if "damaged" in session else session.get("name") or "",
            str(session["entries"]),
            tokens(session["tokens"]),
            session["updatedAt"][:19].replace("T", " "),
            session["workspace"],
        ]
        for session in sessions
    ]


def sessions_table(sessions: Sequence[t.SessionSummary]) -> str:
    """Whole cells, for logs and scripts: lines as long as they need."""
    if not sessions:
        return "No sessions."
    return table(SESSION_COLUMNS, session_rows(sessions))


def sessions_fitted(sessions: Sequence[t.SessionSummary], width: int, all_ids: Iterable[str]) -> str:
    """For a terminal of `width` columns: ids as their shortest unique prefix (among
    `all_ids`), figures whole, the name and workspace shortened, and columns left out by
    priority (entries, workspace, update time, name) when even that does not fit."""
    from contextd_client.fit import fit_table, unique_prefixes

    prefixes = unique_prefixes(all_ids)
    rows = [
        [prefixes.get(row[0], row[0]), *row[1:4], session["updatedAt"][5:16].replace("T", " "), row[5]]
        for row, session in zip(session_rows(sessions), sessions, strict=True)
    ]
    return "\n".join(
        fit_table(
            SESSION_COLUMNS, rows, width, text_columns=("NAME", "WORKSPACE"),
            drop_order=("ENTRIES", "WORKSPACE", "UPDATED", "NAME"), right_aligned=("ENTRIES", "TOKENS"),
        )
    )


STATS_COLUMNS = ["SESSION", "NAME", "ENTRIES", "TOKENS", "COMPACTIONS", "SAVED", "PRUNES", "PRUNED", "SUMMARY", "RATIO"]


def stats_table(rows: Sequence[dict[str, Any]], width: int | None = None, all_ids: Iterable[str] = ()) -> str:
    """`sessions --stats` for people: per session, what the model sees now against the whole
    branch (`context / history`), and what compactions and prunes saved; a session without
    statistics (held by another daemon) shows dashes. With a terminal `width`, fitted to it
    (ids as unique prefixes among `all_ids`, columns left out by priority, prose wrapped)."""
    from contextd_client.fit import fit_table, unique_prefixes, wrap

    if not rows:
        return "No sessions."
    prefixes = unique_prefixes(all_ids) if width is not None else {}
    cells = [[prefixes.get(row["sessionId"], row["sessionId"]), row.get("name") or "", *stats_figures(row)] for row in rows]
    legend = (
        "ENTRIES, TOKENS: in the context now / on the whole branch. SAVED, PRUNED: tokens taken out. "
        "SUMMARY: tokens of the summary the model sees. RATIO: context tokens / branch tokens."
    )
    id_cells = max(len(cell[0]) for cell in cells)
    parts = [
        f"{cell[0]:<{id_cells}}  {breakdown_text(row['stats']['breakdown'])}"
        for cell, row in zip(cells, rows, strict=True) if row.get("stats")
    ]
    where = "\n".join(["Where the context's tokens are:", *parts]) if parts else ""
    if width is None:
        return "\n\n".join(filter(None, [table(STATS_COLUMNS, cells), where, legend.replace(" SUMMARY:", "\nSUMMARY:")]))
    lines = fit_table(
        STATS_COLUMNS, cells, width, text_columns=("NAME",),
        drop_order=("PRUNED", "PRUNES", "SUMMARY", "NAME", "SAVED", "ENTRIES", "COMPACTIONS"),
        right_aligned=STATS_COLUMNS[2:],
    )
    return "\n\n".join(filter(None, ["\n".join(lines), wrap_parts(where, width), wrap(legend, width)]))


def stats_figures(row: dict[str, Any]) -> list[str]:
    stats = row.get("stats")
    if stats is None:
        return ["-"] * (len(STATS_COLUMNS) - 2)
    context, history = stats["context"], stats["history"]
    return [
        f"{context['entries']} / {history['entries']}",
        f"{tokens(context['tokens'])} / {tokens(history['tokens'])}",
        str(stats["compactions"]["count"]),
        tokens(stats["compactions"]["tokensSaved"]),
        str(stats["prunes"]["count"]),
        tokens(stats["prunes"]["tokensSaved"]),
        tokens(stats["compactions"]["summaryTokens"]),
        f"{stats['ratio']:.3f}",
    ]


def wrap_parts(text: str, width: int) -> str:
    """Lines of ` · `-separated parts broken between parts, continued with an indent."""
    out = []
    for line in text.splitlines():
        current = ""
        for part in line.split(" · "):
            candidate = f"{current} · {part}" if current else part
            if current and len(candidate) > width:
                out.append(current)
                candidate = "    " + part
            current = candidate
        out.append(current)
    return "\n".join(out)


def breakdown_text(breakdown: t.FigureBreakdown | dict[str, Any]) -> str:
    """The figure's parts on one line, as /context splits a window; `unseen` is what the agent
    sends that contextd never sees (its system prompt, tool schemas), learned from reports."""
    return " · ".join(f"{name} {tokens(value)}" for name, value in dict(breakdown).items())


def figure_lines(usage: t.TokenUsage | dict[str, Any]) -> str:
    """The figure as a user acts on it (`usage_figure`, and how it was had), then its parts;
    a mirror's, then where its agent compacts it."""
    lines = [f"{usage_figure(usage).strip()} ({usage['source']})", breakdown_text(usage["breakdown"])]
    point = usage.get("agentCompaction")
    if point:
        lines.append(agent_compaction_text(point))
    return "\n".join(lines)


def agent_compaction_text(point: t.AgentCompaction | dict[str, Any]) -> str:
    """`agent compacts at ~167,000 (83.5%): <how that was worked out>`."""
    at = point["tokens"]
    if at is None:
        return f"agent does not compact it on its own: {point['basis']}"
    return f"agent compacts at ~{tokens(at)} ({point['percent']:g}%): {point['basis']}"


def node_title(node: t.TreeNode, shown_id: str, id_width: int) -> tuple[str, str]:
    """The line of a node before its preview, and the preview (one line, labels after)."""
    kind = node.get("role") or node["type"]
    label = f" [{node['label']}]" if node.get("label") else ""
    preview = " ".join(node.get("preview", "").split())
    return f"{shown_id:<{id_width}}  {kind:<14} {tokens(node['tokens']):>7}  ", preview + label


TREE_LEGEND = "● the path to the leaf · ◌ on it, folded into a compaction's summary · ○ another branch"


def tree_lines(result: t.TreeResult, width: int | None = None) -> list[str]:
    """The tree as text: a straight line of history stays flat; a fork indents its branches.
    With a terminal `width`, ids are their unique prefixes and previews are shortened to fit."""
    from contextd_client.fit import shorten, unique_prefixes

    nodes = {node["id"]: node for node in result["nodes"]}
    roots = [node["id"] for node in result["nodes"] if node["parentId"] not in nodes]
    leaf = result.get("leafId")
    on_leaf_path = _path_ids(nodes, leaf)
    folded = _folded_ids(nodes, leaf)
    shown_ids = unique_prefixes(nodes) if width is not None else {node_id: node_id for node_id in nodes}
    id_width = max((len(shown) for shown in shown_ids.values()), default=0)
    lines: list[str] = []

    def walk(node_id: str, indent: str, glyph: str) -> None:
        continuation = {"├─": "│ ", "└─": "  ", "": ""}[glyph]
        lead = glyph
        while True:
            marker = "  ← leaf" if node_id == leaf else ""
            dot = "◌" if node_id in folded else "●" if node_id in on_leaf_path else "○"
            head, preview = node_title(nodes[node_id], shown_ids[node_id], id_width)
            head = f"{indent}{lead}{dot} {head}"
            if width is not None:
                preview = shorten(preview, max(width - len(head) - len(marker), 12))
            elif len(preview) > 60:
                preview = preview[:59] + "…"
            lines.append(f"{head}{preview}{marker}")
            lead = continuation
            children = [child for child in nodes[node_id].get("children", []) if child in nodes]
            if len(children) != 1:
                break
            node_id = children[0]
        for index, child in enumerate(children):
            walk(child, indent + continuation, "└─" if index == len(children) - 1 else "├─")

    for root in roots:
        walk(root, "", "")
    from contextd_client.fit import wrap

    legend = wrap(TREE_LEGEND, width) if width is not None else TREE_LEGEND
    return [*lines, "", *legend.splitlines()] if folded else lines


def _folded_ids(nodes: dict[str, t.TreeNode], leaf: str | None) -> set[str]:
    """The entries on the path to the leaf that the newest compaction on it folded away."""
    path: list[str] = []
    while leaf is not None and leaf in nodes and leaf not in path:
        path.append(leaf)
        leaf = nodes[leaf]["parentId"]
    path.reverse()
    for index in range(len(path) - 1, -1, -1):
        node = nodes[path[index]]
        kept = node.get("firstKeptEntryId")
        if node["type"] == "compaction" and kept:
            before = path[: path.index(kept)] if kept in path[:index] else path[:index]
            return set(before)
    return set()


def _path_ids(nodes: dict[str, t.TreeNode], leaf: str | None) -> set[str]:
    path: set[str] = set()
    while leaf is not None and leaf in nodes and leaf not in path:
        path.add(leaf)
        leaf = nodes[leaf]["parentId"]
    return path


def daemon_status(status: dict[str, Any]) -> str:
    """`contextd status`: the daemon, then its clients, then its sessions."""
    lines = [
        (
            f"shared daemon pid {status['pid']} on {status['address']} (data {status['dataDir']}), "
            f"since {status['startedAt']}"
        ),
    ]
    others = [c for c in status["connections"] if c["id"] != status.get("connection")]
    lines.append(f"other clients: {len(others)}")
    for connection in others:
        sessions = ", ".join(connection["sessions"]) or "no session"
        watched = ["every workspace"] if connection.get("allWorkspaces") else []
        watched += connection.get("workspaces", [])
        watching = f"; watching {', '.join(watched)}" if watched else ""
        lines.append(f"  #{connection['id']} {connection['client'] or 'unnamed'}: {sessions}{watching}")
    lines.append(f"sessions: {len(status['sessions'])}")
    for session in status["sessions"]:
        clients = " ".join(f"#{number}" for number in session["connections"]) or "no client"
        lines.append(f"  {session['sessionId']} {session['name'] or ''} {session['tokens']} tokens, {clients}")
    return "\n".join(lines)


def settings_in_force(answer: dict[str, Any]) -> str:
    """`contextd config`: each setting's value, and where it comes from when not built in."""
    from contextd.settings import leaves

    sources = answer["sources"]
    lines = [f"settings for the sessions of {answer['workspace']}:"]
    for key, value in leaves(answer["settings"]).items():
        source = next((where for set_key, where in sources.items() if key == set_key or key.startswith(set_key + ".")), "built in")
        lines.append(f"  {key} = {json.dumps(value)}  ({source})")
    lines.append(f"user file: {answer['userFile']}")
    if answer.get("userFileError"):
        lines.append(f"  error: {answer['userFileError']}")
    return "\n".join(lines)


def markdown_lines(text: str, width: int, indent: int = 0) -> list[str]:
    """Markdown laid out for a terminal of `width` columns by rich: paragraphs and list items
    wrap between words and keep their indent (a plain print breaks words at the edge)."""
    import io

    from rich.console import Console
    from rich.markdown import Markdown
    from rich.padding import Padding

    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, color_system="standard")
    console.print(Padding(Markdown(text), (0, 0, 0, indent)))
    return out.getvalue().rstrip("\n").splitlines()
