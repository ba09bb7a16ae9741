"""The live state of one session: its tree, its context path, its model and its token figure.

`LiveState` appends entries and keeps the context's size current; the jobs, triggers, idle
timer and navigation that act on this state live in their own modules of this package.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import ChainMap
from collections.abc import Sequence
from typing import Any

from contextd.collector import collector_paused
from contextd.compaction.context import ContextItem, build_context, instructions_text, opening_compaction
from contextd.model import (
    AssistantMessage,
    CompactionEntry,
    Entry,
    InstructionsEntry,
    LeafEntry,
    Message,
    MessageEntry,
    ModelChangeEntry,
    Settings,
    ToolResultMessage,
    Usage,
    is_node,
)
from contextd.session.errors import InvalidAppend, ReadOnlyMirror
from contextd.session.reports import SessionReports
from contextd.store import new_entry_id
from contextd.tokens.context_size import reports_by_model


def check_tool_results(messages: Sequence[Message], pending: dict[str, str]) -> None:
    """Every toolResult must answer a toolCall that is still waiting for one."""
    pending = dict(pending)
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.id in pending:
                    raise InvalidAppend(
                        f"messages.{index}.content",
                        f"tool call id {call.id!r} is already waiting for its result",
                    )
                pending[call.id] = call.name
        elif (
            isinstance(message, ToolResultMessage)
            and pending.pop(message.toolCallId, None) is None
        ):
            raise InvalidAppend(
                f"messages.{index}.toolCallId",
                f"no tool call {message.toolCallId!r} is waiting for a result in this context",
            )


class LiveState(SessionReports):
    """One open session: its file, its tree, the model it talks to and the context's size."""

    def context_items(self) -> list[ContextItem]:
        return build_context(self._path, self.entry_tokens)

    def context_messages(self) -> list[Message]:
        return [item.message for item in self.context_items()]

    def opening_compaction(self) -> CompactionEntry | None:
        """The compaction whose summary opens the context, for formats that replay it."""
        return opening_compaction(self._path)

    def instructions_text(self) -> str | None:
        """The system prompt: the instructions standing at the leaf, whatever was compacted."""
        return instructions_text(self._path)

    # --- appending --------------------------------------------------------------------

    def _write(self, entry_class: type[Any], **fields: Any) -> Entry:
        return self._write_all([entry_class(id="", parentId=None, **fields)])[0]

    def _write_all(self, drafts: Sequence[Entry]) -> list[Entry]:
        """Entries appended in order, each a child of the one before: stored all at once,
        and only then taken into memory, so a failed write (a full disk) leaves the
        session as it was, on disk and here."""
        taken: ChainMap[str, Entry] = ChainMap({}, self.tree.entries)  # not a copy: O(1) per append
        parent_id = self.tree.leaf_id
        entries = []
        for draft in drafts:
            entry = draft.model_copy(update={"id": new_entry_id(taken), "parentId": parent_id})
            taken[entry.id] = entry
            if is_node(entry):
                parent_id = entry.id
            entries.append(entry)
        self.file.append_all(entries)
        for entry in entries:
            self._take(entry)
        return entries

    def _take(self, entry: Entry) -> None:
        """An entry now stored joins the tree and the figures."""
        tokens = self._count(entry)
        self.tree.add(entry)
        self.entry_tokens[entry.id] = tokens
        if is_node(entry):
            self._ledger.add(entry, tokens)

    def append_messages(self, messages: Sequence[Message]) -> list[str]:
        """Validate the whole batch first, so a bad message stores nothing."""
        check_tool_results(messages, self._pending_calls)
        entries = self._write_all([MessageEntry(id="", parentId=None, message=message) for message in messages])
        entry_ids = []
        for entry in entries:
            self._extend_path(entry)
            entry_ids.append(entry.id)
        self.announce("append")
        self.after_append(messages)
        return entry_ids

    def append_node(self, entry_class: type[Any], **fields: Any) -> Entry:
        """Append a non-message node (compaction, prune, summaries, model, name) and recount."""
        entry = self._write(entry_class, **fields)
        self.rebuild()
        return entry

    def set_instructions(self, text: str, source: str) -> str:
        """Instructions of `source` from the leaf on (an empty text withdraws them)."""
        entry = self.append_node(InstructionsEntry, text=text, source=source)
        self.announce("instructions")
        self.touch()
        return entry.id

    def append_annotation(self, entry_class: type[Any], **fields: Any) -> Entry:
        """A `label` or `leaf` line: it annotates the tree without growing it."""
        entry = self._write(entry_class, **fields)
        if isinstance(entry, LeafEntry):
            self.rebuild()
        return entry

    # --- mirrors ----------------------------------------------------------------------

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyMirror(self.session_id)

    def mirror(self, entries: Sequence[Entry], leaf_id: str | None, pending: Usage | None) -> list[CompactionEntry]:
        """Write entries imported from the followed transcript as they are (ids, parents),
        then put the leaf where the transcript stands; returns the compactions written. A
        failed write (StorageFailed) leaves them in memory only: the session is to be closed
        (the follower does, and reads that part of the transcript again)."""
        compactions = self.mirror_in_memory(entries, leaf_id, pending)
        self.write_mirrored()
        return compactions

    def mirror_in_memory(
        self, entries: Sequence[Entry], leaf_id: str | None, pending: Usage | None
    ) -> list[CompactionEntry]:
        """`mirror`'s first half: the entries join the tree and the figure, not the file yet
        (`write_mirrored` appends them): a follower announces the figure in between. A
        mirror copies the agent's transcript, which stays the source of truth: a crash
        before the write reads that part of the transcript again.

        `pending` is the usage the agent reported for an answer not written yet (the rest
        of it may still come): until it is, that is the figure, as the agent itself shows."""
        with collector_paused():  # the entries join the tree: nothing here is garbage
            return self._mirror(entries, leaf_id, pending)

    def write_mirrored(self) -> None:
        """Append what `mirror_in_memory` took in, all or none (StorageFailed: they stay
        `unsaved`, and the session is to be closed); then those out of the live context go
        cold as the lines written, after the announcement (a first read's figure waits for
        none of it, and each entry is encoded once)."""
        if self._unwritten or self.file.unmade:  # a new mirror's file is made here, even empty
            lines = self.file.append_all(self._unwritten)
            written = zip(self._unwritten, lines)
            self.tree.lines.update((entry.id, line[:-1]) for entry, line in written if entry.type == "message")
            self._unwritten = []
            self._keep_cold()

    @property
    def unsaved(self) -> bool:
        """Whether memory holds entries the file does not (a mirror's write that failed)."""
        return bool(self._unwritten)

    def _mirror(self, entries: Sequence[Entry], leaf_id: str | None, pending: Usage | None) -> list[CompactionEntry]:
        self.pending_usage = pending
        counting, model_before = self.model_info.counting, self.model_id
        change_before, leaf_before = self.tree.latest_model_change, self.tree.leaf_id
        compactions_before = self.tree.kinds.get("compaction", 0)
        reports, model_at_end = self._reports_so_far()
        self._unwritten.extend(entries)
        add = self.tree.add
        for entry in entries:
            add(entry, unwritten=True)  # made light or cold once written
        self._count_later(entries)  # the figure counts only what follows the latest report
        found = reports_by_model(entries)  # one walk: the reports kept, and the window's below
        self._reports = reports, found.add_to(reports, model_at_end), self.tree.node_count
        latest_change = self.tree.latest_model_change
        if latest_change is not None and latest_change is not change_before:
            # The last model only (pi's transcripts switch hundreds of times), with the
            # reports found so far: no walk of the whole tree for them.
            self._use_model(latest_change.model, latest_change.contextWindow, reports.get(latest_change.model, 0))
        self._widen_window(found.largest_for(self.model_id, model_before))
        if self.model_info.counting != counting:
            self._recount_later()
        if leaf_id is not None and leaf_id != self.tree.leaf_id and self.tree.is_node_id(leaf_id):
            # "leaf-" ids cannot meet an imported id (uuids, pi's hex ids, Codex's line ids).
            move = LeafEntry(id=f"leaf-{new_entry_id(self.tree.entries)}", parentId=self.tree.leaf_id, targetId=leaf_id)
            self._unwritten.append(move)
            self.tree.add(move)
        self.rebuild(self._path_grown(leaf_before, entries))
        if self.tree.kinds.get("compaction", 0) == compactions_before:  # most writes: no walk to find none
            return []
        return [entry for entry in entries if entry.type == "compaction"]  # tags: isinstance is slow on a no

    def _reports_so_far(self) -> tuple[dict[str | None, int], str | None]:
        """The largest reports per model of the nodes the tree holds, and the model in force
        after them: those the last write left, unless nodes came another way (a load, a
        navigation's summary), then from one walk of the tree."""
        reports, model_at_end, covered = self._reports
        if covered == self.tree.node_count:
            return reports, model_at_end
        reports = {}
        return reports, reports_by_model(self.tree.nodes()).add_to(reports, None)

    # --- what the other jobs of a session provide -----------------------------------------

    @abstractmethod
    def after_append(self, messages: Sequence[Message]) -> None:
        """The automatic triggers, run after every batch of messages (see triggers.py)."""

    @abstractmethod
    def touch(self) -> None:
        """Activity on the session: (re)arm or cancel the idle timer (see idle.py)."""

    @abstractmethod
    def cancel_idle_timer(self) -> None:
        """Stop the idle timer, if armed (see idle.py)."""

    # --- model ------------------------------------------------------------------------

    def set_model(self, model_id: str) -> None:
        self.record_model(model_id)
        self.announce("model")

    def record_model(self, model_id: str) -> None:
        """Switch to `model_id` and write its `model_change` entry without announcing it:
        a new session's first entry, which its `open` announces."""
        old_counting = self.model_info.counting
        self._use_model(model_id)
        if self.model_info.counting != old_counting:
            self._count_all()
        self.append_node(ModelChangeEntry, model=model_id)

    def apply_settings(self, settings: Settings) -> None:
        """The session as a load under `settings` makes it: its model (a session that names
        none talks to the default model), window, counts and calibration."""
        old_counting = self.model_info.counting
        self.settings = settings
        self._tokenizers.clear()
        self._use_model_in_force()
        if self.model_info.counting != old_counting:
            self._count_all()
        elif not self._learned_alike(self._ledger):
            self._relearn()
        self.rebuild()

