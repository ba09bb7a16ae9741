/** One status bar item per session of this window, rendered from the status model. */
import * as vscode from "vscode";
import type { ConnectionState } from "./daemonConnection";
import { disconnectedTooltip, Level, statusAccessibilityLabel, statusLevel, statusText, statusTooltip } from "./format";
import type { ContextdSessions } from "./sessions";
import type { SessionStatus } from "./statusModel";

const BACKGROUND: Record<Level, vscode.ThemeColor | undefined> = {
  normal: undefined,
  warning: new vscode.ThemeColor("statusBarItem.warningBackground"),
  error: new vscode.ThemeColor("statusBarItem.errorBackground"),
};

export const SHOW_ACTIONS_COMMAND = "contextd.showActions";
export const RESTART_COMMAND = "contextd.restartDaemon";

/** The daemon's connection as the status bar needs it. */
export interface ConnectionStatus {
  readonly state: ConnectionState;
  onDidChangeState(listener: (state: ConnectionState) => void): vscode.Disposable;
}

const ALWAYS_CONNECTED: ConnectionStatus = {
  state: { kind: "connected" },
  onDidChangeState: () => ({ dispose() {} }),
};

export class SessionStatusBar implements vscode.Disposable {
  private readonly items = new Map<string, vscode.StatusBarItem>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly sessions: Pick<ContextdSessions, "status">,
    private readonly connection: ConnectionStatus = ALWAYS_CONNECTED,
  ) {
    this.subscriptions = [
      sessions.status.onDidChange((status) => this.renderAll(status.sessionId)),
      sessions.status.onDidRemove((sessionId) => this.remove(sessionId)),
      connection.onDidChangeState(() => this.renderAll()),
    ];
    this.renderAll();
  }

  /** Names appear once several sessions share the bar; so a change can touch every item. */
  private renderAll(changed?: string): void {
    const all = this.sessions.status.all();
    const withName = all.length > 1;
    for (const status of all) {
      if (!changed || withName || status.sessionId === changed) this.render(status, withName);
    }
  }

  private render(status: SessionStatus, withName: boolean): void {
    const item = this.item(status.sessionId);
    const connection = this.connection.state;
    const connected = connection.kind === "connected";
    item.text = statusText(status, { withName, connection });
    item.backgroundColor = connected ? BACKGROUND[statusLevel(status)] : BACKGROUND.error;
    const lines = connected ? statusTooltip(status, Date.now()) : disconnectedTooltip(status, connection, Date.now());
    item.tooltip = new vscode.MarkdownString(lines.join("  \n"), true);
    item.accessibilityInformation = { label: statusAccessibilityLabel(status, connection) };
    item.command = connected
      ? { title: "Session Actions", command: SHOW_ACTIONS_COMMAND, arguments: [status.sessionId] }
      : { title: "Restart Daemon", command: RESTART_COMMAND };
    item.show();
  }

  private item(sessionId: string): vscode.StatusBarItem {
    let item = this.items.get(sessionId);
    if (!item) {
      item = vscode.window.createStatusBarItem(`contextd.session.${sessionId}`, vscode.StatusBarAlignment.Right, 100);
      item.name = "contextd context";
      this.items.set(sessionId, item);
    }
    return item;
  }

  private remove(sessionId: string): void {
    this.items.get(sessionId)?.dispose();
    this.items.delete(sessionId);
    this.renderAll();
  }

  /** The item of a session, for tests. */
  itemOf(sessionId: string): vscode.StatusBarItem | undefined {
    return this.items.get(sessionId);
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
    for (const item of this.items.values()) item.dispose();
    this.items.clear();
  }
}
