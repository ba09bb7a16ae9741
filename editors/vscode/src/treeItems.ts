/**
 * A session tree as quick pick rows: depth-first in the order entries were appended,
 * indented only where the history branches so that a long linear chat stays flat.
 */
import { formatTokens, shortId, truncate } from "./format";
import type { TreeNode, TreeResult } from "./protocol";

export interface TreeRow {
  node: TreeNode;
  depth: number;
  isLeaf: boolean;
  /** On the path from the root to the current leaf: the context the model sees. */
  onPath: boolean;
  label: string;
  description: string;
}

const ICONS: Record<string, string> = {
  user: "$(account)",
  assistant: "$(hubot)",
  toolResult: "$(tools)",
  compaction: "$(fold)",
  prune: "$(trash)",
  branch_summary: "$(git-branch)",
  handoff: "$(arrow-swap)",
  model_change: "$(settings-gear)",
  session_info: "$(info)",
};

const INDENT = "\u00a0\u00a0\u00a0";
const PREVIEW_LENGTH = 100;

/** A tree view row's text is cut here (its tooltip has more): the sidebar's default width keeps its figure in view. */
export const ENTRY_LABEL_LENGTH = 22;

/** What the tree knows of the sessions an entry may name. */
export interface SessionNames {
  /** The session the tree shows. */
  sessionName?: string;
  /** Another session's name, when this window knows it. */
  nameOf(sessionId: string): string | undefined;
}

const HANDOFF_PREVIEW = /^handoff from (\S+): /;
const NAME_PREVIEW = /^name: /;

/**
 * An entry's text for a person: the daemon's preview, with the sessions it names by id named
 * by name, and a name the session no longer has (a fork's copy of its parent's) marked so.
 */
export function entryText(node: Pick<TreeNode, "type" | "preview">, names: SessionNames): string {
  const handoff = node.type === "handoff" ? HANDOFF_PREVIEW.exec(node.preview) : null;
  if (handoff) {
    const from = names.nameOf(handoff[1]) ?? shortId(handoff[1]);
    return `hand-off from ${from}: ${node.preview.slice(handoff[0].length)}`;
  }
  if (node.type === "session_info" && NAME_PREVIEW.test(node.preview)) {
    const name = node.preview.replace(NAME_PREVIEW, "");
    return name === names.sessionName || names.sessionName === undefined ? `named ${name}` : `earlier name: ${name}`;
  }
  return node.preview;
}

export function treeRows(tree: TreeResult): TreeRow[] {
  const byId = new Map(tree.nodes.map((node) => [node.id, node]));
  const onPath = pathToRoot(tree.leafId, byId);
  const rows: TreeRow[] = [];
  const roots = tree.nodes.filter((node) => node.parentId === null || !byId.has(node.parentId));
  // An explicit stack instead of recursion: a session can hold many thousand entries.
  const stack: Array<{ node: TreeNode; depth: number }> = roots
    .map((node) => ({ node, depth: roots.length > 1 ? 1 : 0 }))
    .reverse();
  while (stack.length) {
    const { node, depth } = stack.pop()!;
    rows.push(row(node, depth, node.id === tree.leafId, onPath.has(node.id)));
    const children = node.children.map((id) => byId.get(id)).filter((c): c is TreeNode => !!c);
    const childDepth = children.length > 1 ? depth + 1 : depth;
    for (const child of [...children].reverse()) stack.push({ node: child, depth: childDepth });
  }
  return rows;
}

function pathToRoot(leafId: string | null, byId: Map<string, TreeNode>): Set<string> {
  const path = new Set<string>();
  for (let id = leafId; id && !path.has(id); id = byId.get(id)?.parentId ?? null) path.add(id);
  return path;
}

function row(node: TreeNode, depth: number, isLeaf: boolean, onPath: boolean): TreeRow {
  const icon = ICONS[node.role ?? ""] ?? ICONS[node.type] ?? "$(circle-small)";
  const marker = isLeaf ? "$(arrow-right) " : "";
  const description = [
    node.label ? `$(tag) ${node.label}` : "",
    `${formatTokens(node.tokens)} tokens`,
    isLeaf ? "current" : "",
  ]
    .filter(Boolean)
    .join(" · ");
  return {
    node,
    depth,
    isLeaf,
    onPath,
    label: `${INDENT.repeat(depth)}${marker}${icon} ${truncate(node.preview, PREVIEW_LENGTH) || node.type}`,
    description,
  };
}

