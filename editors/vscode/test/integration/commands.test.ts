/**
 * The palette commands with a scripted editor UI and the real daemon behind them.
 * Commands whose daemon method has not landed yet skip themselves at run time.
 */
import { readdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished, TestContext } from "vitest";
import * as commands from "../../src/commands";
import { CompactionProgress } from "../../src/compactionProgress";
import { statusTooltip } from "../../src/format";
import { Method } from "../../src/protocol";
import type { TreeRow } from "../../src/treeItems";
import { eventually, settingsWith, TestDaemon } from "../support/daemon";
import { FakeUi, MemorySettings } from "../support/fakeUi";
import { conversation, user } from "../support/messages";
import { SummarizerServer } from "../support/summarizerServer";

let daemon: TestDaemon;
let summarizer: SummarizerServer;
let ui: FakeUi;
let settings: MemorySettings;
let progress: CompactionProgress;
let ctx: commands.CommandContext;

/** Small budgets so that a short conversation has something to compact. */
function testSettings(extra: Record<string, Record<string, unknown>> = {}) {
  return settingsWith({
    ...extra,
    compaction: { keepRecentTokens: 1500, ...extra.compaction },
    pruning: { protectTokens: 500, minimumSavings: 200, ...extra.pruning },
    summarizer: { provider: "remote", remoteEndpoint: summarizer.endpoint, maxRetries: 0, timeoutSeconds: 30, ...extra.summarizer },
  });
}

beforeAll(async () => {
  summarizer = await SummarizerServer.start();
  daemon = await TestDaemon.start({ settings: testSettings() });
});

afterAll(async () => {
  await daemon?.stop();
  await summarizer?.stop();
});

beforeEach(() => {
  ui = new FakeUi();
  settings = new MemorySettings();
  progress?.dispose();
  progress = new CompactionProgress(daemon.sessions, ui);
  ctx = { ui, sessions: daemon.sessions, settings };
  summarizer.behaviour = { kind: "summary", text: "## Goal\nFix the failing test." };
});

/** A method the daemon lost fails the test: "method not found" is never a skip. */
async function requireMethod(_context: TestContext, method: string): Promise<void> {
  expect(await daemon.supports(method), `the daemon answers ${method} with "method not found"`).toBe(true);
}

/** A session with a conversation long enough to compact; it becomes the current one. */
async function sessionWithHistory(name: string, turns = 10): Promise<string> {
  const { sessionId } = await daemon.sessions.open({ name });
  await daemon.sessions.append(sessionId, conversation(turns, 300));
  return sessionId;
}

function tokensOf(sessionId: string): number {
  return daemon.sessions.status.get(sessionId)!.usage!.tokens;
}

const pickEntry = (predicate: (row: TreeRow) => boolean) => (items: Array<{ value: unknown }>) =>
  items.find((item) => predicate(item.value as TreeRow)) as never;

