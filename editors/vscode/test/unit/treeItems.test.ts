import { describe, expect, it } from "vitest";
import type { TreeNode, TreeResult } from "../../src/protocol";
import { entryText, SessionTreeElement, SessionTreeModel, treeRows } from "../../src/treeItems";

function tree(spec: Array<[id: string, parent: string | null, role: string, preview: string, label?: string]>, leafId: string): TreeResult {
  const children = new Map<string, string[]>();
  for (const [id, parent] of spec) if (parent) children.set(parent, [...(children.get(parent) ?? []), id]);
  const nodes: TreeNode[] = spec.map(([id, parentId, role, preview, label]) => ({
    id,
    parentId,
    type: role === "compaction" ? "compaction" : "message",
    role: role === "compaction" ? undefined : role,
    preview,
    label,
    tokens: 1_200,
    timestamp: "2026-11-23T12:00:00Z",
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

describe("the Session Tree view's model", () => {
  const labelOf = (element: SessionTreeElement) => (element.kind === "entry" ? element.node.preview : `branch ${element.first.preview}`);

  it("keeps a linear stretch flat and puts each branch under the entry where it splits", () => {
    const model = new SessionTreeModel(
      "s1",
      tree([["a", null, "user", "Fix it"], ["b", "a", "assistant", "Try 1"], ["c", "a", "assistant", "Try 2"], ["d", "c", "user", "Good"]], "d"),
    );
    const roots = model.roots();
    expect(roots.map(labelOf)).toEqual(["Fix it"]);
    const branches = model.children(roots[0]);
    expect(branches.map(labelOf)).toEqual(["branch Try 1", "branch Try 2"]);
    expect(branches.map((b) => b.kind === "branch" && b.containsLeaf)).toEqual([false, true]);
    const current = model.children(branches[1]);
    expect(current.map(labelOf)).toEqual(["Try 2", "Good"]);
    expect(current.map((e) => e.kind === "entry" && e.isLeaf)).toEqual([false, true]);
    expect(model.children(branches[0]).map((e) => e.kind === "entry" && e.onPath)).toEqual([false]);
    expect(model.parent(current[1])).toEqual(branches[1]);
    expect(model.parent(branches[1])).toEqual(roots[0]);
  });

  it("marks what a compaction folded away: the path's entries before its first kept entry", () => {
    const spec = tree([["a", null, "user", "Old"], ["b", "a", "assistant", "Older answer"], ["c", "b", "user", "Kept"], ["k", "c", "compaction", "summary"], ["e", "k", "user", "New"]], "e");
    spec.nodes.find((n) => n.id === "k")!.firstKeptEntryId = "c";
    const entries = new SessionTreeModel("s1", spec).roots();
    expect(entries.map((e) => e.kind === "entry" && e.folded)).toEqual([true, true, false, false, false]);
    expect(entries.find((e) => e.kind === "entry" && e.node.id === "k")).toMatchObject({ foldedCount: 2 });
  });
});

describe("an entry's text", () => {
  const names = { sessionName: "fix tests (fork)", nameOf: (id: string) => (id === "01JCSOURCE00000000" ? "fix tests" : undefined) };

  it("names a hand-off's source session by its name, else by a short id", () => {
    expect(entryText({ type: "handoff", preview: "handoff from 01JCSOURCE00000000: # Goal finish it" }, names)).toBe(
      "hand-off from fix tests: # Goal finish it",
    );
    expect(entryText({ type: "handoff", preview: "handoff from 01JCOTHER000000000: # Goal" }, names)).toBe("hand-off from …00000000: # Goal");
  });

  it("marks a name the session no longer has, as a fork's copy of its parent's", () => {
    expect(entryText({ type: "session_info", preview: "name: fix tests" }, names)).toBe("earlier name: fix tests");
    expect(entryText({ type: "session_info", preview: "name: fix tests (fork)" }, names)).toBe("named fix tests (fork)");
  });

  it("leaves every other preview as the daemon wrote it", () => {
    expect(entryText({ type: "message", preview: "handoff from x: y" }, names)).toBe("handoff from x: y");
  });
});