/**
 * A session tree as the rows of a tree view: a linear stretch of history is one flat list;
 * where the history branches, the branching entry holds one collapsible branch per child.
 */
export type SessionTreeElement = EntryElement | BranchElement;

export interface EntryElement {
  kind: "entry";
  sessionId: string;
  node: TreeNode;
  isLeaf: boolean;
  /** On the path from the root to the leaf: the context the model sees. */
  onPath: boolean;
  /** Summarized by the latest compaction on the path: only its summary reaches the model. */
  folded: boolean;
  /** Compaction nodes: how many entries they folded away. */
  foldedCount?: number;
}

export interface BranchElement {
  kind: "branch";
  sessionId: string;
  first: TreeNode;
  containsLeaf: boolean;
  entries: number;
}

export class SessionTreeModel {
  private readonly byId: Map<string, TreeNode>;
  private readonly path: string[];
  private readonly folded = new Map<string, number>();
  private readonly foldedBy = new Set<string>();

  constructor(
    readonly sessionId: string,
    readonly tree: TreeResult,
  ) {
    this.byId = new Map(tree.nodes.map((node) => [node.id, node]));
    this.path = [...pathToRoot(tree.leafId, this.byId)].reverse();
    this.markFolded();
  }

  /** Every compaction on the path folds the path's entries before its first kept entry. */
  private markFolded(): void {
    for (const [index, id] of this.path.entries()) {
      const node = this.byId.get(id)!;
      if (node.type !== "compaction" || !node.firstKeptEntryId) continue;
      const kept = this.path.indexOf(node.firstKeptEntryId);
      const end = kept >= 0 && kept < index ? kept : index;
      const before = this.path.slice(0, end).filter((entry) => !this.foldedBy.has(entry));
      for (const entry of before) this.foldedBy.add(entry);
      this.folded.set(id, before.length);
    }
  }

  roots(): SessionTreeElement[] {
    const roots = this.tree.nodes.filter((node) => node.parentId === null || !this.byId.has(node.parentId));
    return roots.flatMap((root) => this.stretch(root));
  }

  children(element: SessionTreeElement): SessionTreeElement[] {
    if (element.kind === "branch") return this.stretch(element.first);
    const children = this.childNodes(element.node);
    if (children.length < 2) return [];
    return children.map((first) => this.branch(first));
  }

  private branch(first: TreeNode): BranchElement {
    return { kind: "branch", sessionId: this.sessionId, first, containsLeaf: this.path.includes(first.id), entries: this.size(first) };
  }

  /** The entry and its single-child descendants, up to the next branching (or last) entry. */
  private stretch(start: TreeNode): EntryElement[] {
    const entries: EntryElement[] = [];
    for (let node: TreeNode | undefined = start; node; ) {
      entries.push(this.entry(node));
      const children = this.childNodes(node);
      node = children.length === 1 ? children[0] : undefined;
    }
    return entries;
  }

  private entry(node: TreeNode): EntryElement {
    return {
      kind: "entry",
      sessionId: this.sessionId,
      node,
      isLeaf: node.id === this.tree.leafId,
      onPath: this.path.includes(node.id),
      folded: this.foldedBy.has(node.id),
      foldedCount: this.folded.get(node.id),
    };
  }

  private childNodes(node: TreeNode): TreeNode[] {
    return node.children.map((id) => this.byId.get(id)).filter((child): child is TreeNode => !!child);
  }

  private size(node: TreeNode): number {
    let count = 0;
    const stack = [node];
    while (stack.length) {
      count += 1;
      stack.push(...this.childNodes(stack.pop()!));
    }
    return count;
  }

  /** The row that holds an entry: for reveal() and getParent(). */
  parent(element: SessionTreeElement): SessionTreeElement | undefined {
    if (element.kind === "branch") {
      const parent = element.first.parentId ? this.byId.get(element.first.parentId) : undefined;
      return parent && this.entry(parent);
    }
    const first = this.stretchStart(element.node);
    return first.parentId && this.byId.has(first.parentId) ? this.branch(first) : undefined;
  }

  /** The first entry of the flat stretch an entry belongs to. */
  private stretchStart(node: TreeNode): TreeNode {
    let current = node;
    for (;;) {
      const parent = current.parentId ? this.byId.get(current.parentId) : undefined;
      if (!parent || parent.children.length !== 1) return current;
      current = parent;
    }
  }

  /** The element of the current leaf. */
  leaf(): EntryElement | undefined {
    const node = this.tree.leafId ? this.byId.get(this.tree.leafId) : undefined;
    return node && this.entry(node);
  }
}
