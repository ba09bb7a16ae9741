import { describe, expect, it } from "vitest";
import {
  agentName,
  attentionLines,
  breakdownLine,
  compactionOutcomeText,
  describeCompaction,
  describePreview,
  escapeMarkdown,
  sessionPickRow,
  formatTokens,
  statusLevel,
  statusText,
  statusTooltip,
  sessionTitle,
  timeAgo,
} from "../../src/format";
import type { MirrorSource, TokenUsage, TreeNode } from "../../src/protocol";
import type { SessionStatus } from "../../src/statusModel";

function usage(tokens: number, overrides: Partial<TokenUsage> = {}): TokenUsage {
  const contextWindow = overrides.contextWindow ?? 200_000;
  return {
    sessionId: "s1",
    tokens,
    contextWindow,
    percent: Math.round((1000 * tokens) / contextWindow) / 10,
    thresholdTokens: 170_000,
    source: "usage",
    model: "claude-sonnet-4-5",
    ...overrides,
  } as TokenUsage; // calibration and breakdown only where a test gives them
}

function status(tokens: number, extra: Partial<SessionStatus> = {}): SessionStatus {
  return { sessionId: "01JCABCDEFGHJKMNPQRS", name: "fix tests", usage: usage(tokens), ...extra };
}

describe("token figures", () => {
  it.each([
    [0, "0"],
    [950, "950"],
    [8_400, "8.4k"],
    [8_000, "8k"],
    [84_000, "84k"],
    [200_000, "200k"],
    [999_600, "1M"],
    [1_047_576, "1.05M"],
    [2_500_000, "2.5M"],
  ])("%i tokens read %s", (tokens, text) => {
    expect(formatTokens(tokens)).toBe(text);
  });
});

describe("status bar text", () => {
  it("shows tokens of the window and the percent", () => {
    expect(statusText(status(84_000))).toBe("$(database) 84k/200k 42%");
  });

  it("names the session when several share the bar", () => {
    expect(statusText(status(84_000), { withName: true })).toBe("$(database) 84k/200k 42% · fix tests");
    expect(statusText({ sessionId: "01JCABCDEFGHJKMNPQRS", usage: usage(1_000) }, { withName: true })).toBe(
      "$(database) 1k/200k 1% · …JKMNPQRS",
    );
  });

  it("spins while compacting", () => {
    expect(statusText(status(171_000, { compacting: { reason: "threshold", requested: false } }))).toBe(
      "$(sync~spin) compacting…",
    );
  });

  it("says so while handing off", () => {
    expect(statusText(status(171_000, { compacting: { reason: "handoff", requested: true } }))).toBe("$(sync~spin) handing off…");
  });

  it("says contextd before the first figure", () => {
    expect(statusText({ sessionId: "s1" })).toBe("$(database) contextd");
  });
});

describe("status colour", () => {
  it("is normal up to the threshold", () => {
    expect(statusLevel(status(170_000))).toBe("normal");
  });

  it("warns above the threshold", () => {
    expect(statusLevel(status(170_001))).toBe("warning");
  });

  it("is an error above 95% of the window, even under a higher threshold", () => {
    expect(statusLevel(status(190_000))).toBe("warning");
    expect(statusLevel(status(190_200))).toBe("error");
    const lenient = { ...status(0), usage: usage(192_000, { thresholdTokens: 199_000 }) };
    expect(statusLevel(lenient)).toBe("error");
  });

  it("is normal without a figure", () => {
    expect(statusLevel({ sessionId: "s1" })).toBe("normal");
  });
});

describe("tooltip", () => {
  const now = Date.parse("2026-01-01T12:00:00Z");

  it("names model, window, threshold and the source of the figure", () => {
    const text = statusTooltip(status(84_000), now).join("\n");
    expect(text).toContain("Model: claude-sonnet-4-5");
    expect(text).toContain("Context: 84,000 of 200,000 tokens (42.0%)");
    expect(text).toContain("Window: 200,000 tokens");
    expect(text).toContain("Compaction threshold: 170,000 tokens (85%)");
    expect(text).toContain("Figure: the provider's reported usage");
    expect(text).toContain("Last compaction: none seen by this window yet");
  });

  it("says when the figure was counted", () => {
    const counted = { ...status(0), usage: usage(5_000, { source: "counted" }) };
    expect(statusTooltip(counted, now).join("\n")).toContain("Figure: counted with the model's tokenizer");
  });

  it("reports the last compaction's result", () => {
    const compacted = status(30_000, {
      lastCompaction: { outcome: "compacted", reason: "threshold", tokensBefore: 171_000, tokensAfter: 30_000, finishedAt: now - 5 * 60_000 },
    });
    expect(statusTooltip(compacted, now).join("\n")).toContain("Last compaction: compacted 171k → 30k tokens (threshold, 5 min ago)");
    const failed = status(171_000, {
      lastCompaction: { outcome: "failed", reason: "manual", error: "summarizer failed: HTTP 500", finishedAt: now },
    });
    expect(statusTooltip(failed, now).join("\n")).toContain("Last compaction: failed: summarizer failed: HTTP 500 (manual, just now)");
  });

  it("shows a running compaction and its progress", () => {
    const running = status(171_000, { compacting: { reason: "idle", requested: false, message: "summarizing 40 entries" } });
    expect(statusTooltip(running, now).join("\n")).toContain("Compacting now (idle): summarizing 40 entries");
  });
});

