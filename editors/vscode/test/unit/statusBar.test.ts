/** The status bar items, rendered into the stand-in `vscode` module. */
import { beforeEach, describe, expect, it } from "vitest";
import type { TokenUsage } from "../../src/protocol";
import type { ConnectionState } from "../../src/daemonConnection";
import { ConnectionStatus, SessionStatusBar } from "../../src/statusBar";
import { Emitter } from "vscode-jsonrpc";
import { StatusModel } from "../../src/statusModel";
import { createdItems, FakeStatusBarItem, MarkdownString, ThemeColor } from "../support/fakeVscode";

const usage = (sessionId: string, tokens: number): TokenUsage => ({
  sessionId, tokens, contextWindow: 200_000, percent: Math.round(tokens / 200) / 10, thresholdTokens: 170_000, source: "usage", model: "claude-sonnet-4-5",
});

function setup(connection?: ConnectionStatus) {
  const status = new StatusModel();
  const bar = new SessionStatusBar({ status }, connection);
  const item = (sessionId: string) => bar.itemOf(sessionId) as unknown as FakeStatusBarItem;
  return { status, bar, item };
}

describe("status bar", () => {
  beforeEach(() => {
    createdItems.length = 0;
  });

  it("shows one item per session with tokens, window and percent", () => {
    const { status, item } = setup();
    status.track("s1", "fix tests");
    status.applyUsage(usage("s1", 84_000));
    expect(item("s1").text).toBe("$(database) 84k/200k 42%");
    expect(item("s1").visible).toBe(true);
    expect(item("s1").backgroundColor).toBeUndefined();
    expect(item("s1").command).toEqual({ title: "Session Actions", command: "contextd.showActions", arguments: ["s1"] });
    expect((item("s1").tooltip as MarkdownString).value).toContain("Model: claude-sonnet-4-5");
  });

  it("turns to warning above the threshold and to error above 95%", () => {
    const { status, item } = setup();
    status.applyUsage(usage("s1", 171_000));
    expect((item("s1").backgroundColor as ThemeColor).id).toBe("statusBarItem.warningBackground");
    status.applyUsage(usage("s1", 191_000));
    expect((item("s1").backgroundColor as ThemeColor).id).toBe("statusBarItem.errorBackground");
    status.applyUsage(usage("s1", 30_000));
    expect(item("s1").backgroundColor).toBeUndefined();
  });

  it("spins while compacting and shows the new figure after", () => {
    const { status, item } = setup();
    status.applyUsage(usage("s1", 171_000));
    status.compactionStarted({ sessionId: "s1", compactionId: "c1", reason: "threshold", tokensBefore: 171_000 });
    expect(item("s1").text).toBe("$(sync~spin) compacting…");
    status.compactionFinished({ sessionId: "s1", compactionId: "c1", reason: "threshold", outcome: "compacted", tokensBefore: 171_000, tokensAfter: 30_000, willRetry: false });
    status.applyUsage(usage("s1", 30_000));
    expect(item("s1").text).toBe("$(database) 30k/200k 15%");
    expect((item("s1").tooltip as MarkdownString).value).toContain("Last compaction: compacted 171k → 30k tokens (threshold, just now)");
  });

  it("names sessions once there are several, and drops closed ones", () => {
    const { status, item } = setup();
    status.track("s1", "one");
    status.applyUsage(usage("s1", 10_000));
    status.track("s2", "two");
    status.applyUsage(usage("s2", 20_000));
    expect(createdItems).toHaveLength(2);
    expect(item("s1").text).toBe("$(database) one 10k/200k 5%");
    expect(item("s2").text).toBe("$(database) two 20k/200k 10%");
    const first = item("s1");
    status.forget("s1");
    expect(first.disposed).toBe(true);
    expect(item("s2").text).toBe("$(database) 20k/200k 10%");
  });

  it("says in words what a screen reader should read", () => {
    const { status, item } = setup();
    status.track("s1", "fix tests");
    status.applyUsage(usage("s1", 171_000));
    expect(item("s1").accessibilityInformation?.label).toBe(
      "contextd session fix tests: 171,000 of 200,000 tokens, 86 percent of the context window, above the compaction threshold",
    );
  });

  it("shows a disconnected state, not a stale figure, while the daemon is away, and the figure again after", () => {
    const changed = new Emitter<ConnectionState>();
    const connection = { state: { kind: "connected" } as ConnectionState, onDidChangeState: changed.event };
    const { status, item } = setup(connection);
    status.track("s1", "fix tests");
    status.applyUsage(usage("s1", 84_000));
    connection.state = { kind: "disconnected", reason: "the daemon stopped", retryAt: Date.now() + 2000 };
    changed.fire(connection.state);
    expect(item("s1").text).toBe("$(debug-disconnect) disconnected");
    expect((item("s1").backgroundColor as ThemeColor).id).toBe("statusBarItem.errorBackground");
    expect((item("s1").tooltip as MarkdownString).value).toContain("Disconnected: the daemon stopped.  \nRestarting it in 2 s.");
    expect(item("s1").command).toEqual({ title: "Restart Daemon", command: "contextd.restartDaemon" });
    expect(item("s1").accessibilityInformation?.label).toBe("contextd session fix tests: disconnected from the daemon, the daemon stopped");
    connection.state = { kind: "connected" };
    changed.fire(connection.state);
    expect(item("s1").text).toBe("$(database) 84k/200k 42%");
  });

  it("disposes its items", () => {
    const { status, bar } = setup();
    status.track("s1");
    bar.dispose();
    expect(createdItems.every((i) => i.disposed)).toBe(true);
  });
});
