/** One status bar item per session of this window, rendered from the status model. */
import * as vscode from "vscode";
import { Level, statusLevel, statusText, statusTooltip } from "./format";
import type { ContextdSessions } from "./sessions";
import type { SessionStatus } from "./statusModel";

const BACKGROUND: Record<Level, vscode.ThemeColor | undefined> = {
  normal: undefined,
  warning: new vscode.ThemeColor("statusBarItem.warningBackground"),
  error: new vscode.ThemeColor("statusBarItem.errorBackground"),
};

export const SHOW_ACTIONS_COMMAND = "contextd.showActions";

export class SessionStatusBar implements vscode.Disposable {
  private readonly items = new Map<string, vscode.StatusBarItem>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly sessions: Pick<ContextdSessions, "status">) {
    this.subscriptions = [
      sessions.status.onDidChange((status) => this.renderAll(status.sessionId)),
      sessions.status.onDidRemove((sessionId) => this.remove(sessionId)),
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
    item.text = statusText(status, { withName });
    item.backgroundColor = BACKGROUND[statusLevel(status)];
    const tooltip = new vscode.MarkdownString(statusTooltip(status, Date.now()).join("  \n"), true);
    item.tooltip = tooltip;
    item.command = { title: "Session Actions", command: SHOW_ACTIONS_COMMAND, arguments: [status.sessionId] };
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
