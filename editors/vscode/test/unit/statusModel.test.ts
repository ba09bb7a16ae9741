import { describe, expect, it } from "vitest";
import type { ChangeCause, CompactionFinished, TokenUsage, WorkspaceActivity } from "../../src/protocol";
import { SessionStatus, StatusModel } from "../../src/statusModel";

const usage = (tokens: number): TokenUsage => ({
  sessionId: "s1", tokens, contextWindow: 200_000, percent: tokens / 2000, thresholdTokens: 170_000, source: "usage", model: "m",
}) as TokenUsage; // no calibration or breakdown: not read here

const finished = (overrides: Partial<CompactionFinished>): CompactionFinished => ({
  sessionId: "s1", compactionId: "c1", reason: "threshold", outcome: "compacted", tokensBefore: 171_000, tokensAfter: 30_000, willRetry: false, ...overrides,
});

function recording(model: StatusModel): SessionStatus[] {
  const seen: SessionStatus[] = [];
  model.onDidChange((status) => seen.push(status));
  return seen;
}

describe("status model", () => {
  it("tracks sessions and their latest usage", () => {
    const model = new StatusModel();
    const seen = recording(model);
    model.track("s1", "fix tests");
    model.applyUsage(usage(84_000));
    expect(model.get("s1")).toMatchObject({ name: "fix tests", usage: { tokens: 84_000 } });
    expect(seen).toHaveLength(2);
    model.track("s1");
    expect(model.get("s1")?.name).toBe("fix tests");
  });

  it("follows a compaction the daemon starts, through progress, to its result", () => {
    const model = new StatusModel();
    model.track("s1");
    model.compactionStarted({ sessionId: "s1", compactionId: "c1", reason: "threshold", tokensBefore: 171_000 });
    expect(model.get("s1")?.compacting).toEqual({ reason: "threshold", compactionId: "c1", tokensBefore: 171_000, requested: false });
    model.compactionProgress("s1", "summarizing", 50);
    expect(model.get("s1")?.compacting).toMatchObject({ message: "summarizing", percentage: 50 });
    model.compactionFinished(finished({}), 1234);
    expect(model.get("s1")?.compacting).toBeUndefined();
    expect(model.get("s1")?.lastCompaction).toEqual({
      outcome: "compacted", reason: "threshold", tokensBefore: 171_000, tokensAfter: 30_000, error: undefined, willRetry: false, finishedAt: 1234,
    });
  });

  it("keeps the spinner through a failure the daemon retries", () => {
    const model = new StatusModel();
    model.track("s1");
    model.compactionStarted({ sessionId: "s1", compactionId: "c1", reason: "overflow", tokensBefore: 1 });
    model.compactionFinished(finished({ outcome: "failed", error: "HTTP 529", willRetry: true }));
    expect(model.get("s1")?.compacting?.reason).toBe("overflow");
    expect(model.get("s1")?.lastCompaction?.error).toBe("HTTP 529");
  });

  it("remembers that a compaction was requested from this window", () => {
    const model = new StatusModel();
    model.compactionRequested("s1");
    model.compactionStarted({ sessionId: "s1", compactionId: "c1", reason: "manual", tokensBefore: 100 });
    expect(model.get("s1")?.compacting).toMatchObject({ requested: true, compactionId: "c1" });
    model.compactionRequestEnded("s1", { outcome: "cancelled", reason: "manual" }, 99);
    expect(model.get("s1")).toMatchObject({ compacting: undefined, lastCompaction: { outcome: "cancelled", finishedAt: 99 } });
  });

  it("keeps no session from a notification alone: a figure names no session and no workspace", () => {
    const model = new StatusModel();
    model.applyUsage(usage(84_000));
    model.compactionStarted({ sessionId: "s1", compactionId: "c1", reason: "threshold", tokensBefore: 171_000 });
    model.compactionFinished(finished({}));
    model.applyIdleTimer({ sessionId: "s1", state: "armed", dueAt: "2026-11-23T12:00:00Z" });
    expect(model.all()).toEqual([]);
  });

  it("counts a mirror's own compaction as its agent makes it, at the figure it made it", () => {
    const model = new StatusModel();
    model.track("s1", "mirror", { agent: "claude-code", path: "/p.jsonl" });
    model.applyAgentCompactions("s1", { count: 2, lastTokensBefore: 150_000 });
    model.compactionFinished(finished({ reason: "agent", tokensBefore: 162_000 }));
    expect(model.get("s1")?.agentCompactions).toEqual({ count: 3, lastTokensBefore: 162_000 });
  });

  it("ignores progress when nothing is compacting", () => {
    const model = new StatusModel();
    model.track("s1");
    model.compactionProgress("s1", "late");
    expect(model.get("s1")?.compacting).toBeUndefined();
  });

  it("forgets a session", () => {
    const model = new StatusModel();
    const removed: string[] = [];
    model.onDidRemove((id) => removed.push(id));
    model.track("s1");
    model.forget("s1");
    model.forget("s1");
    expect(model.has("s1")).toBe(false);
    expect(removed).toEqual(["s1"]);
  });

  it("ends the spinner at a promotion, which the daemon reports with willRetry, and keeps the new model", () => {
    const model = new StatusModel();
    model.track("s1");
    model.compactionStarted({ sessionId: "s1", compactionId: "c1", reason: "overflow", tokensBefore: 201_000 });
    model.compactionFinished(finished({ reason: "overflow", outcome: "promoted", willRetry: true, model: "claude-sonnet-4-5-1m", contextWindow: 1_000_000 }), 7);
    expect(model.get("s1")?.compacting).toBeUndefined();
    expect(model.get("s1")?.lastCompaction).toMatchObject({ outcome: "promoted", model: "claude-sonnet-4-5-1m", willRetry: true });
  });

  it("keeps a compaction's one-line summary", () => {
    const model = new StatusModel();
    model.track("s1");
    model.compactionFinished(finished({ shortSummary: "Fix the test — next: rerun CI" }), 5);
    expect(model.get("s1")?.lastCompaction).toMatchObject({ outcome: "compacted", shortSummary: "Fix the test — next: rerun CI" });
  });
});

