/** The status bar item: the session that changed last, rendered from the status model. */
import * as vscode from "vscode";
import type { ConnectionState } from "./daemonConnection";
import { disconnectedTooltip, Level, statusAccessibilityLabel, statusLevel, statusText, statusTooltip } from "./format";
import type { ContextdSessions } from "./sessions";

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

/**
 * One item: the session of this window that changed last, whoever changed it (this window,
 * another editor, a script, a followed agent). Clicking it acts on that session.
 */
export class SessionStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly sessions: Pick<ContextdSessions, "status">,
    private readonly connection: ConnectionStatus = ALWAYS_CONNECTED,
  ) {
    this.item = vscode.window.createStatusBarItem("contextd.context", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "contextd context";
    this.subscriptions = [
      sessions.status.onDidChange(() => this.render()),
      sessions.status.onDidRemove(() => this.render()),
      connection.onDidChangeState(() => this.render()),
    ];
    this.render();
  }

  private render(): void {
    const item = this.item;
    const status = this.sessions.status.latest();
    if (!status) {
      item.hide();
      return;
    }
    const connection = this.connection.state;
    const connected = connection.kind === "connected";
    // Once the window knows several sessions, the item says which one it shows.
    const withName = this.sessions.status.all().length > 1;
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

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
    this.item.dispose();
  }
}
