"""Sessions for the compaction tests: real entries linked by parentId, built step by step,
and hypothesis strategies that generate them with prunes and repeated compactions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextd.compaction.context import build_context
from contextd.compaction.prepare import (
    CompactionPreparation,
    NothingToCompact,
    assemble_compaction_summary,
    prepare_compaction,
)
from contextd.compaction.prune import PrunePlan, plan_prune
from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    FileDetails,
    MessageEntry,
    ModelChangeEntry,
    PruneEntry,
    PruningSettings,
    SessionInfoEntry,
    Settings,
    SummarizerInfo,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from hypothesis import strategies as st


def estimate_tokens(entry: Entry) -> int:
    """What the session would count, roughly: a token per four characters of the entry."""
    if isinstance(entry, MessageEntry):
        return max(1, len(entry.message.model_dump_json()) // 4)
    if isinstance(entry, CompactionEntry):
        return max(1, len(entry.summary) // 4)
    return 0


@dataclass
class SessionBuilder:
    """A session tree grown the way contextd grows it: each node's parent is the leaf."""

    by_id: dict[str, Entry] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    leaf: str | None = None
    next_number: int = 0

    def _id(self, prefix: str) -> str:
        self.next_number += 1
        return f"{prefix}{self.next_number}"

    def append(self, entry_type: type[Entry], **fields: Any) -> str:
        entry = entry_type(id=self._id("e"), parentId=self.leaf, **fields)  # type: ignore[operator]
        self.by_id[entry.id] = entry
        self.tokens[entry.id] = estimate_tokens(entry)
        self.leaf = entry.id
        return entry.id

    def path(self, leaf: str | None = None) -> list[Entry]:
        """Root -> `leaf` (default: the current leaf)."""
        entries: list[Entry] = []
        current = self.leaf if leaf is None else leaf
        while current is not None:
            entry = self.by_id[current]
            entries.append(entry)
            current = entry.parentId
        return entries[::-1]

    # --- messages ---

    def user(self, text: str) -> str:
        return self.append(MessageEntry, message=UserMessage(content=text))

    def assistant(
        self,
        text: str = "",
        calls: Sequence[tuple[str, dict[str, Any]]] = (),
        *,
        thinking: str = "",
        failed: bool = False,
    ) -> tuple[str, list[str]]:
        """An assistant message; returns its entry id and the ids of its tool calls."""
        content: list[Any] = []
        if thinking:
            content.append(ThinkingContent(thinking=thinking))
        if text:
            content.append(TextContent(text=text))
        call_ids = [self._id("call") for _ in calls]
        content += [
            ToolCall(id=call_id, name=name, arguments=arguments)
            for call_id, (name, arguments) in zip(call_ids, calls, strict=True)
        ]
        stop = "error" if failed else ("toolUse" if calls else "stop")
        message = AssistantMessage(
            content=content, stopReason=stop, errorMessage="boom" if failed else None
        )
        return self.append(MessageEntry, message=message), call_ids

    def result(self, call_id: str, name: str, text: str, *, error: bool = False) -> str:
        message = ToolResultMessage(toolCallId=call_id, toolName=name, content=text, isError=error)
        return self.append(MessageEntry, message=message)

    def tool_step(self, name: str, arguments: dict[str, Any], output: str) -> tuple[str, str]:
        """An assistant message with one tool call, then its result."""
        call_entry, (call_id,) = self.assistant("", [(name, arguments)])
        return call_entry, self.result(call_id, name, output)

    # --- other entries ---

    def model_change(self, model: str = "other-model") -> str:
        return self.append(ModelChangeEntry, model=model)

    def session_info(self, name: str = "renamed") -> str:
        return self.append(SessionInfoEntry, name=name)

    def branch_summary(self, from_id: str, summary: str, details: FileDetails) -> str:
        return self.append(BranchSummaryEntry, fromId=from_id, summary=summary, details=details)

    def apply_prune(self, plan: PrunePlan) -> str:
        return self.append(PruneEntry, entryIds=list(plan.entry_ids), tokensSaved=plan.tokens_saved)

    def apply_compaction(self, preparation: CompactionPreparation, summary: str) -> str:
        """Append the compaction entry the session would write for `preparation`."""
        return self.append(
            CompactionEntry,
            summary=summary,
            firstKeptEntryId=preparation.first_kept_entry_id,
            tokensBefore=preparation.tokens_before,
            tokensAfter=preparation.tokens_kept + len(summary) // 4,
            reason=preparation.reason,
            summarizer=SummarizerInfo(provider="test"),
            details=preparation.files,
        )

    def compact(
        self, settings: Settings, label: str = "summary"
    ) -> CompactionPreparation | NothingToCompact:
        """Prepare a compaction and, if there is one, append it with stand-in summaries."""
        preparation = prepare_compaction(self.path(), self.tokens, settings)
        if isinstance(preparation, CompactionPreparation):
            summary = assemble_compaction_summary(
                preparation,
                history_summary=f"## Goal\n{label}" if preparation.history_request else None,
                turn_prefix_summary="prefix" if preparation.turn_prefix_request else None,
            )
            self.apply_compaction(preparation, summary)
        return preparation