describe("the session that changed last", () => {
  const activity = (sessionId: string, cause: ChangeCause, extra: Partial<WorkspaceActivity> = {}): WorkspaceActivity => ({
    sessionId, name: null, cause, workspace: "/w", leafId: "e1", usage: { ...usage(1000), sessionId }, updatedAt: "2026-11-23T12:00:00Z", ...extra,
  });

  it("is the one with the latest activity or choice, in the order heard even within one millisecond", () => {
    const model = new StatusModel();
    expect(model.latest()).toBeUndefined();
    model.touch("a", 100);
    model.applyActivity(activity("b", "append"), 100);
    expect(model.latest()?.sessionId).toBe("b");
    model.touch("a", 100);
    expect(model.latest()?.sessionId).toBe("a");
  });

  it("takes name and figure from activity; a session opened is no change, until it is appended to", () => {
    const model = new StatusModel();
    model.applyActivity(activity("s", "open", { name: "nightly" }), 10);
    expect(model.get("s")).toMatchObject({ name: "nightly", usage: { sessionId: "s", tokens: 1000 } });
    expect(model.latest()).toBeUndefined();
    model.applyActivity(activity("s", "append"), 20);
    expect(model.get("s")).toMatchObject({ name: "nightly", changedAt: 20 });
    expect(model.latest()?.sessionId).toBe("s");
  });

  it("shows a mirror as soon as the daemon finds its transcript, and keeps its source", () => {
    const model = new StatusModel();
    const source = { agent: "codex", path: "/home/me/.codex/sessions/r.jsonl" } as const;
    model.touch("mine", 5);
    model.applyActivity(activity("m", "open", { name: "rollout", source }), 10);
    expect(model.latest()).toMatchObject({ sessionId: "m", source, name: "rollout" });
    model.applyActivity(activity("m", "append"), 20);
    expect(model.get("m")?.source).toEqual(source);
  });
});
