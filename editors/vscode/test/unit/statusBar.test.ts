/** The status bar item, rendered into the stand-in `vscode` module. */
import { beforeEach, describe, expect, it } from "vitest";
import type { TokenUsage, WorkspaceActivity } from "../../src/protocol";
import type { ConnectionState } from "../../src/daemonConnection";
import { ConnectionStatus, SessionStatusBar } from "../../src/statusBar";
import { Emitter } from "vscode-jsonrpc";
import { StatusModel } from "../../src/statusModel";
import { createdItems, FakeStatusBarItem, MarkdownString, ThemeColor } from "../support/fakeVscode";

const usage = (sessionId: string, tokens: number): TokenUsage => ({
  sessionId, tokens, contextWindow: 200_000, percent: Math.round(tokens / 200) / 10, thresholdTokens: 170_000, source: "usage", model: "claude-sonnet-4-5",
}) as TokenUsage; // no calibration or breakdown: not shown here

const activity = (sessionId: string, tokens: number, overrides: Partial<WorkspaceActivity> = {}): WorkspaceActivity => ({
  sessionId, name: null, workspace: "/work/project", cause: "append", leafId: "e1", usage: usage(sessionId, tokens), updatedAt: "2026-11-23T12:00:00Z", ...overrides,
});

function setup(connection?: ConnectionStatus) {
  const status = new StatusModel();
  const bar = new SessionStatusBar({ status }, connection);
  const item = bar.item as unknown as FakeStatusBarItem;
  return { status, bar, item };
}

/** A session this window opened and shows. */
function opened(status: StatusModel, sessionId: string, name: string | undefined, tokens: number): void {
  status.track(sessionId, name);
  status.applyUsage(usage(sessionId, tokens));
  status.touch(sessionId);
}