def context_ids(builder: SessionBuilder) -> list[str]:
    return [item.entry_id for item in build_context(builder.path(), builder.tokens)]


def settings_with(keep_recent: int, reserve: int = 4000) -> Settings:
    return Settings.model_validate(
        {"compaction": {"keepRecentTokens": keep_recent, "reserveTokens": reserve}}
    )


# --- hypothesis -------------------------------------------------------------

TOOL_NAMES = ("read", "edit", "bash", "grep", "skill")

words = st.text(alphabet="abcdefghij klmnop\n", min_size=0, max_size=40)
outputs = st.integers(min_value=0, max_value=3000).map(lambda n: "x" * n)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(TOOL_NAMES))
    return name, {"path": f"src/{draw(st.integers(0, 6))}.py"}


step = st.tuples(
    st.lists(tool_calls(), min_size=1, max_size=3),
    st.lists(outputs, min_size=3, max_size=3),
    st.lists(st.booleans(), min_size=3, max_size=3),  # which results are errors
    st.booleans(),  # compact while the calls wait for their results
)

turn = st.tuples(
    words,
    st.lists(step, max_size=4),
    words,
    st.booleans(),  # the final answer failed
)

action = st.one_of(
    turn.map(lambda t: ("turn", t)),
    st.just(("model_change", None)),
    st.just(("session_info", None)),
    st.tuples(st.integers(0, 1500), st.integers(0, 500), st.booleans()).map(lambda p: ("prune", p)),
    st.one_of(st.integers(20, 400), st.integers(1000, 6000)).map(lambda k: ("compact", k)),
)

sessions = st.lists(action, min_size=1, max_size=25)


@dataclass
class Played:
    """A generated session and what happened to it on the way."""

    builder: SessionBuilder
    compactions: list[tuple[list[str], CompactionPreparation, str]] = field(default_factory=list)
    """(context ids before, preparation, compaction entry id) for each compaction made."""


def play(actions: Sequence[tuple[str, Any]]) -> Played:
    """Build the session the actions describe, compacting and pruning where they say."""
    played = Played(SessionBuilder())
    builder = played.builder
    for kind, payload in actions:
        if kind == "turn":
            _play_turn(played, payload)
        elif kind == "model_change":
            builder.model_change()
        elif kind == "session_info":
            builder.session_info()
        elif kind == "prune":
            protect, minimum, protect_skill = payload
            settings = PruningSettings(
                protectTokens=protect,
                minimumSavings=minimum,
                protectedTools=["skill"] if protect_skill else [],
            )
            plan = plan_prune(builder.path(), builder.tokens, settings)
            if plan is not None:
                builder.apply_prune(plan)
        else:
            _compact(played, payload)
    return played


def _play_turn(played: Played, payload: Any) -> None:
    builder = played.builder
    request, steps, answer, failed = payload
    builder.user(request or "go on")
    for calls, texts, errors, compact_while_waiting in steps:
        _, call_ids = builder.assistant("working", calls, thinking="hmm")
        if compact_while_waiting:
            _compact(played, 200)
        for index, (call_id, (name, _)) in enumerate(zip(call_ids, calls, strict=True)):
            builder.result(call_id, name, texts[index], error=errors[index])
    builder.assistant(answer or "done", failed=failed)


def _compact(played: Played, keep_recent: int) -> None:
    before = context_ids(played.builder)
    preparation = played.builder.compact(settings_with(keep_recent), f"summary {len(before)}")
    if isinstance(preparation, CompactionPreparation):
        played.compactions.append((before, preparation, played.builder.leaf or ""))
