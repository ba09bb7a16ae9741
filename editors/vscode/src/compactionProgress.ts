/**
 * A progress notification for every running compaction, whoever started it. Only the window
 * that started a job may stop it: its Cancel cancels our own request ($/cancelRequest); a job
 * the daemon started by itself (threshold, idle, overflow) any window may abort
 * (contextd/compact/abort); one another client asked for shows without Cancel. Failures of compactions this window did not request are
 * reported here with the daemon's error text; requests report their own outcome.
 */
import { Disposable } from "vscode-jsonrpc";
import { compactionOutcomeText, sessionTitle } from "./format";
import type { CompactionReason } from "./protocol";
import { errorText } from "./rpc";
import type { ContextdSessions } from "./sessions";
import type { SessionStatus } from "./statusModel";
import type { ProgressReport, Ui } from "./ui";

/** Jobs the daemon starts by itself, no client's request: any window may stop them. */
const AUTOMATIC: ReadonlySet<CompactionReason> = new Set(["threshold", "idle", "overflow", "incomplete"]);

interface Shown {
  report: (progress: ProgressReport) => void;
  finish: () => void;
  requested: boolean;
}

export class CompactionProgress implements Disposable {
  private readonly shown = new Map<string, Shown>();
  private readonly subscription: Disposable;

  constructor(
    private readonly sessions: Pick<ContextdSessions, "status" | "cancelCompaction">,
    private readonly ui: Ui,
  ) {
    this.subscription = sessions.status.onDidChange((status) => this.update(status));
  }

  private update(status: SessionStatus): void {
    const shown = this.shown.get(status.sessionId);
    // A mirror's compactions are its agent's own, reported once done: nothing to wait for or cancel.
    if (status.compacting && !shown && !status.source) this.show(status);
    else if (status.compacting && shown) {
      shown.requested ||= status.compacting.requested;
      shown.report({ message: status.compacting.message, percentage: status.compacting.percentage });
    } else if (!status.compacting && shown) {
      this.shown.delete(status.sessionId);
      shown.finish();
      if (!shown.requested) void this.reportFailure(status);
    }
  }

  private show(status: SessionStatus): void {
    const { sessionId, compacting } = status;
    const entry: Shown = { report: () => {}, finish: () => {}, requested: compacting!.requested };
    const finished = new Promise<void>((resolve) => (entry.finish = resolve));
    this.shown.set(sessionId, entry);
    const cancellable = compacting!.requested || AUTOMATIC.has(compacting!.reason);
    const elsewhere = cancellable ? "" : ", asked for elsewhere";
    const title =
      compacting!.reason === "handoff"
        ? `contextd: writing the hand-off document for ${sessionTitle(status)}${elsewhere}…`
        : `contextd: compacting ${sessionTitle(status)} (${compacting!.reason}${elsewhere})…`;
    void this.ui.progress(
      title,
      async (report, token) => {
        entry.report = report;
        const cancel = token.onCancellationRequested(() => void this.cancel(sessionId));
        await finished;
        cancel.dispose();
      },
      { cancellable },
    );
  }

  private async cancel(sessionId: string): Promise<void> {
    try {
      await this.sessions.cancelCompaction(sessionId);
    } catch (error) {
      await this.ui.error(`contextd: could not stop the compaction: ${errorText(error)}`);
    }
  }

  private async reportFailure(status: SessionStatus): Promise<void> {
    const last = status.lastCompaction;
    if (last?.outcome !== "failed") return;
    await this.ui.error(`contextd: compaction of ${sessionTitle(status)} ${compactionOutcomeText(last)}`);
  }

  dispose(): void {
    this.subscription.dispose();
    for (const shown of this.shown.values()) shown.finish();
    this.shown.clear();
  }
}