describe("Switch Session", () => {
  it("opens a session the daemon lists and makes it current", async () => {
    const { sessionId } = await daemon.sessions.open({ name: "listed" });
    await daemon.sessions.close(sessionId);
    const other = await daemon.sessions.open({ name: "other" });
    ui.willPick("listed");
    expect(await commands.switchSession(ctx)).toBe(sessionId);
    expect(daemon.sessions.current).toBe(sessionId);
    expect(daemon.sessions.status.get(sessionId)?.name).toBe("listed");
    // The session shown comes first and preselected; a new session is the last choice, never Enter's.
    const shown = ui.picks[0].items.map((item) => item.label);
    expect(shown.at(-1)).toBe("$(add) New session");
    expect(ui.picks[0].options.active).toBe(other.sessionId);
    expect(ui.picks[0].items.find((i) => i.label === "listed")?.description).toMatch(/^\d+ tokens · \d+ entries · just now$/);
  });

  it("starts a new named session", async () => {
    ui.willPick("New session").willType("refactor parser");
    const sessionId = await commands.switchSession(ctx);
    expect(sessionId).toBeDefined();
    expect(daemon.sessions.current).toBe(sessionId);
    const { sessions } = await daemon.sessions.list();
    expect(sessions.find((s) => s.sessionId === sessionId)?.name).toBe("refactor parser");
  });

  it("lists a damaged session file with its reason and says why instead of opening it", async () => {
    const { sessionId: kept } = await daemon.sessions.open({ name: "kept" });
    const [sessions] = readdirSync(join(daemon.dataDir, "workspaces")).map((slug) => join(daemon.dataDir, "workspaces", slug, "sessions"));
    const broken = join(sessions, "broken.jsonl");
    writeFileSync(broken, Buffer.from([0, 0xff, 0xfe]));
    onTestFinished(() => unlinkSync(broken));
    ui.willPick("broken");
    expect(await commands.switchSession(ctx)).toBeUndefined();
    const row = ui.picks[0].items.find((item) => item.label === "$(warning) broken");
    expect(row?.description).toBe("damaged: its first line is not a session header");
    expect(ui.messages("info")).toEqual([
      "contextd: the session broken is damaged and cannot be opened: its first line is not a session header.",
    ]);
    expect(ui.messages("error")).toEqual([]);
    expect(daemon.sessions.current).toBe(kept);
  });

  it("changes nothing when dismissed", async () => {
    const before = daemon.sessions.current;
    ui.willDismissPick();
    expect(await commands.switchSession(ctx)).toBeUndefined();
    expect(daemon.sessions.current).toBe(before);
  });
});

describe("Delete Session", () => {
  it("deletes the chosen session once confirmed: gone from the listing and from the window", async () => {
    const { sessionId: kept } = await daemon.sessions.open({ name: "keep me" });
    const { sessionId } = await daemon.sessions.open({ name: "throwaway" });
    await daemon.sessions.append(sessionId, [user("Try something")]);
    ui.willPick("throwaway").willPress("Delete");
    await commands.deleteSession(ctx);
    const confirmation = ui.shown.find((s) => s.options?.modal);
    expect(confirmation).toMatchObject({ message: "Delete the contextd session throwaway?", actions: ["Delete"] });
    expect(confirmation?.options?.detail).toMatch(/cannot be undone/);
    expect(ui.messages("info").at(-1)).toBe("contextd: deleted the session throwaway.");
    const { sessions } = await daemon.sessions.list();
    expect(sessions.map((s) => s.sessionId)).not.toContain(sessionId);
    expect(sessions.map((s) => s.sessionId)).toContain(kept);
    expect(daemon.sessions.status.has(sessionId)).toBe(false);
    expect(daemon.sessions.current).not.toBe(sessionId);
  });

  it("keeps the session when the confirmation is dismissed", async () => {
    const { sessionId } = await daemon.sessions.open({ name: "second thoughts" });
    ui.willPick("second thoughts");
    await commands.deleteSession(ctx);
    expect((await daemon.sessions.list()).sessions.map((s) => s.sessionId)).toContain(sessionId);
    expect(daemon.sessions.status.has(sessionId)).toBe(true);
    expect(ui.messages("info").filter((m) => m.startsWith("contextd: deleted"))).toEqual([]);
  });
});

describe("session actions (the status bar's click)", () => {
  it("act on the clicked session", async () => {
    const { sessionId: clicked } = await daemon.sessions.open({ name: "clicked" });
    await daemon.sessions.open({ name: "another" });
    ui.willPick("Toggle Auto-compaction");
    await commands.showActions(ctx, clicked);
    expect(daemon.sessions.current).toBe(clicked);
    expect(ui.picks[0].options.title).toBe("contextd: clicked");
    expect(settings.updates).toEqual([["compaction.enabled", false]]);
  });
});

describe("Toggle Auto-compaction", () => {
  it("flips the setting and says which way", async () => {
    await commands.toggleAutoCompaction(ctx);
    expect(settings.get("compaction.enabled")).toBe(false);
    await commands.toggleAutoCompaction(ctx);
    expect(settings.get("compaction.enabled")).toBe(true);
    expect(ui.messages("info")).toEqual(["contextd: auto-compaction off.", "contextd: auto-compaction on."]);
  });
});

