/**
 * What the extension knows about each session it shows: the last token usage, a
 * compaction in flight, the last compaction's result and the idle timer. It is fed by
 * the daemon's notifications and by the answers to our own requests.
 */
import { Emitter, Event } from "vscode-jsonrpc";
import type {
  CompactionFinished,
  CompactionOutcome,
  CompactionReason,
  CompactionStarted,
  IdleTimer,
  MirrorSource as SessionSource,
  TokenUsage,
  WorkspaceActivity,
} from "./protocol";

export interface Compacting {
  reason: CompactionReason;
  compactionId?: string;
  tokensBefore?: number;
  /** Started by a request of this window, which then reports its own outcome. */
  requested: boolean;
  message?: string;
  percentage?: number;
}

export interface CompactionResult {
  outcome: CompactionOutcome;
  reason: CompactionReason;
  tokensBefore?: number;
  tokensAfter?: number;
  error?: string;
  willRetry?: boolean;
  /** The compaction's one-line summary, when the daemon gave one. */
  shortSummary?: string;
  /** A promotion's new model. */
  model?: string;
  finishedAt: number;
}

export interface SessionStatus {
  sessionId: string;
  name?: string;
  usage?: TokenUsage;
  compacting?: Compacting;
  lastCompaction?: CompactionResult;
  idleTimer?: IdleTimer;
  /** Set for a read-only mirror of another agent's transcript. */
  source?: SessionSource;
  /** A mirror: the compactions its agent made, as its transcript holds them. */
  agentCompactions?: AgentCompactions;
  /** When the session last changed, as far as this window heard (ms): the status bar shows the latest. */
  changedAt?: number;
}

/** A mirror's own compactions: how many, and the figure at which its agent made the latest (its compaction point, as seen). */
export interface AgentCompactions {
  count: number;
  lastTokensBefore?: number;
}

export class StatusModel {
  private readonly sessions = new Map<string, SessionStatus>();
  private pinnedId: string | undefined;
  private readonly changed = new Emitter<SessionStatus>();
  private readonly removed = new Emitter<string>();
  /** Fires with the new status of a session after any change to it. */
  readonly onDidChange: Event<SessionStatus> = this.changed.event;
  readonly onDidRemove: Event<string> = this.removed.event;

  get(sessionId: string): SessionStatus | undefined {
    return this.sessions.get(sessionId);
  }

  all(): SessionStatus[] {
    return [...this.sessions.values()];
  }

