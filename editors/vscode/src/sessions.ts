/**
 * The sessions this window works with, over one connection to the daemon: requests,
 * the status model fed by notifications, and the session the commands act on.
 */
import { CancellationToken, CancellationTokenSource, Disposable, Emitter, Event } from "vscode-jsonrpc";
import {
  AppendResult,
  CompactionFinished,
  CompactionReason,
  CompactionStarted,
  CompactPreview,
  CompactResult,
  ContextFormat,
  ContextResult,
  DeleteResult,
  ErrorCode,
  ForkResult,
  HandoffResult,
  IdleConfigureParams,
  IdleConfigureResult,
  IdleTimer,
  ListResult,
  Message,
  Method,
  NavigateResult,
  Notification,
  OpenParams,
  OpenResult,
  SessionChanged,
  SessionSummary,
  StateResult,
  TokenUsage,
  TreeResult,
  WorkspaceActivity,
} from "./protocol";
import { errorCode, errorText, isMethodNotFound, RpcConnection } from "./rpc";
import { CompactionResult, StatusModel } from "./statusModel";

export interface CompactOptions {
  instructions?: string;
}

export interface NavigateOptions {
  summarize?: boolean;
  instructions?: string;
}

/** A `$/progress` value of LSP's work-done progress. */
export interface WorkDoneProgressValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
  percentage?: number;
}

/** Text of a user message the leaf moved before, for the agent to edit and resend. */
export interface EditorText {
  sessionId: string;
  text: string;
}

export class ContextdSessions implements Disposable {
  readonly status = new StatusModel();
  private currentId: string | undefined;
  /** Compactions and hand-offs this window asked for, by session: cancelling one sends $/cancelRequest. */
  private readonly ownJobs = new Map<string, CancellationTokenSource>();
  private readonly subscriptions: Disposable[] = [];

  private readonly tokenUsage = new Emitter<TokenUsage>();
  private readonly sessionChanged = new Emitter<SessionChanged>();
  private readonly compactionStarted = new Emitter<CompactionStarted>();
  private readonly compactionFinished = new Emitter<CompactionFinished>();
  private readonly currentChanged = new Emitter<string | undefined>();
  private readonly editorText = new Emitter<EditorText>();
  readonly onTokenUsage: Event<TokenUsage> = this.tokenUsage.event;
  readonly onSessionChanged: Event<SessionChanged> = this.sessionChanged.event;
  readonly onCompactionStarted: Event<CompactionStarted> = this.compactionStarted.event;
  readonly onCompactionFinished: Event<CompactionFinished> = this.compactionFinished.event;
  readonly onDidChangeCurrent: Event<string | undefined> = this.currentChanged.event;
  readonly onEditorText: Event<EditorText> = this.editorText.event;

  constructor(
    private readonly rpc: RpcConnection,
    private readonly workspace?: string,
  ) {
    this.subscriptions.push(
      rpc.onNotification(Notification.tokenUsage, (usage: TokenUsage) => {
        this.status.applyUsage(usage);
        this.tokenUsage.fire(usage);
      }),
      rpc.onNotification(Notification.sessionChanged, (event: SessionChanged) => {
        // A session deleted while this connection had it open: nothing more comes of it. A
        // window that does not watch the workspace (a daemon of its own) hears it only here.
        if (event.cause === "deleted") this.forget(event.sessionId);
        this.sessionChanged.fire(event);
      }),
      rpc.onNotification(Notification.compactionStarted, (event: CompactionStarted) => {
        this.status.compactionStarted(event);
        this.compactionStarted.fire(event);
      }),
      rpc.onNotification(Notification.compactionFinished, (event: CompactionFinished) => {
        this.status.compactionFinished(event);
        this.compactionFinished.fire(event);
      }),
      rpc.onNotification(Notification.idleTimer, (event: IdleTimer) => this.status.applyIdleTimer(event)),
      rpc.onNotification(Notification.workspaceActivity, (activity: WorkspaceActivity) => this.onWorkspaceActivity(activity)),
    );
  }

  /** The session commands act on when none is named. */
  get current(): string | undefined {
    return this.currentId;
  }