describe("times", () => {
  it.each([
    [5_000, "just now"],
    [90_000, "2 min ago"],
    [3 * 3600_000, "3 h ago"],
    [49 * 3600_000, "2 d ago"],
  ])("%i ms ago reads %s", (ms, text) => expect(timeAgo(ms)).toBe(text));

  it("describes a retried failure", () => {
    expect(
      describeCompaction({ outcome: "failed", reason: "overflow", error: "timeout", willRetry: true, finishedAt: 0 }, 0),
    ).toBe("failed: timeout (retrying) (overflow, just now)");
  });

  it("says a mirror's agent compacted its session itself", () => {
    const agentCompaction = { outcome: "compacted" as const, reason: "agent" as const, tokensBefore: 150_000, tokensAfter: 21_000, finishedAt: 0 };
    expect(describeCompaction(agentCompaction, 0, { agent: "claude-code" })).toBe("compacted 150k → 21k tokens (by Claude Code itself, just now)");
    expect(describeCompaction(agentCompaction, 0)).toBe("compacted 150k → 21k tokens (by the agent itself, just now)");
  });

  it("describes a promotion to a larger model", () => {
    expect(
      describeCompaction({ outcome: "promoted", reason: "overflow", model: "claude-sonnet-4-5-1m", willRetry: true, finishedAt: 0 }, 90_000),
    ).toBe("moved to the larger model claude-sonnet-4-5-1m instead of compacting (overflow, 2 min ago)");
  });
});

describe("mirrors", () => {
  it("are titled with their agent's name", () => {
    const source: MirrorSource = { agent: "claude-code", path: "/p.jsonl" };
    expect(sessionTitle({ sessionId: "0123456789abcdef", name: "fix tests", source })).toBe("Claude Code · fix tests");
    expect(sessionTitle({ sessionId: "0123456789abcdef", source: { agent: "codex", path: "/r.jsonl" } })).toBe("Codex · …89abcdef");
    expect(agentName({ agent: "some-new-agent" })).toBe("some-new-agent");
  });

  it("are listed in the session picker with their agent's name, share of the window and read-only mark", () => {
    const now = Date.parse("2026-11-23T12:10:00Z");
    const row = (source?: MirrorSource) => ({
      sessionId: "0123456789abcdef", name: "fix tests", workspace: "/w", entries: 40, tokens: 120_000, updatedAt: "2026-11-23T12:07:00Z", source,
    });
    const mirror = row({ agent: "claude-code", path: "/p.jsonl" });
    expect(sessionPickRow(mirror, { usage: usage(124_000), now })).toEqual({
      label: "$(eye) Claude Code · fix tests",
      description: "62% · 124k tokens · 40 entries · 3 min ago · read-only mirror",
    });
    expect(sessionPickRow(row(), { current: "0123456789abcdef", now })).toEqual({
      label: "$(check) fix tests",
      description: "120k tokens · 40 entries · 3 min ago",
    });
  });

  it("keep a long name short in the picker, so the row's figures stay in view", () => {
    const long = { sessionId: "s1", name: "ok give me the full picture of the parser and every module it touches", workspace: "/w", entries: 4, tokens: 9_000, updatedAt: "2026-11-23T12:07:00Z" };
    const picked = sessionPickRow(long, { now: Date.parse("2026-11-23T12:10:00Z") });
    expect(picked.label).toBe("ok give me the full picture of the parser and e…");
    expect(picked.description).toBe("9k tokens · 4 entries · 3 min ago");
  });

  it("show a summary line as text in the Markdown tooltip", () => {
    expect(escapeMarkdown("use `x` *now* $(alert) [link](y)")).toBe("use \\`x\\` \\*now\\* \\$\\(alert\\) \\[link\\]\\(y\\)");
  });
});

