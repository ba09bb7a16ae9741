"""What an autonomous run keeps outside its chat: the briefs it gives sub-agents, what they
report back, and the plan file it works to.

In a run of one request and hundreds of actions the user says little; the design lives in
the prompts the agent writes for its sub-agents (`Task`/`Agent` calls), their reports, and
the plan (a markdown file under `plans/`, or `ExitPlanMode`'s argument). Each is read into
short items the checkpoint keeps: the brief's requirements, the report's specifics, the
plan's goal, rules and exit criteria; and a background task that was killed or failed (its
notification, which Claude Code may only have kept in its queue).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from contextd.model import ToolCall

SUBAGENT_TOOLS = frozenset({"task", "agent", "subagent", "spawn_agent", "delegate_task"})
PLAN_TOOLS = frozenset({"exitplanmode", "exit_plan_mode"})
PLAN_FILE = re.compile(r"(?:^|/)(?:plans?/[^/]+|[\w.-]*plan[\w.-]*)\.md$", re.IGNORECASE)

MAX_BRIEF_ITEMS = 6
MAX_REPORT_ITEMS = 6
MAX_PLAN_ITEMS = 8
MAX_ITEM_CHARS = 200
REPORT_HEAD_CHARS = 4000
"""A report's specifics come from its beginning, where reports put their summary."""

REQUIREMENT = re.compile(
    r"\b(?:must|never|always|don'?t|do not|only|avoid|keep|preserve|need(?:s|ed)?|requires?|"
    r"required|ensure|without|instead)\b",
    re.IGNORECASE,
)
"""A line of a brief that constrains the sub-agent's work rather than describing it."""
SPECIFIC = re.compile(r"`[^`]{2,}`|(?:^|\s)/[\w.-]+/\S+|\*\*[^*]{3,}\*\*")
"""A report line that names something exactly: code, a path, a bold term."""
_LIST_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.+)$")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$")
GOAL_HEADING = re.compile(r"\b(?:goal|objective|purpose|summary|overview)\b", re.IGNORECASE)
RULE_HEADING = re.compile(r"\b(?:invariants?|constraints?|rules?|must|non-negotiable|requirements?)\b", re.IGNORECASE)
CRITERIA_HEADING = re.compile(
    r"\b(?:verification|success criteria|acceptance|exit criteria|definition of done|done when|"
    r"tests?|checklist|validation)\b",
    re.IGNORECASE,
)


@dataclass
class Plan:
    path: str
    title: str = ""
    goal: str = ""
    rules: list[str] = field(default_factory=list)
    criteria: list[str] = field(default_factory=list)

    def headline(self) -> str:
        said = " — ".join(part for part in (self.title, self.goal) if part)
        return f"Plan `{self.path}`" + (f": {said}" if said else "")


def is_subagent_call(call: ToolCall) -> bool:
    return call.name.lower() in SUBAGENT_TOOLS and isinstance(call.arguments.get("prompt"), str)


def subagent_name(call: ToolCall) -> str:
    kind = call.arguments.get("subagent_type") or call.arguments.get("agent") or ""
    description = call.arguments.get("description") or ""
    return ", ".join(f"{part}" for part in (str(kind), f'"{description}"' if description else "") if part)


def brief(call: ToolCall) -> str:
    """The requirements a sub-agent was given, on one line ("" when the prompt states none)."""
    prompt = str(call.arguments.get("prompt", ""))
    lines = [_item(line) for line in prompt.splitlines()]
    wanted = [line for line in lines if line and REQUIREMENT.search(line)][:MAX_BRIEF_ITEMS]
    if not wanted:
        return ""
    return f"Sub-agent brief ({subagent_name(call)}): " + "; ".join(wanted)


def report(call: ToolCall, text: str) -> str:
    """What a sub-agent reported that names something exactly, on one line."""
    lines = [_item(line) for line in text[:REPORT_HEAD_CHARS].splitlines()]
    found = [line for line in lines if line and SPECIFIC.search(line) and len(line.split()) >= 2]
    if not found:
        return ""
    return f"Sub-agent report ({subagent_name(call)}): " + "; ".join(_unique(found)[:MAX_REPORT_ITEMS])


_NOTIFICATION = re.compile(r"^\s*<task-notification>(.*?)</task-notification>", re.DOTALL)
_TAG = re.compile(r"<(status|summary)>\s*(.*?)\s*</\1>", re.DOTALL)
ENDED_EARLY = frozenset({"killed", "failed"})


def ended_early(text: str) -> str | None:
    """What a background task's or sub-agent's notification reports when the task did not
    finish (`<status>killed</status>`, `failed`): its own one-line summary. Such a task's
    work is undone, which the next session must know; a finished one's report comes back
    as a tool result."""
    notification = _NOTIFICATION.match(text)
    tags = dict(_TAG.findall(notification.group(1))) if notification else {}
    if tags.get("status") not in ENDED_EARLY:
        return None
    return _item(tags.get("summary") or f"A background task ended: {tags['status']}")


def plan_written(call: ToolCall, latest: Plan | None = None) -> Plan | None:
    """The plan a call writes whole (a plan file, or the plan presented for approval, which
    is the latest plan file's text when it names no file)."""
    if call.name.lower() in PLAN_TOOLS and isinstance(call.arguments.get("plan"), str):
        path = call.arguments.get("planFilePath") or (latest.path if latest else "presented for approval")
        return read_plan(str(path), call.arguments["plan"])
    path = next((str(call.arguments[k]) for k in ("file_path", "path") if isinstance(call.arguments.get(k), str)), "")
    content = call.arguments.get("content")
    if path and PLAN_FILE.search(path) and isinstance(content, str):
        return read_plan(path, content)
    return None


def read_plan(path: str, text: str) -> Plan:
    plan = Plan(path)
    heading = ""
    fenced = False
    for line in text.splitlines():
        if line.strip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        if match := _HEADING.match(line):
            heading = match.group(1).strip("*# ")
            if not plan.title and line.startswith("# "):
                plan.title = heading
            continue
        item = _item(line)
        if not item or item.startswith("|"):
            continue
        if GOAL_HEADING.search(heading) and not plan.goal:
            plan.goal = item
        elif RULE_HEADING.search(heading) and _LIST_LINE.match(line) and len(plan.rules) < MAX_PLAN_ITEMS:
            plan.rules.append(item)
        elif CRITERIA_HEADING.search(heading) and _LIST_LINE.match(line) and len(plan.criteria) < MAX_PLAN_ITEMS:
            plan.criteria.append(item)
    return plan


def _item(line: str) -> str:
    text = line.strip()
    if match := _LIST_LINE.match(text):
        text = match.group(1)
    text = text.strip()
    return text if len(text) <= MAX_ITEM_CHARS else text[: MAX_ITEM_CHARS - 1].rstrip() + "…"


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