describe("Get Started (the idle item's click)", () => {
  it("offers to follow the workspace's agents, and one click turns following on for the workspace", async () => {
    settings.values.set("follow.enabled", false);
    ui.willPick("Follow Claude Code / Codex / pi sessions of this workspace");
    await commands.getStarted(ctx);
    expect(ui.picks[0].items.map((item) => item.label)).toEqual([
      "$(eye) Follow Claude Code / Codex / pi sessions of this workspace",
      "$(book) How an agent or a script feeds a session",
      "$(add) New session",
    ]);
    expect(settings.updates).toEqual([["follow.enabled", true, "workspace"]]);
    expect(ui.messages("info")[0]).toMatch(/^contextd: following Claude Code, Codex and pi sessions of this workspace/);
  });

  it("offers the walkthrough, and no follow when following is on", async () => {
    settings.values.set("follow.enabled", true);
    ui.willPick("How an agent or a script feeds a session");
    await commands.getStarted(ctx);
    expect(ui.picks[0].items.some((item) => item.label.includes("Follow"))).toBe(false);
    expect(ui.messages("walkthrough")).toHaveLength(1);
  });
});

describe("Pin", () => {
  it("keeps the status bar on the session whichever changes, until unpinned", async () => {
    const pinned = await daemon.sessions.open({ name: "pinned" });
    await commands.togglePin(ctx, pinned.sessionId);
    const other = await daemon.sessions.open({ name: "changes later" });
    await daemon.sessions.append(other.sessionId, [user("Something new")]);
    expect(daemon.sessions.status.shown()?.sessionId).toBe(pinned.sessionId);
    await commands.togglePin(ctx, pinned.sessionId);
    expect(daemon.sessions.status.shown()?.sessionId).toBe(other.sessionId);
  });
});