  has(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  track(sessionId: string, name?: string | null, source?: SessionSource | null): void {
    this.update(sessionId, (s) => ({ ...s, name: name ?? s.name, source: source ?? s.source }));
  }

  /** The session changed (or the user chose it) now: it becomes the one the status bar shows. */
  touch(sessionId: string, now: number = Date.now()): void {
    this.update(sessionId, (s) => ({ ...s, changedAt: Math.max(now, this.lastChange + 1) }));
  }

  /**
   * A change of a session of the watched workspace, whoever made it. A session being opened
   * (created empty, resumed, reopened after a restart) is no change worth showing; a mirror
   * opens when the daemon first finds its transcript, with what the agent wrote so far.
   */
  applyActivity(activity: WorkspaceActivity, now: number = Date.now()): void {
    const changed = activity.cause !== "open" || Boolean(activity.source);
    this.update(activity.sessionId, (s) => ({
      ...s,
      name: activity.name ?? s.name,
      source: activity.source ?? s.source,
      usage: activity.usage,
      changedAt: changed ? Math.max(now, this.lastChange + 1) : s.changedAt,
    }));
  }

  /** The session the user pinned the status bar to, if any: the item stays on it. */
  get pinned(): string | undefined {
    return this.pinnedId;
  }

  /** Keeps the status bar on `sessionId` whichever session changes (undefined: follow the latest again). */
  pin(sessionId: string | undefined): void {
    this.pinnedId = sessionId && this.sessions.has(sessionId) ? sessionId : undefined;
    const shown = this.shown();
    if (shown) this.changed.fire(shown);
  }

  /** The session the status bar shows: the pinned one, else the one that changed last. */
  shown(): SessionStatus | undefined {
    return (this.pinnedId && this.sessions.get(this.pinnedId)) || this.latest();
  }

  /** The session that changed last. */
  latest(): SessionStatus | undefined {
    let latest: SessionStatus | undefined;
    for (const status of this.sessions.values()) {
      if (status.changedAt !== undefined && (latest?.changedAt === undefined || status.changedAt > latest.changedAt)) {
        latest = status;
      }
    }
    return latest;
  }

  /** Strictly increasing change times, so two changes in one millisecond keep their order. */
  private get lastChange(): number {
    return Math.max(0, ...[...this.sessions.values()].map((s) => s.changedAt ?? 0));
  }

  /** A mirror's own compactions, read from its tree. */
  applyAgentCompactions(sessionId: string, compactions: AgentCompactions): void {
    this.updateKnown(sessionId, (s) => ({ ...s, agentCompactions: compactions }));
  }

  forget(sessionId: string): void {
    if (this.pinnedId === sessionId) this.pinnedId = undefined;
    if (this.sessions.delete(sessionId)) this.removed.fire(sessionId);
  }

  /**
   * A session's new figure. Only for a session the window already knows (opened, read with
   * session/state, or heard of as its workspace's activity): a figure alone names no session
   * and says nothing of its workspace.
   */
  applyUsage(usage: TokenUsage): void {
    this.updateKnown(usage.sessionId, (s) => ({ ...s, usage }));
  }

  /** A compaction (or hand-off) requested by this window, before the daemon has said anything about it. */
  compactionRequested(sessionId: string, reason: CompactionReason = "manual"): void {
    this.update(sessionId, (s) => ({ ...s, compacting: { reason, requested: true } }));
  }

  compactionStarted(event: CompactionStarted): void {
    this.updateKnown(event.sessionId, (s) => ({
      ...s,
      compacting: {
        ...s.compacting,
        requested: s.compacting?.requested ?? false,
        reason: event.reason,
        compactionId: event.compactionId,
        tokensBefore: event.tokensBefore,
      },
    }));
  }

  compactionProgress(sessionId: string, message?: string, percentage?: number): void {
    const current = this.sessions.get(sessionId);
    if (!current?.compacting) return;
    this.update(sessionId, (s) => ({
      ...s,
      compacting: s.compacting && {
        ...s.compacting,
        message: message ?? s.compacting.message,
        percentage: percentage ?? s.compacting.percentage,
      },
    }));
  }

  compactionFinished(event: CompactionFinished, now: number = Date.now()): void {
    const { outcome, reason, tokensBefore, tokensAfter, error, willRetry } = event;
    const shortSummary = event.shortSummary ?? undefined;
    const model = outcome === "promoted" ? event.model : undefined;
    this.updateKnown(event.sessionId, (s) => ({
      ...s,
      // A failure the daemon retries keeps the spinner going; a promotion is done at once.
      compacting: willRetry && outcome !== "promoted" ? s.compacting : undefined,
      lastCompaction: { outcome, reason, tokensBefore, tokensAfter, error, willRetry, shortSummary, model, finishedAt: now },
      agentCompactions:
        reason === "agent" && outcome === "compacted" && s.agentCompactions
          ? { count: s.agentCompactions.count + 1, lastTokensBefore: tokensBefore }
          : s.agentCompactions,
    }));
  }

  /** Our own request ended; `result` is absent when the daemon already reported the outcome. */
  compactionRequestEnded(sessionId: string, result?: Omit<CompactionResult, "finishedAt">, now = Date.now()): void {
    this.update(sessionId, (s) => ({
      ...s,
      compacting: undefined,
      lastCompaction: result ? { ...result, finishedAt: now } : s.lastCompaction,
    }));
  }

  applyIdleTimer(event: IdleTimer): void {
    this.updateKnown(event.sessionId, (s) => ({ ...s, idleTimer: event }));
  }

  private updateKnown(sessionId: string, change: (status: SessionStatus) => SessionStatus): void {
    if (this.sessions.has(sessionId)) this.update(sessionId, change);
  }

  private update(sessionId: string, change: (status: SessionStatus) => SessionStatus): void {
    const next = change(this.sessions.get(sessionId) ?? { sessionId });
    this.sessions.set(sessionId, next);
    this.changed.fire(next);
  }

  dispose(): void {
    this.changed.dispose();
    this.removed.dispose();
  }
}
