"""What a session tells about itself: its tokenUsage, sessionChanged and workspaceActivity
bodies, and the results of session/open, session/state and session/stats.
"""

from __future__ import annotations

import os
import time
from typing import Any, cast

from contextd.compaction.agent_points import ModelWindow
from contextd.compaction.stats import compression_stats
from contextd.model import MirrorSource
from contextd.results import (
    ChangeCause,
    CompactionFigures,
    FigureBreakdown,
    Figures,
    OpenResult,
    PruneFigures,
    StateResult,
    StatsResult,
    TokenUsage,
    WorkspaceActivity,
)
from contextd.session.agent_settings import mirror_compaction_point
from contextd.session.figure import FigureState
from contextd.session.index import timestamp
from contextd.tokens.context_size import Breakdown, breakdown


class SessionReports(FigureState):
    """The figure and identity of a session as notifications and results carry them."""

    def usage_body(self) -> dict[str, Any]:
        window = self.model_info.context_window
        return {
            "sessionId": self.session_id,
            "tokens": self._figure.tokens,
            "contextWindow": window,
            "percent": round(100 * self._figure.tokens / window, 1),
            "thresholdTokens": self.threshold_tokens,
            "source": self._figure.source,
            "calibration": self._figure.calibration,
            "model": self.model_id,
            "breakdown": self._breakdown().as_dict(),
            **({"agentCompaction": self._agent_compaction(self.source, window)} if self.source else {}),
        }

    def usage(self) -> TokenUsage:
        return TokenUsage.model_validate(self.usage_body())

    def _breakdown(self) -> Breakdown:
        """The figure's parts: instructions, summary, messages and the unseen part."""
        return breakdown(self._counted_parts, self._figure, self._unseen_so_far())

    def _mirror_source(self) -> MirrorSource | None:
        """The transcript a mirror follows, as results and notifications name it."""
        return MirrorSource.model_validate(self.source) if self.source is not None else None

    def _agent_compaction(self, source: dict[str, str], window: int) -> dict[str, Any]:
        """A mirror's agent compacts it at its own point, which contextd works out from the
        agent's rules and configuration (it never compacts a mirror at its threshold)."""
        model = ModelWindow(window, self.model_info.max_output_tokens, recorded=window == self._recorded_window)
        return mirror_compaction_point(source["agent"], self.header.workspace, model, source["path"])

    def announce(self, cause: str) -> None:
        usage = self.usage()  # once: a mirror's works out where its agent compacts
        self.events.session_changed(self.session_id, self.leaf_id, cause)
        self.events.token_usage(usage)
        self.events.workspace_activity(self.activity(cause, usage, self.leaf_id))

    def announce_deletion(self) -> None:
        """The session's files are gone: whoever had it open or watches its workspace hears
        it once, with the figure it had (no leaf any more, no tokenUsage)."""
        self.events.session_changed(self.session_id, None, "deleted")
        self.events.workspace_activity(self.activity("deleted", self.usage(), None))

    def updated_at(self) -> str:
        """The time the file was last written, as `session/list` shows it (now, for a file
        that is gone: a deleted session)."""
        try:
            return timestamp(os.stat(self.file.path).st_mtime_ns)
        except OSError:
            return timestamp(time.time_ns())

    def activity(self, cause: str, usage: TokenUsage, leaf_id: str | None) -> WorkspaceActivity:
        """What a change tells the connections watching the session's workspace: which
        session, why, its leaf and figure (`usage`, the one its tokenUsage sends), and when
        its file was last written."""
        return WorkspaceActivity(
            sessionId=self.session_id,
            name=self.name,
            workspace=self.header.workspace,
            cause=cast(ChangeCause, cause),  # validated: a cause the model does not know is refused
            leafId=leaf_id,
            usage=usage,
            source=self._mirror_source(),
            updatedAt=self.updated_at(),
        )

    @property
    def compacting(self) -> bool:
        return self._running is not None

    @property
    def node_count(self) -> int:
        """Every node of the tree, abandoned branches included (labels and leaf moves are not nodes)."""
        return sum(1 for _ in self.tree.nodes())

    def opened(self) -> OpenResult:
        """What session/open answers."""
        return OpenResult(**self._open_fields())

    def state(self) -> StateResult:
        """What session/open answers, and where the session stands."""
        return StateResult(
            **self._open_fields(), workspace=self.header.workspace, entries=self.node_count, compacting=self.compacting
        )

    def _open_fields(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "name": self.name,
            "leafId": self.leaf_id,
            "model": self.model_id,
            "contextWindow": self.model_info.context_window,
            "usage": self.usage(),
            "path": str(self.file.path),
            "source": self._mirror_source(),
        }

    def stats(self) -> StatsResult:
        """How much compaction and pruning took out of the current branch."""
        self.settle_counts()
        figures = compression_stats(self._path, self.entry_tokens, self.tokens, self._figure.calibration)
        parts = self._breakdown()
        return StatsResult(
            sessionId=self.session_id,
            treeNodes=self.node_count,
            history=Figures(entries=figures.history_entries, tokens=figures.history_tokens),
            context=Figures(entries=figures.context_entries, tokens=figures.context_tokens),
            compactions=CompactionFigures(
                count=figures.compactions,
                tokensSaved=figures.compaction_tokens_saved,
                summaryTokens=figures.summary_tokens,
            ),
            prunes=PruneFigures(count=figures.prunes, tokensSaved=figures.prune_tokens_saved),
            ratio=figures.ratio,
            breakdown=FigureBreakdown(**parts.as_dict()),
        )
