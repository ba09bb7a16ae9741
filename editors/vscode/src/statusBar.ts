/** The status bar item: the session that changed last, rendered from the status model. */
import * as vscode from "vscode";
import type { ConnectionState } from "./daemonConnection";
import { disconnectedTooltip, Level, statusAccessibilityLabel, statusLevel, statusText, statusTooltip } from "./format";
import type { ContextdSessions } from "./sessions";
import type { SessionStatus } from "./statusModel";

/** Right-aligned items of lower priority sit further right. */
const PRIORITY = -100;

const BACKGROUND: Record<Level, vscode.ThemeColor | undefined> = {
  normal: undefined,
  warning: new vscode.ThemeColor("statusBarItem.warningBackground"),
  error: new vscode.ThemeColor("statusBarItem.errorBackground"),
};

export const SHOW_ACTIONS_COMMAND = "contextd.showActions";
export const RESTART_COMMAND = "contextd.restartDaemon";
/** The idle item's click: how to get a first session (follow an agent, start one, the walkthrough). */
export const GET_STARTED_COMMAND = "contextd.getStarted";

/** The daemon's connection as the status bar needs it. */
export interface ConnectionStatus {
  readonly state: ConnectionState;
  onDidChangeState(listener: (state: ConnectionState) => void): vscode.Disposable;
}

const ALWAYS_CONNECTED: ConnectionStatus = {
  state: { kind: "connected" },
  onDidChangeState: () => ({ dispose() {} }),
};

/** The window's settings the item reads. */
export interface StatusBarSettings {
  autoCompaction(): boolean;
}

/**
 * One item: the session of this window that changed last, whoever changed it (this window,
 * another editor, a script, a followed agent), or the one the user pinned; before there is
 * any, an idle item that says the window is connected and how to get a session. Clicking it
 * acts on the session shown.
 */
export class SessionStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly sessions: Pick<ContextdSessions, "status">,
    private readonly connection: ConnectionStatus = ALWAYS_CONNECTED,
    private readonly settings: StatusBarSettings = { autoCompaction: () => true },
  ) {
    // The item sits at the right end of the bar: VS Code drops the items that do not fit on
    // the left of the right-hand group first, so a narrow window keeps this one.
    this.item = vscode.window.createStatusBarItem("contextd.context", vscode.StatusBarAlignment.Right, PRIORITY);
    this.item.name = "contextd context";
    this.subscriptions = [
      sessions.status.onDidChange(() => this.render()),
      sessions.status.onDidRemove(() => this.render()),
      connection.onDidChangeState(() => this.render()),
    ];
    this.render();
  }

  /** Re-reads the settings the item depends on. */
  render(): void {
    const status = this.sessions.status.shown();
    if (status) this.renderSession(status);
    else this.renderIdle();
    this.item.show();
  }

  private renderSession(status: SessionStatus): void {
    const item = this.item;
    const connection = this.connection.state;
    const connected = connection.kind === "connected";
    const pinned = this.sessions.status.pinned === status.sessionId;
    // Once the window knows several sessions, the item says which one it shows.
    const withName = pinned || this.sessions.status.all().length > 1;
    item.text = statusText(status, { withName, connection, pinned });
    item.backgroundColor = connected ? BACKGROUND[statusLevel(status)] : BACKGROUND.error;
    const lines = connected
      ? statusTooltip(status, Date.now(), { autoCompaction: this.settings.autoCompaction() })
      : disconnectedTooltip(status, connection, Date.now());
    if (connected && pinned) lines.splice(1, 0, "Pinned: the item stays on this session (Session Actions → Unpin)");
    item.tooltip = new vscode.MarkdownString(lines.join("  \n"), true);
    item.accessibilityInformation = { label: statusAccessibilityLabel(status, connection) };
    item.command = connected
      ? { title: "Session Actions", command: SHOW_ACTIONS_COMMAND, arguments: [status.sessionId] }
      : { title: "Restart Daemon", command: RESTART_COMMAND };
  }

  /** No session yet: say whether the daemon is there, and offer the way to a first session. */
  private renderIdle(): void {
    const item = this.item;
    const connection = this.connection.state;
    item.backgroundColor = connection.kind === "disconnected" ? BACKGROUND.error : undefined;
    if (connection.kind === "connected") {
      item.text = "$(database) contextd";
      item.tooltip = new vscode.MarkdownString(
        "**contextd** — connected, no session in this workspace yet  \n" +
          "A session shows here as soon as an agent or a script works in this workspace, or contextd follows your " +
          "agent's transcript (Claude Code, Codex, pi).  \n\nClick to get started",
      );
      item.accessibilityInformation = { label: "contextd: connected to the daemon, no session in this workspace yet" };
      item.command = { title: "Get Started", command: GET_STARTED_COMMAND };
      return;
    }
    const disconnected = connection.kind === "disconnected";
    item.text = disconnected ? "$(debug-disconnect) contextd disconnected" : "$(sync~spin) contextd connecting…";
    item.tooltip = disconnected ? `contextd: disconnected (${connection.reason}). Click to restart the daemon` : "contextd: connecting to the daemon…";
    item.accessibilityInformation = {
      label: disconnected ? `contextd: disconnected from the daemon, ${connection.reason}` : "contextd: connecting to the daemon",
    };
    item.command = { title: "Restart Daemon", command: RESTART_COMMAND };
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
    this.item.dispose();
  }
}