describe("Compact Now", () => {
  it("compacts with the user's instructions, with progress, and shows the result", async (context) => {
    await requireMethod(context, Method.compact);
    const sessionId = await sessionWithHistory("compact me");
    const before = tokensOf(sessionId);
    ui.willType("Keep the exact failing assertion");
    await commands.compactNow(ctx);
    expect(ui.messages("error")).toEqual([]);
    expect(ui.messages("info")[0]).toMatch(/^contextd: compacted compact me from \S+ to \S+ tokens\.$/);
    expect(summarizer.requests.at(-1)?.prompt).toContain("Keep the exact failing assertion");
    const status = daemon.sessions.status.get(sessionId)!;
    expect(status.compacting).toBeUndefined();
    expect(status.lastCompaction).toMatchObject({ outcome: "compacted", reason: "manual", tokensBefore: before });
    await eventually(() => tokensOf(sessionId) < before);
    expect(ui.progresses.map((p) => [p.title, p.done])).toEqual([["contextd: compacting compact me (manual)…", true]]);
    // The daemon's $/progress for this compaction shows in the notification.
    const started = daemon.notificationsOf("contextd/compactionStarted").find((n) => n.sessionId === sessionId);
    const ours = daemon.progress.filter((p) => String(p.token).includes(started.compactionId));
    expect(ours.map((p) => p.value.kind)).toEqual(expect.arrayContaining(["begin", "end"]));
    const begin = ours.find((p) => p.value.kind === "begin")!.value.message;
    expect(ui.progresses[0].reports.map((r) => r.message)).toContain(begin);
    const finished = daemon.notificationsOf("contextd/compactionFinished").find((n) => n.sessionId === sessionId);
    expect(finished).toMatchObject({ reason: "manual", outcome: "compacted", compactionId: started.compactionId, willRetry: false });
    const context2 = await daemon.sessions.context(sessionId);
    expect(JSON.stringify(context2.messages[0])).toContain("Fix the failing test.");
  });

  it("says when there is nothing to compact", async (context) => {
    await requireMethod(context, Method.compact);
    const { sessionId } = await daemon.sessions.open({ name: "tiny" });
    await daemon.sessions.append(sessionId, [user("Hello")]);
    ui.willType("");
    await commands.compactNow(ctx);
    expect(ui.messages("info")[0]).toMatch(/^contextd: nothing to compact yet \(.+\)\.$/);
    expect(ui.messages("error")).toEqual([]);
    expect(daemon.sessions.status.get(sessionId)?.lastCompaction).toBeUndefined();
  });

  it("shows the daemon's error when the summarizer fails, and leaves the session as it was", async (context) => {
    await requireMethod(context, Method.compact);
    const sessionId = await sessionWithHistory("failing");
    const before = (await daemon.sessions.context(sessionId)).tokens;
    summarizer.behaviour = { kind: "fail", status: 500, body: { error: "model overloaded" } };
    ui.willType("");
    await commands.compactNow(ctx);
    const [error] = ui.messages("error");
    expect(error).toMatch(/^contextd: compaction failed: /);
    expect(error).toContain("500");
    expect(daemon.sessions.status.get(sessionId)?.lastCompaction).toMatchObject({ outcome: "failed" });
    expect((await daemon.sessions.context(sessionId)).tokens).toBe(before);
  });

  it("is cancelled from its progress notification with $/cancelRequest", async (context) => {
    await requireMethod(context, Method.compact);
    const sessionId = await sessionWithHistory("cancel me");
    const before = (await daemon.sessions.context(sessionId)).tokens;
    const asked = summarizer.requests.length;
    summarizer.behaviour = { kind: "hold" };
    ui.willType("");
    const running = commands.compactNow(ctx);
    await eventually(() => summarizer.requests.length > asked);
    const shown = await eventually(() => ui.progresses.find((p) => p.title.includes("cancel me")));
    shown.cancel();
    await running;
    expect(ui.messages("info")).toEqual(["contextd: compaction cancelled."]);
    expect(ui.messages("error")).toEqual([]);
    expect(shown.done).toBe(true);
    expect(daemon.sessions.status.get(sessionId)?.lastCompaction?.outcome).toBe("cancelled");
    const finished = await eventually(() =>
      daemon.notificationsOf("contextd/compactionFinished").find((n) => n.sessionId === sessionId),
    );
    expect(finished.outcome).toBe("cancelled");
    expect((await daemon.sessions.context(sessionId)).tokens).toBe(before);
    summarizer.release();
  });
});

