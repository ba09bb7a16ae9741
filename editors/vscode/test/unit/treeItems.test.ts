import { describe, expect, it } from "vitest";
import type { TreeNode, TreeResult } from "../../src/protocol";
import { treeRows } from "../../src/treeItems";

function tree(spec: Array<[id: string, parent: string | null, role: string, preview: string, label?: string]>, leafId: string): TreeResult {
  const children = new Map<string, string[]>();
  for (const [id, parent] of spec) if (parent) children.set(parent, [...(children.get(parent) ?? []), id]);
  const nodes: TreeNode[] = spec.map(([id, parentId, role, preview, label]) => ({
    id,
    parentId,
    type: role === "compaction" ? "compaction" : "message",
    role: role === "compaction" ? null : role,
    preview,
    label: label ?? null,
    tokens: 1_200,
    children: children.get(id) ?? [],
  }));
  return { nodes, leafId };
}

const NBSP3 = "\u00a0\u00a0\u00a0";

describe("session tree rows", () => {
  it("keeps a linear history flat, in order, marking the leaf", () => {
    const rows = treeRows(tree([["a", null, "user", "Fix the test"], ["b", "a", "assistant", "Reading"], ["c", "b", "toolResult", "def main"]], "c"));
    expect(rows.map((r) => r.label)).toEqual([
      "$(account) Fix the test",
      "$(hubot) Reading",
      "$(arrow-right) $(tools) def main",
    ]);
    expect(rows.map((r) => r.isLeaf)).toEqual([false, false, true]);
    expect(rows[2].description).toBe("1.2k tokens · current");
  });

  it("indents the branches under a fork, depth first, and knows the current path", () => {
    const rows = treeRows(
      tree(
        [
          ["a", null, "user", "Start"],
          ["b", "a", "assistant", "Plan A"],
          ["c", "b", "user", "Go on with A"],
          ["d", "a", "assistant", "Plan B", "better plan"],
          ["e", "d", "user", "Go on with B"],
        ],
        "e",
      ),
    );
    expect(rows.map((r) => [r.node.id, r.depth])).toEqual([["a", 0], ["b", 1], ["c", 1], ["d", 1], ["e", 1]]);
    expect(rows[1].label.startsWith(`${NBSP3}$(hubot)`)).toBe(true);
    expect(rows.filter((r) => r.onPath).map((r) => r.node.id)).toEqual(["a", "d", "e"]);
    expect(rows[3].description).toBe("$(tag) better plan · 1.2k tokens");
  });

  it("shows compactions and long previews on one line", () => {
    const rows = treeRows(tree([["a", null, "user", "x".repeat(300)], ["b", "a", "compaction", "## Goal\nFix\nthe tests"]], "b"));
    expect(rows[0].label.length).toBeLessThan(120);
    expect(rows[0].label.endsWith("…")).toBe(true);
    expect(rows[1].label).toBe("$(arrow-right) $(fold) ## Goal Fix the tests");
  });

  it("handles a deep history without recursion", () => {
    const spec: Array<[string, string | null, string, string]> = Array.from({ length: 20_000 }, (_, i) => [
      `n${i}`, i ? `n${i - 1}` : null, i % 2 ? "assistant" : "user", `m${i}`,
    ]);
    const rows = treeRows(tree(spec, "n19999"));
    expect(rows).toHaveLength(20_000);
    expect(rows.every((r) => r.depth === 0 && r.onPath)).toBe(true);
  });
});