describe("compaction preview", () => {
  const node = (id: string, role: string, preview: string): TreeNode => ({
    id, parentId: null, type: "message", role, preview, tokens: 10, timestamp: "2026-11-23T12:00:00Z", children: [],
  });

  it("counts what is summarized, kept and pruned, with previews", () => {
    const ids = Array.from({ length: 8 }, (_, i) => `e${i}`);
    const nodes = new Map(ids.map((id, i) => [id, node(id, i % 2 ? "assistant" : "user", `message number ${i}`)]));
    const { message, detail } = describePreview(
      { firstKeptEntryId: "e7", summarizeEntryIds: ids.slice(0, 7), keptEntryIds: ["e7"], pruneEntryIds: ["e3"], tokensBefore: 171_000, tokensKept: 30_000, tokensAfter: 31_500, tokensAfterMax: 46_000, splitTurn: false, summary: "" },
      nodes,
    );
    expect(message).toBe("Compaction would take the context from 171,000 to about 31,500 tokens.");
    expect(detail).toContain("Summarized (dropped from the context): 7 entries\n  • user: message number 0");
    expect(detail).toContain("  … and 2 more");
    expect(detail).toContain("Kept verbatim: 1 entry\n  • assistant: message number 7");
    expect(detail).toContain("Tool output pruned: 1 entry\n  • assistant: message number 3");
  });

  it("falls back to entry ids without the tree", () => {
    const { detail } = describePreview({ firstKeptEntryId: null, summarizeEntryIds: ["a"], keptEntryIds: [], pruneEntryIds: [], tokensBefore: 10, tokensKept: 0, tokensAfter: 5, tokensAfterMax: 8, splitTurn: false, summary: "" });
    expect(detail).toContain("Summarized (dropped from the context): 1 entry\n  • a");
    expect(detail).toContain("Kept verbatim: 0 entries");
  });
});

describe("why a full session was not compacted", () => {
  const failed = { outcome: "failed" as const, reason: "threshold" as const, error: "HTTP 529 overloaded", finishedAt: 0 };

  it("says nothing while the session is below the threshold", () => {
    expect(attentionLines(status(100_000, { lastCompaction: failed }))).toEqual([]);
  });

  it("gives a failed compaction's error and what to do", () => {
    const lines = attentionLines(status(194_000, { lastCompaction: failed }));
    expect(lines[0]).toBe("Not compacted: the last compaction (threshold) failed: HTTP 529 overloaded.");
    expect(lines[1]).toMatch(/^What to do: Compact Now to try again/);
    expect(statusTooltip(status(194_000, { lastCompaction: failed }), 0).join("\n")).toContain("Not compacted: the last compaction");
  });

  it("says why a threshold compaction found nothing to compact and what to do", () => {
    const error = "nothing to compact: the history's 9,000 tokens fit in the 20,000 recent tokens a compaction keeps";
    const skipped = { outcome: "skipped" as const, reason: "threshold" as const, error, finishedAt: 0 };
    const lines = attentionLines(status(180_000, { lastCompaction: skipped }));
    expect(lines[0]).toBe(`Not compacted: the threshold compaction found ${error}.`);
    expect(lines[1]).toMatch(/^What to do: Hand Off .*contextd\.compaction\.keepRecentTokens/);
    expect(compactionOutcomeText(skipped)).toBe(`not compacted: ${error}`);
  });

  it("says when automatic compaction is off, and when nothing ran", () => {
    expect(attentionLines(status(180_000), { autoCompaction: false })[0]).toMatch(/automatic compaction is off/);
    expect(attentionLines(status(180_000))[0]).toMatch(/^Above the compaction threshold, not compacted/);
  });

  it("says for a nearly full mirror that its agent compacts it, never contextd", () => {
    const mirror = status(194_000, { source: { agent: "codex", path: "/r.jsonl" } });
    expect(attentionLines(mirror)).toEqual([
      "Nearly full: Codex compacts it when it decides to; contextd does not. Hand Off starts a session of contextd's own from it.",
    ]);
    expect(attentionLines(status(180_000, { source: mirror.source }))).toEqual([]);
  });
});

describe("the figure's breakdown", () => {
  it("names each part the daemon reports, leaving out empty ones", () => {
    const breakdown = { instructions: 0, summary: 3_100, messages: 60_000, unseen: 14_200 };
    expect(breakdownLine(breakdown)).toBe("Of which: summary 3.1k · messages 60k · system prompt and tools (unseen) 14k");
    const tooltip = statusTooltip(status(77_300, { usage: usage(77_300, { breakdown }) }), 0);
    expect(tooltip[3]).toBe("Of which: summary 3.1k · messages 60k · system prompt and tools (unseen) 14k");
  });

  it("is left out when the daemon does not report one", () => {
    expect(statusTooltip(status(77_300), 0).join("\n")).not.toContain("Of which");
  });
});