  /** The user (or the API) chose this session: commands act on it and the status bar shows it. */
  setCurrent(sessionId: string | undefined): void {
    if (sessionId) this.status.touch(sessionId);
    if (sessionId === this.currentId) return;
    this.currentId = sessionId;
    this.currentChanged.fire(sessionId);
  }

  async open(params: OpenParams = {}): Promise<OpenResult> {
    const result = await this.request<OpenResult>(Method.open, {
      ...(params.sessionId ? {} : { workspace: this.workspace }),
      ...params,
    });
    this.status.track(result.sessionId, params.name ?? result.name, result.source);
    this.status.applyUsage(result.usage);
    this.setCurrent(result.sessionId);
    return result;
  }

  /**
   * Asks the daemon for `contextd/workspace/activity` on every session of this window's
   * workspace, whoever drives it. A daemon without it (-32601) leaves the status bar to
   * this window's own sessions. Sent again after every (re)connection.
   */
  async watchWorkspace(): Promise<ListResult | undefined> {
    if (!this.workspace) return undefined;
    try {
      return await this.request<ListResult>(Method.watchWorkspace, { workspace: this.workspace });
    } catch (error) {
      if (isMethodNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * With nothing shown yet, shows the workspace's session that changed last among `rows`
   * (a watch's result), read with session/state. On a shared daemon only: a daemon of the
   * window's own would take the session's lock from the agent that writes it.
   */
  async showNewest(rows: SessionSummary[]): Promise<void> {
    // A damaged session file cannot be read: the newest that can is shown.
    const newest = rows.filter((row) => !row.damaged).sort((a, b) => Date.parse(b.updatedAt) - Date.parse(a.updatedAt))[0];
    if (!newest || this.status.latest()) return;
    await this.state(newest.sessionId);
    if (!this.status.latest()) this.status.touch(newest.sessionId);
  }

  private onWorkspaceActivity(activity: WorkspaceActivity): void {
    if (activity.cause === "deleted") {
      this.forget(activity.sessionId);
      return;
    }
    const known = this.status.has(activity.sessionId);
    this.status.applyActivity(activity);
    // A request on the session makes the daemon send us its compaction and idle events too.
    if (!known) this.state(activity.sessionId).catch(() => undefined);
  }

  /**
   * The daemon's work-done progress for a compaction (its token names the compaction id)
   * goes to that session's status, and so to the progress notification. Returns whether
   * the token belonged to a running compaction.
   */
  routeProgress(token: string | number, value: WorkDoneProgressValue): boolean {
    const session = this.status
      .all()
      .find((s) => s.compacting?.compactionId && String(token).includes(s.compacting.compactionId));
    if (!session) return false;
    if (value.kind !== "end") this.status.compactionProgress(session.sessionId, value.message, value.percentage);
    return true;
  }

  /** After a daemon restart: open again every session this window had, from disk. */
  async reopenAll(): Promise<void> {
    // The jobs of the daemon that died ended with it. Settled before the first await: a
    // compaction or hand-off the user starts on the new daemon while the sessions are
    // reopened is theirs to keep (settled after each reopen, it was cancelled at once).
    for (const source of this.ownJobs.values()) source.cancel();
    for (const { sessionId, compacting } of this.status.all()) {
      if (compacting) this.status.compactionRequestEnded(sessionId);
    }
    // Reopening leaves the current session as it is: only a session lost meanwhile (forgotten)
    // moves it, and a session the user chose while this runs (a hand-off's) stays chosen.
    for (const { sessionId } of this.status.all()) {
      try {
        const reopened = await this.request<OpenResult>(Method.open, { sessionId });
        this.status.track(sessionId, reopened.name, reopened.source);
        this.status.applyUsage(reopened.usage);
      } catch (error) {
        if (errorCode(error) !== ErrorCode.sessionNotFound) throw error;
        this.forget(sessionId);
      }
    }
  }

  /** The sessions of this window's workspace (of every workspace when the window has none). */
  async list(workspace: string | undefined = this.workspace): Promise<ListResult> {
    const result = await this.request<ListResult>(Method.list, workspace ? { workspace } : {});
    // The listing names the sessions this window shows, as the daemon has them now.
    for (const row of result.sessions) {
      if (this.status.has(row.sessionId)) this.status.track(row.sessionId, row.name, row.source);
    }
    return result;
  }

  async append(sessionId: string, messages: Message[]): Promise<AppendResult> {
    const result = await this.request<AppendResult>(Method.append, { sessionId, messages });
    this.status.applyUsage(result.usage);
    this.status.touch(sessionId);
    return result;
  }

  context(sessionId: string, format: ContextFormat = "neutral"): Promise<ContextResult> {
    return this.request<ContextResult>(Method.context, { sessionId, format });
  }

  async state(sessionId: string): Promise<StateResult> {
    const state = await this.request<StateResult>(Method.state, { sessionId });
    this.status.track(sessionId, state.name, state.source);
    this.status.applyUsage(state.usage);
    if (state.source) await this.readAgentCompactions(sessionId);
    return state;
  }

  /**
   * A mirror's compactions are its agent's, made before this window heard of it: its tree
   * holds them, with the figure each was made at (the agent's own compaction point).
   */
  private async readAgentCompactions(sessionId: string): Promise<void> {
    const compactions = (await this.tree(sessionId)).nodes.filter((node) => node.type === "compaction");
    this.status.applyAgentCompactions(sessionId, { count: compactions.length, lastTokensBefore: compactions.at(-1)?.tokensBefore });
  }

  async setModel(sessionId: string, model: string): Promise<void> {
    const result = await this.request<{ usage: TokenUsage }>(Method.setModel, { sessionId, model });
    this.status.applyUsage(result.usage);
  }

  async close(sessionId: string): Promise<void> {
    await this.request(Method.close, { sessionId });
    this.forget(sessionId);
  }

  /** Deletes the session's file; every window showing it forgets it (sessionChanged / activity `deleted`). */
  async delete(sessionId: string): Promise<DeleteResult> {
    const result = await this.request<DeleteResult>(Method.delete, { sessionId });
    this.forget(sessionId);
    return result;
  }

  preview(sessionId: string): Promise<CompactPreview> {
    return this.request<CompactPreview>(Method.compact, { sessionId, dryRun: true });
  }

  /** A manual compaction; `token` (or cancelCompaction) cancels it with $/cancelRequest. */
  compact(sessionId: string, options: CompactOptions = {}, token?: CancellationToken): Promise<CompactResult> {
    const params = { sessionId, ...(options.instructions ? { instructions: options.instructions } : {}) };
    return this.ownJob(
      sessionId,
      "manual",
      token,
      (jobToken) => this.request<CompactResult>(Method.compact, params, jobToken),
      (result) => ({
        outcome: "compacted",
        reason: "manual",
        tokensBefore: result.tokensBefore,
        tokensAfter: result.tokensAfter,
        shortSummary: result.shortSummary ?? undefined,
      }),
    );
  }

  /**
   * A summarizing job this window asked for: the status shows it at once, and cancelling
   * it (from `token` or cancelCompaction) sends $/cancelRequest. `outcome` says what the
   * status keeps of a success; the daemon's compactionFinished may say it first.
   */
  private async ownJob<R>(
    sessionId: string,
    reason: CompactionReason,
    token: CancellationToken | undefined,
    send: (token: CancellationToken) => Promise<R>,
    outcome: (result: R) => Omit<CompactionResult, "finishedAt"> | undefined,
  ): Promise<R> {
    const source = new CancellationTokenSource();
    const link = token?.onCancellationRequested(() => source.cancel());
    this.ownJobs.set(sessionId, source);
    // If the daemon is already busy, it answers -32004 and its own job's events keep the status.
    const alreadyRunning = Boolean(this.status.get(sessionId)?.compacting);
    if (!alreadyRunning) this.status.compactionRequested(sessionId, reason);
    try {
      const result = await send(source.token);
      this.status.compactionRequestEnded(sessionId, outcome(result));
      return result;
    } catch (error) {
      // A job of a daemon that died may fail after a new one on the session started: that one's status stays.
      if (!alreadyRunning && this.ownJobs.get(sessionId) === source) {
        this.status.compactionRequestEnded(sessionId, failedJob(error, reason, source.token.isCancellationRequested));
      }
      throw error;
    } finally {
      link?.dispose();
      if (this.ownJobs.get(sessionId) === source) this.ownJobs.delete(sessionId);
      source.dispose();
    }
  }

  /**
   * Stops the session's running compaction: our own request is cancelled with
   * $/cancelRequest; one the daemon started itself (threshold, idle…) is aborted.
   */
  async cancelCompaction(sessionId: string): Promise<"cancelled" | "aborted"> {
    const own = this.ownJobs.get(sessionId);
    if (own) {
      own.cancel();
      return "cancelled";
    }
    await this.request(Method.abort, { sessionId });
    return "aborted";
  }

  /** Continues in a new session (it becomes the current one); cancellable like a compaction. */
  async handoff(sessionId: string, goal?: string, token?: CancellationToken): Promise<HandoffResult> {
    const params = { sessionId, ...(goal ? { goal } : {}) };
    const result = await this.ownJob(
      sessionId,
      "handoff",
      token,
      (jobToken) => this.request<HandoffResult>(Method.handoff, params, jobToken),
      () => undefined,
    );
    await this.open({ sessionId: result.sessionId });
    return result;
  }

  tree(sessionId: string): Promise<TreeResult> {
    return this.request<TreeResult>(Method.tree, { sessionId });
  }

  async navigate(
    sessionId: string,
    targetId: string,
    options: NavigateOptions = {},
    token?: CancellationToken,
  ): Promise<NavigateResult> {
    const params = {
      sessionId,
      targetId,
      summarize: options.summarize ?? false,
      ...(options.instructions ? { instructions: options.instructions } : {}),
    };
    const result = await this.request<NavigateResult>(Method.navigate, params, token);
    if (result.editorText) this.editorText.fire({ sessionId, text: result.editorText });
    return result;
  }

  async fork(sessionId: string, entryId: string): Promise<ForkResult> {
    const result = await this.request<ForkResult>(Method.fork, { sessionId, entryId });
    await this.open({ sessionId: result.sessionId });
    return result;
  }

  label(sessionId: string, entryId: string, label: string | null): Promise<unknown> {
    return this.request(Method.label, { sessionId, entryId, label });
  }

  configureIdle(params: IdleConfigureParams): Promise<IdleConfigureResult> {
    return this.request<IdleConfigureResult>(Method.idleConfigure, params);
  }

  /** A request, with the token only when there is one: a trailing undefined would be sent as a second param. */
  private request<R>(method: string, params: object, token?: CancellationToken): Promise<R> {
    return token ? this.rpc.sendRequest<R>(method, params, token) : this.rpc.sendRequest<R>(method, params);
  }

  private forget(sessionId: string): void {
    this.status.forget(sessionId);
    // The window goes on with the session of its own that changed last.
    if (this.currentId === sessionId) this.setCurrent((this.status.latest() ?? this.status.all()[0])?.sessionId);
  }

  dispose(): void {
    for (const source of this.ownJobs.values()) source.cancel();
    for (const subscription of this.subscriptions) subscription.dispose();
    for (const emitter of [this.tokenUsage, this.sessionChanged, this.compactionStarted, this.compactionFinished]) {
      emitter.dispose();
    }
    this.currentChanged.dispose();
    this.editorText.dispose();
    this.status.dispose();
  }
}

/** What a failed job request leaves in the status; nothing when nothing was tried. */
function failedJob(
  error: unknown,
  reason: CompactionReason,
  cancelled: boolean,
): Omit<CompactionResult, "finishedAt"> | undefined {
  const code = errorCode(error);
  if (cancelled || code === ErrorCode.cancelled) return { outcome: "cancelled", reason };
  if (code === ErrorCode.nothingToCompact || code === ErrorCode.methodNotFound) return undefined;
  return { outcome: "failed", reason, error: errorText(error) };
}
