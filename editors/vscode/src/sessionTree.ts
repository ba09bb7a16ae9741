/**
 * The Session Tree view: the current session's entries (branches, labels, compactions and
 * what they folded away, the leaf marked), refreshed when the daemon reports a change.
 * Its context menu moves the leaf, forks, labels and summarizes (commands.ts).
 */
import * as vscode from "vscode";
import type { ConnectionState } from "./daemonConnection";
import { formatTokens, sessionTitle, truncate } from "./format";
import { errorText } from "./rpc";
import type { ContextdSessions } from "./sessions";
import type { ConnectionStatus } from "./statusBar";
import { ENTRY_LABEL_LENGTH, EntryElement, entryText, SessionTreeElement, SessionTreeModel } from "./treeItems";

export const SESSION_TREE_VIEW = "contextd.sessionTree";

const ICONS: Record<string, string> = {
  user: "account",
  assistant: "hubot",
  toolResult: "tools",
  compaction: "fold",
  prune: "trash",
  branch_summary: "git-branch",
  handoff: "arrow-swap",
  model_change: "settings-gear",
  session_info: "info",
  instructions: "book",
};

type Sessions = Pick<ContextdSessions, "current" | "tree" | "status" | "onSessionChanged" | "onDidChangeCurrent">;

export class SessionTreeView implements vscode.TreeDataProvider<SessionTreeElement>, vscode.Disposable {
  private model: SessionTreeModel | undefined;
  private readonly changed = new vscode.EventEmitter<SessionTreeElement | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<SessionTreeElement>;
  private readonly subscriptions: vscode.Disposable[];
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;

  constructor(
    private readonly sessions: Sessions,
    connection: ConnectionStatus,
  ) {
    this.view = vscode.window.createTreeView(SESSION_TREE_VIEW, { treeDataProvider: this, showCollapseAll: true });
    this.subscriptions = [
      this.view,
      this.changed,
      sessions.onDidChangeCurrent(() => this.refresh()),
      sessions.onSessionChanged((event) => event.sessionId === sessions.current && this.refresh()),
      connection.onDidChangeState((state: ConnectionState) => state.kind === "connected" && this.refresh()),
    ];
  }

  /** Fetches the current session's tree again; changes arriving meanwhile fetch once more after. */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = this.load().finally(() => {
      this.refreshing = undefined;
      if (this.refreshAgain) {
        this.refreshAgain = false;
        void this.refresh();
      }
    });
    return this.refreshing;
  }

  private async load(): Promise<void> {
    const sessionId = this.sessions.current;
    try {
      this.model = sessionId ? new SessionTreeModel(sessionId, await this.sessions.tree(sessionId)) : undefined;
      this.view.message = undefined;
    } catch (error) {
      // Keep the last tree: the daemon may be restarting. Say why it may be stale.
      this.view.message = `Could not read the session tree: ${errorText(error)}`;
    }
    const status = sessionId ? this.sessions.status.get(sessionId) : undefined;
    this.view.description = status ? sessionTitle(status) : undefined;
    this.changed.fire(undefined);
  }

  getChildren(element?: SessionTreeElement): SessionTreeElement[] {
    if (!this.model) return [];
    return element ? this.model.children(element) : this.model.roots();
  }

  getParent(element: SessionTreeElement): SessionTreeElement | undefined {
    return this.model?.parent(element);
  }

  getTreeItem(element: SessionTreeElement): vscode.TreeItem {
    if (element.kind === "branch") {
      const item = new vscode.TreeItem(
        `branch: ${truncate(element.first.preview, 80) || element.first.type}`,
        element.containsLeaf ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
      );
      item.id = `branch:${element.first.id}`;
      item.iconPath = new vscode.ThemeIcon("git-branch");
      item.description = `${element.entries} ${element.entries === 1 ? "entry" : "entries"}${element.containsLeaf ? " · current" : ""}`;
      return item;
    }
    const status = this.sessions.status.get(element.sessionId);
    const names = { sessionName: status?.name, nameOf: (id: string) => this.sessions.status.get(id)?.name };
    return entryItem(element, entryText(element.node, names), this.model?.children(element).length ? true : false, Boolean(status?.source));
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
  }
}

/** `mirror`: a read-only mirror of another agent's session, whose menu offers only what does not write. */
function entryItem(element: EntryElement, text: string, hasBranches: boolean, mirror: boolean): vscode.TreeItem {
  const { node } = element;
  const item = new vscode.TreeItem(
    truncate(text, ENTRY_LABEL_LENGTH) || node.type,
    hasBranches ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
  );
  item.id = node.id;
  const icon = element.isLeaf ? "location" : (ICONS[node.role ?? ""] ?? ICONS[node.type] ?? "circle-small");
  // Entries off the current path (abandoned branches) and folded ones are dimmed.
  const dim = !element.onPath || element.folded;
  item.iconPath = new vscode.ThemeIcon(icon, dim ? new vscode.ThemeColor("disabledForeground") : undefined);
  // The figure first: a narrow view cuts the end of a row.
  item.description = [
    `${formatTokens(node.tokens)} tokens`,
    element.isLeaf ? "current" : "",
    node.label ? `🏷 ${node.label}` : "",
    element.folded ? "folded into a summary" : "",
    node.type === "compaction" && element.foldedCount !== undefined ? `folded ${element.foldedCount} entries` : "",
  ]
    .filter(Boolean)
    .join(" · ");
  item.tooltip = tooltip(element, text);
  item.contextValue = mirror ? "contextd.mirrorEntry" : element.isLeaf ? "contextd.entry.leaf" : "contextd.entry";
  item.accessibilityInformation = {
    label: `${node.role ?? node.type}${element.isLeaf ? ", current leaf" : ""}${node.label ? `, labelled ${node.label}` : ""}: ${truncate(text, 100)}`,
  };
  return item;
}

function tooltip(element: EntryElement, text: string): vscode.MarkdownString {
  const { node } = element;
  const lines = [`**${node.role ?? node.type}** \`${node.id}\``, `${formatTokens(node.tokens)} tokens`, "", truncate(text, 400)];
  if (node.type === "compaction" && node.tokensBefore !== undefined && node.tokensAfter !== undefined) {
    lines.push("", `Compacted ${formatTokens(node.tokensBefore)} → ${formatTokens(node.tokensAfter)} tokens`);
  }
  if (element.folded) lines.push("", "Folded into a compaction summary: the model sees the summary instead.");
  if (!element.onPath) lines.push("", "On a branch the session has left.");
  const markdown = new vscode.MarkdownString(lines.join("  \n"));
  markdown.supportThemeIcons = false;
  return markdown;
}