describe("status bar", () => {
  beforeEach(() => {
    createdItems.length = 0;
  });

  it("says it is connected before any session, then reads the session's tokens, window and percent", () => {
    const { status, item } = setup();
    expect(item.visible).toBe(true);
    expect(item.text).toBe("$(database) contextd");
    expect((item.tooltip as MarkdownString).value).toContain("connected, no session in this workspace yet");
    expect(item.command).toEqual({ title: "Get Started", command: "contextd.getStarted" });
    opened(status, "s1", "fix tests", 84_000);
    expect(createdItems).toHaveLength(1);
    expect(item.text).toBe("$(database) 84k/200k 42%");
    expect(item.visible).toBe(true);
    expect(item.backgroundColor).toBeUndefined();
    expect(item.command).toEqual({ title: "Session Actions", command: "contextd.showActions", arguments: ["s1"] });
    expect((item.tooltip as MarkdownString).value).toContain("Model: claude-sonnet-4-5");
  });

  it("turns to warning above the threshold and to error above 95%", () => {
    const { status, item } = setup();
    opened(status, "s1", undefined, 171_000);
    expect((item.backgroundColor as ThemeColor).id).toBe("statusBarItem.warningBackground");
    status.applyUsage(usage("s1", 191_000));
    expect((item.backgroundColor as ThemeColor).id).toBe("statusBarItem.errorBackground");
    status.applyUsage(usage("s1", 30_000));
    expect(item.backgroundColor).toBeUndefined();
  });

  it("spins while compacting and shows the new figure and the summary line after", () => {
    const { status, item } = setup();
    opened(status, "s1", undefined, 171_000);
    status.compactionStarted({ sessionId: "s1", compactionId: "c1", reason: "threshold", tokensBefore: 171_000 });
    expect(item.text).toBe("$(sync~spin) compacting…");
    status.compactionFinished({
      sessionId: "s1", compactionId: "c1", reason: "threshold", outcome: "compacted", tokensBefore: 171_000, tokensAfter: 30_000,
      shortSummary: "Fix the month-end total — now: the rounding test", willRetry: false,
    });
    status.applyUsage(usage("s1", 30_000));
    expect(item.text).toBe("$(database) 30k/200k 15%");
    const tooltip = (item.tooltip as MarkdownString).value;
    expect(tooltip).toContain("Last compaction: compacted 171k → 30k tokens (threshold, just now)");
    expect(tooltip).toContain("Summary: Fix the month\\-end total — now: the rounding test");
  });

  it("shows the session that changed last, whoever changed it, named once there are several", () => {
    const { status, item } = setup();
    opened(status, "mine", "fix tests", 10_000);
    // A script appends to another session of the workspace: the item follows it.
    status.applyActivity(activity("script", 20_000, { name: "nightly agent" }));
    expect(item.text).toBe("$(database) 20k/200k 10% · nightly agent");
    expect(item.command).toMatchObject({ arguments: ["script"] });
    // Our own session changes again: it is shown again.
    status.applyActivity(activity("mine", 12_000));
    expect(item.text).toBe("$(database) 12k/200k 6% · fix tests");
    // A session merely opened elsewhere is no change to show.
    status.applyActivity(activity("script", 20_000, { cause: "open" }));
    expect(item.text).toBe("$(database) 12k/200k 6% · fix tests");
  });

  it("names a mirrored agent session after its agent, and says it is read-only", () => {
    const { status, item } = setup();
    status.applyActivity(
      activity("m1", 124_000, { name: "refactor parser", source: { agent: "claude-code", path: "/home/me/.claude/projects/p/a.jsonl" } }),
    );
    expect(item.text).toBe("$(database) 124k/200k 62% · Claude Code · refactor parser");
    expect((item.tooltip as MarkdownString).value).toContain("Read-only mirror of Claude Code's transcript `/home/me/.claude/projects/p/a.jsonl`");
    expect(item.accessibilityInformation?.label).toBe(
      "contextd session Claude Code · refactor parser: 124,000 of 200,000 tokens, 62 percent of the context window",
    );
  });

  it("shows the next latest session when the shown one is closed, and the idle item with none left", () => {
    const { status, item } = setup();
    opened(status, "s1", "one", 10_000);
    opened(status, "s2", "two", 20_000);
    expect(item.text).toBe("$(database) 20k/200k 10% · two");
    status.forget("s2");
    expect(item.text).toBe("$(database) 10k/200k 5%");
    status.forget("s1");
    expect(item.text).toBe("$(database) contextd");
  });

  it("keeps the figure whole ahead of a long name, which it shortens", () => {
    const { status, item } = setup();
    opened(status, "s1", "one", 10_000);
    status.applyActivity(activity("m1", 147_000, { name: "ok give me the full picture of the parser", source: { agent: "claude-code", path: "/p/a.jsonl" } }));
    expect(item.text).toBe("$(database) 147k/200k 74% · Claude Code · ok give me the full…");
  });

  it("stays on a pinned session whichever session changes, and says so", () => {
    const { status, item } = setup();
    opened(status, "s1", "one", 10_000);
    status.pin("s1");
    status.applyActivity(activity("script", 20_000, { name: "nightly agent" }));
    expect(item.text).toBe("$(pinned) 10k/200k 5% · one");
    expect((item.tooltip as MarkdownString).value).toContain("Pinned: the item stays on this session");
    status.pin(undefined);
    expect(item.text).toBe("$(database) 20k/200k 10% · nightly agent");
  });

  it("shows a mirror above contextd's threshold without the warning colour, and says who compacts it", () => {
    const { status, item } = setup();
    status.applyActivity(activity("m1", 171_000, { name: "refactor", source: { agent: "claude-code", path: "/p/a.jsonl" } }));
    status.applyAgentCompactions("m1", { count: 2, lastTokensBefore: 162_000 });
    expect(item.backgroundColor).toBeUndefined();
    const tooltip = (item.tooltip as MarkdownString).value;
    expect(tooltip).not.toContain("Compaction threshold");
    expect(tooltip).toContain("Claude Code compacts this session itself");
    expect(tooltip).toContain("Compactions in the transcript: 2, by Claude Code; the latest at 162k tokens");
    expect(tooltip).not.toContain("none seen by this window");
  });

  it("gives a mirror its agent's own compaction point and how the daemon worked it out", () => {
    const { status, item } = setup();
    const basis = "Claude Code's rule: its effective window (200,000 − 20,000 kept for the summary) − 13,000; CLAUDE_AUTOCOMPACT_PCT_OVERRIDE not set (default assumed); ~/.claude/settings.json not found";
    const agentCompaction = { enabled: true, tokens: 167_000, percent: 83.5, basis };
    const source = { agent: "claude-code", path: "/p/a.jsonl" } as const;
    status.applyActivity(activity("m1", 191_000, { name: "refactor", source, usage: { ...usage("m1", 191_000), agentCompaction } }));
    const tooltip = (item.tooltip as MarkdownString).value;
    expect(tooltip).toContain("Agent compacts at ~167k (83.5%)");
    expect(tooltip).toContain("How contextd knows: Claude Code's rule: its effective window \\(200,000 − 20,000");
    expect(tooltip).toContain("\\~/\\.claude/settings\\.json not found");
    expect(tooltip).toContain("Nearly full: Claude Code compacts it at ~167k; contextd does not.");
    const off = { enabled: false, tokens: null, percent: null, basis: "autoCompactEnabled is false in ~/.claude.json: Claude Code does not compact on its own (/compact still does)" };
    status.applyActivity(activity("m1", 191_000, { name: "refactor", source, usage: { ...usage("m1", 191_000), agentCompaction: off } }));
    const offTooltip = (item.tooltip as MarkdownString).value;
    expect(offTooltip).toContain("Agent compacts: never on its own (its auto-compaction is off)");
    expect(offTooltip).toContain("autoCompactEnabled is false in \\~/\\.claude\\.json");
    expect(offTooltip).toContain("Nearly full: Claude Code compacts it only when asked (/compact), its auto-compaction being off");
  });

  it("says in words what a screen reader should read", () => {
    const { status, item } = setup();
    opened(status, "s1", "fix tests", 171_000);
    expect(item.accessibilityInformation?.label).toBe(
      "contextd session fix tests: 171,000 of 200,000 tokens, 86 percent of the context window, above the compaction threshold",
    );
  });

  it("shows a disconnected state, not a stale figure, while the daemon is away, and the figure again after", () => {
    const changed = new Emitter<ConnectionState>();
    const connection = { state: { kind: "connected" } as ConnectionState, onDidChangeState: changed.event };
    const { status, item } = setup(connection);
    opened(status, "s1", "fix tests", 84_000);
    connection.state = { kind: "disconnected", reason: "the daemon stopped", retryAt: Date.now() + 2000 };
    changed.fire(connection.state);
    expect(item.text).toBe("$(debug-disconnect) disconnected");
    expect((item.backgroundColor as ThemeColor).id).toBe("statusBarItem.errorBackground");
    expect((item.tooltip as MarkdownString).value).toContain("Disconnected: the daemon stopped.  \nRestarting it in 2 s.");
    expect(item.command).toEqual({ title: "Restart Daemon", command: "contextd.restartDaemon" });
    expect(item.accessibilityInformation?.label).toBe("contextd session fix tests: disconnected from the daemon, the daemon stopped");
    connection.state = { kind: "connected" };
    changed.fire(connection.state);
    expect(item.text).toBe("$(database) 84k/200k 42%");
  });

  it("disposes its item", () => {
    const { status, bar } = setup();
    opened(status, "s1", undefined, 1000);
    bar.dispose();
    expect(createdItems.every((i) => i.disposed)).toBe(true);
  });
});
