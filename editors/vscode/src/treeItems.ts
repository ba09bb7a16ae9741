/**
 * A session tree as quick pick rows: depth-first in the order entries were appended,
 * indented only where the history branches so that a long linear chat stays flat.
 */
import { formatTokens, truncate } from "./format";
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