describe("compactions the daemon starts", () => {
  it("show progress and are aborted by the cancel button", async (context) => {
    await requireMethod(context, Method.abort);
    const sessionId = await sessionWithHistory("auto", 4);
    summarizer.behaviour = { kind: "hold" };
    await daemon.configure(testSettings({ compaction: { thresholdTokens: tokensOf(sessionId) + 100 }, pruning: { enabled: false } }));
    try {
      await daemon.sessions.append(sessionId, conversation(3, 300).slice(1));
      const shown = await eventually(() => ui.progresses.find((p) => p.title === "contextd: compacting auto (threshold)…"));
      expect(daemon.sessions.status.get(sessionId)?.compacting?.reason).toBe("threshold");
      await eventually(() => shown.reports.some((r) => r.message));
      shown.cancel();
      await eventually(() => shown.done);
      expect(daemon.sessions.status.get(sessionId)?.lastCompaction?.outcome).toBe("aborted");
      expect(daemon.notificationsOf("contextd/compactionFinished").find((n) => n.sessionId === sessionId)?.outcome).toBe("aborted");
      expect(ui.messages("error")).toEqual([]);
    } finally {
      summarizer.release();
      await daemon.configure(testSettings());
    }
  });

  it("report their failure with the daemon's error text", async (context) => {
    await requireMethod(context, Method.compact);
    const sessionId = await sessionWithHistory("auto fails", 4);
    summarizer.behaviour = { kind: "fail", status: 400, body: { error: "bad prompt" } };
    await daemon.configure(testSettings({ compaction: { thresholdTokens: tokensOf(sessionId) + 100 }, pruning: { enabled: false } }));
    try {
      await daemon.sessions.append(sessionId, conversation(3, 300).slice(1));
      const error = await eventually(() => ui.messages("error")[0]);
      expect(error).toMatch(/^contextd: compaction of auto fails failed: .*400/);
      expect(ui.progresses[0]?.done).toBe(true);
    } finally {
      await daemon.configure(testSettings());
    }
  });

  it("that find nothing to compact say why in the tooltip, once", async (context) => {
    await requireMethod(context, Method.compact);
    const sessionId = await sessionWithHistory("all recent", 4);
    // Every entry is among the recent ones a compaction keeps: above the threshold, nothing to fold.
    const compaction = { thresholdTokens: tokensOf(sessionId) + 100, keepRecentTokens: 100_000 };
    await daemon.configure(testSettings({ compaction, pruning: { enabled: false } }));
    const finishedEvents = () => daemon.notificationsOf("contextd/compactionFinished").filter((n) => n.sessionId === sessionId);
    try {
      await daemon.sessions.append(sessionId, conversation(3, 300).slice(1));
      const [finished] = await eventually(() => (finishedEvents().length ? finishedEvents() : undefined));
      expect(finished).toMatchObject({ reason: "threshold", outcome: "skipped" });
      expect(finished.error).toMatch(/^nothing to compact: the history's [\d,]+ tokens fit in the 100,000 recent tokens/);
      const status = await eventually(() => {
        const shown = daemon.sessions.status.get(sessionId);
        return shown?.lastCompaction?.outcome === "skipped" ? shown : undefined;
      });
      const tooltip = statusTooltip(status, Date.now()).join("\n");
      expect(tooltip).toContain("Not compacted: the threshold compaction found nothing to compact: the history's");
      expect(tooltip).toContain("What to do: Hand Off continues in a fresh session");
      expect(ui.messages("error")).toEqual([]);

      // Still over the threshold: the next append does not say it again.
      await daemon.sessions.append(sessionId, conversation(2, 300).slice(1));
      await daemon.sessions.context(sessionId); // answered after the append's triggers ran
      expect(finishedEvents()).toHaveLength(1);
    } finally {
      await daemon.configure(testSettings());
    }
  });
});

describe("Compact Preview", () => {
  it("shows what would be summarized, kept and pruned without compacting", async (context) => {
    await requireMethod(context, Method.compact);
    const sessionId = await sessionWithHistory("preview");
    const before = (await daemon.sessions.context(sessionId)).tokens;
    await commands.compactPreview(ctx);
    const [shown] = ui.shown;
    expect(shown.message).toMatch(/^Compaction would take the context from [\d,]+ to about [\d,]+ tokens\.$/);
    expect(shown.options).toMatchObject({ modal: true });
    expect(shown.options?.detail).toMatch(/^Summarized \(dropped from the context\): \d+ entries/);
    expect(shown.options?.detail).toContain("Kept verbatim:");
    expect(shown.actions).toEqual(["Compact Now"]);
    expect((await daemon.sessions.context(sessionId)).tokens).toBe(before);
  });

  it("compacts from the preview's button", async (context) => {
    await requireMethod(context, Method.compact);
    const sessionId = await sessionWithHistory("preview then compact");
    ui.willPress("Compact Now");
    await commands.compactPreview(ctx);
    expect(ui.messages("info")[1]).toMatch(/^contextd: compacted preview then compact from/);
    expect(daemon.sessions.status.get(sessionId)?.lastCompaction?.outcome).toBe("compacted");
  });
});

describe("Hand Off to New Session", () => {
  it("continues in a new session that starts from the hand-off document", async (context) => {
    await requireMethod(context, Method.handoff);
    const from = await sessionWithHistory("hand me off");
    ui.willType("Finish the migration").willPress("Show Document");
    await commands.handoff(ctx);
    expect(ui.messages("error")).toEqual([]);
    const to = daemon.sessions.current!;
    expect(to).not.toBe(from);
    expect(ui.messages("info")[0]).toBe("contextd: handed off hand me off to the new session Finish the migration.");
    const [document] = ui.messages("document");
    expect(document.length).toBeGreaterThan(0);
    expect(ui.progresses.map((p) => [p.title, p.done])).toEqual([["contextd: writing the hand-off document for hand me off…", true]]);
    expect(summarizer.requests.at(-1)?.prompt).toContain("Finish the migration");
    const { sessions } = await daemon.sessions.list();
    expect(sessions.find((s) => s.sessionId === to)?.parentSession?.id).toBe(from);
    expect(daemon.sessions.status.get(to)!.usage!.tokens).toBeLessThan(tokensOf(from));
  });

  it("is cancelled from its progress notification, and no session is made", async (context) => {
    await requireMethod(context, Method.handoff);
    const from = await sessionWithHistory("stay here");
    const before = (await daemon.sessions.list()).sessions.length;
    const asked = summarizer.requests.length;
    summarizer.behaviour = { kind: "hold" };
    ui.willType("");
    const running = commands.handoff(ctx);
    await eventually(() => summarizer.requests.length > asked);
    const shown = await eventually(() => ui.progresses.find((p) => p.title.includes("stay here")));
    shown.cancel();
    await running;
    summarizer.release();
    expect(ui.messages("info")).toEqual(["contextd: hand-off cancelled."]);
    expect(daemon.sessions.current).toBe(from);
    expect((await daemon.sessions.list()).sessions.length).toBe(before);
    expect(daemon.sessions.status.get(from)?.compacting).toBeUndefined();
  });
});

describe("Go to Entry", () => {
  it("moves the session before a chosen user message and offers its text", async (context) => {
    await requireMethod(context, Method.navigate);
    const sessionId = await sessionWithHistory("navigate", 3);
    const tree = await daemon.sessions.tree(sessionId);
    const target = tree.nodes.find((n) => n.role === "user" && n.preview.startsWith("Continue with module 1"))!;
    ui.willPick(pickEntry((row) => row.node.id === target.id)).willPick("Just move").willPress("Copy Message");
    await commands.goToEntry(ctx);
    expect(ui.messages("error")).toEqual([]);
    const rows = ui.picks[0].items.map((item) => item.value as TreeRow);
    expect(rows.find((r) => r.isLeaf)?.node.id).toBe(tree.leafId);
    expect(ui.picks[0].options.active).toBe(rows.find((r) => r.isLeaf));
    expect(ui.messages("copy")).toEqual(["Continue with module 1."]);
    expect((await daemon.sessions.tree(sessionId)).leafId).toBe(target.parentId);
  });

  it("summarizes the branch it leaves when asked", async (context) => {
    await requireMethod(context, Method.navigate);
    const sessionId = await sessionWithHistory("branch summary", 3);
    const tree = await daemon.sessions.tree(sessionId);
    const target = tree.nodes.find((n) => n.role === "assistant" && n.preview.includes("Read module 0"))!;
    ui.willPick(pickEntry((row) => row.node.id === target.id)).willPick("Summarize the branch I leave");
    await commands.goToEntry(ctx);
    expect(ui.messages("error")).toEqual([]);
    expect(ui.progresses.map((p) => p.title)).toContain("contextd: summarizing the branch you leave…");
    const after = await daemon.sessions.tree(sessionId);
    const leaf = after.nodes.find((n) => n.id === after.leafId)!;
    expect(leaf.type).toBe("branch_summary");
    expect(leaf.parentId).toBe(target.id);
  });

  it("does nothing when the current leaf is chosen", async (context) => {
    await requireMethod(context, Method.tree);
    const sessionId = await sessionWithHistory("stay", 1);
    const { leafId } = await daemon.sessions.tree(sessionId);
    ui.willPick(pickEntry((row) => row.isLeaf));
    await commands.goToEntry(ctx);
    expect(ui.picks).toHaveLength(1);
    expect((await daemon.sessions.tree(sessionId)).leafId).toBe(leafId);
  });
});

describe("Fork From Here", () => {
  it("starts a new session whose history ends at the chosen entry", async (context) => {
    await requireMethod(context, Method.fork);
    const from = await sessionWithHistory("fork source", 3);
    const tree = await daemon.sessions.tree(from);
    const target = tree.nodes.find((n) => n.role === "assistant" && n.preview.includes("Read module 1"))!;
    ui.willPick(pickEntry((row) => row.node.id === target.id));
    await commands.fork(ctx);
    expect(ui.messages("error")).toEqual([]);
    const forked = daemon.sessions.current!;
    expect(forked).not.toBe(from);
    const { messages } = await daemon.sessions.context(forked);
    expect(JSON.stringify(messages.at(-1))).toContain("Read module 1");
    expect(ui.messages("info")[0]).toBe("contextd: forked fork source into the new session fork source (fork).");
  });
});

describe("Label Entry", () => {
  it("labels an entry and clears the label again", async (context) => {
    await requireMethod(context, Method.label);
    const sessionId = await sessionWithHistory("labels", 1);
    const first = (await daemon.sessions.tree(sessionId)).nodes[0];
    ui.willPick(pickEntry((row) => row.node.id === first.id)).willType("the ask");
    await commands.label(ctx);
    expect((await daemon.sessions.tree(sessionId)).nodes[0].label).toBe("the ask");
    ui.willPick(pickEntry((row) => row.node.id === first.id)).willType("");
    await commands.label(ctx);
    expect(ui.inputs[1].value).toBe("the ask");
    expect((await daemon.sessions.tree(sessionId)).nodes[0].label ?? null).toBeNull();
    expect(ui.messages("error")).toEqual([]);
  });
});

describe("Set Idle Compaction Timer", () => {
  it("sets a preset or custom timeout for the session and turns it off", async (context) => {
    await requireMethod(context, Method.idleConfigure);
    const sessionId = await sessionWithHistory("sleepy", 1);
    ui.willPick("5 minutes");
    await commands.setIdleTimer(ctx);
    ui.willPick("Custom…").willType("90");
    await commands.setIdleTimer(ctx);
    ui.willPick("Off");
    await commands.setIdleTimer(ctx);
    expect(ui.messages("error")).toEqual([]);
    expect(ui.messages("info")).toEqual([
      "contextd: sleepy compacts after 5 min idle, once above 100,000 tokens.",
      "contextd: sleepy compacts after 90 s idle, once above 100,000 tokens.",
      "contextd: idle compaction off for sleepy.",
    ]);
    expect(daemon.sessions.current).toBe(sessionId);
  });

  it("arms the timer, which compacts the idle session with progress", async (context) => {
    await requireMethod(context, Method.idleConfigure);
    const sessionId = await sessionWithHistory("idle big", 6);
    await daemon.configure(testSettings({ idle: { thresholdTokens: 1000 } }));
    try {
      ui.willPick("Custom…").willType("0.5");
      await commands.setIdleTimer(ctx);
      expect(ui.messages("info")[0]).toBe("contextd: idle big compacts after 0.5 s idle, once above 1,000 tokens.");
      const armed = await eventually(() => daemon.sessions.status.get(sessionId)?.idleTimer);
      expect(armed.state).toBe("armed");
      const shown = await eventually(() => ui.progresses.find((p) => p.title === "contextd: compacting idle big (idle)…"));
      await eventually(() => shown.done);
      expect(daemon.sessions.status.get(sessionId)?.lastCompaction).toMatchObject({ outcome: "compacted", reason: "idle" });
      expect(ui.messages("error")).toEqual([]);
    } finally {
      await daemon.configure(testSettings());
    }
  });

  it("refuses a timeout that is not a positive number", () => {
    expect(commands.parseSeconds("0")).toBeUndefined();
    expect(commands.parseSeconds("soon")).toBeUndefined();
    expect(commands.parseSeconds(" 45 ")).toBe(45);
  });
});

