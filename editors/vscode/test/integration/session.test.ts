/** The extension's session code against the real daemon: open, append, usage, context. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { statusLevel, statusText } from "../../src/format";
import { Method } from "../../src/protocol";
import { assistant, conversation, user } from "../support/messages";
import { defaultSettings, eventually, settingsWith, TestDaemon } from "../support/daemon";

describe("sessions against the daemon", () => {
  let daemon: TestDaemon;

  beforeAll(async () => {
    daemon = await TestDaemon.start();
  });

  afterAll(async () => {
    await daemon?.stop();
  });

  it("opens a session in the workspace folder and shows it in the status model", async () => {
    const opened = await daemon.sessions.open({ name: "fix tests", model: "claude-sonnet-4-5" });
    expect(opened.contextWindow).toBe(200_000);
    expect(daemon.sessions.current).toBe(opened.sessionId);
    const status = daemon.sessions.status.get(opened.sessionId)!;
    expect(status.name).toBe("fix tests");
    expect(status.usage?.contextWindow).toBe(200_000);
    expect(statusText(status)).toMatch(/^\$\(database\) \d+\/200k 0%$/);
    const { sessions } = await daemon.sessions.list();
    expect(sessions.find((s) => s.sessionId === opened.sessionId)?.workspace).toBe(daemon.workspace);
  });

  it("follows tokenUsage notifications as messages are appended", async () => {
    const { sessionId } = await daemon.sessions.open({ name: "usage" });
    const seen: number[] = [];
    const subscription = daemon.sessions.onTokenUsage((usage) => usage.sessionId === sessionId && seen.push(usage.tokens));
    const appended = await daemon.sessions.append(sessionId, [user("Hello there"), assistant("Hi!", { input: 84_000, output: 10 })]);
    expect(appended.entryIds).toHaveLength(2);
    expect(appended.usage).toMatchObject({ tokens: 84_010, source: "usage", percent: 42 });
    await eventually(() => seen.includes(84_010));
    subscription.dispose();
    const status = daemon.sessions.status.get(sessionId)!;
    expect(statusText(status)).toBe("$(database) 84k/200k 42%");
    expect(statusLevel(status)).toBe("normal");
  });

  it("turns the status to warning above the threshold and to error above 95%", async () => {
    const { sessionId } = await daemon.sessions.open({ name: "full" });
    await daemon.sessions.append(sessionId, [user("Go"), assistant("Working", { input: 171_000, output: 0 })]);
    await eventually(() => daemon.sessions.status.get(sessionId)?.usage?.tokens === 171_000);
    const status = daemon.sessions.status.get(sessionId)!;
    expect(status.usage!.thresholdTokens).toBe(170_000);
    expect(statusLevel(status)).toBe("warning");
    await daemon.sessions.append(sessionId, [user("More"), assistant("Still working", { input: 191_000, output: 0 })]);
    expect(statusLevel(daemon.sessions.status.get(sessionId)!)).toBe("error");
  });

  it("counts tokens itself before any provider usage", async () => {
    // A model whose tokenizer ships with contextd is counted exactly; others are estimated.
    const { sessionId } = await daemon.sessions.open({ model: "gpt-4o" });
    const result = await daemon.sessions.append(sessionId, conversation(3, 200));
    expect(result.usage.source).toBe("counted");
    expect(result.usage.tokens).toBeGreaterThan(600);
    const context = await daemon.sessions.context(sessionId, "openai");
    expect(context.tokens).toBe(result.usage.tokens);
    expect(context.messages[1]).toMatchObject({ role: "assistant", tool_calls: [{ type: "function" }] });
    expect(context.messages[2]).toMatchObject({ role: "tool", tool_call_id: "call_0" });
  });

  it("estimates a model without a shipped tokenizer, and says so", async () => {
    const { sessionId } = await daemon.sessions.open({ model: "claude-sonnet-4-5" });
    const result = await daemon.sessions.append(sessionId, conversation(3, 200));
    expect(result.usage.source).toBe("estimated");
    expect(result.usage.tokens).toBeGreaterThan(600);
  });

  it("applies settings changed the way the extension sends them", async () => {
    const { sessionId } = await daemon.sessions.open({ name: "settings" });
    await daemon.configure(settingsWith({ compaction: { thresholdPercent: 0.5 } }));
    const result = await daemon.sessions.append(sessionId, [user("Hi")]);
    expect(result.usage.thresholdTokens).toBe(100_000);
    await daemon.configure(defaultSettings());
    const back = await daemon.sessions.append(sessionId, [assistant("Hello")]);
    expect(back.usage.thresholdTokens).toBe(170_000);
  });

  it("forgets a session deleted while it is open, without watching the workspace, and acts on the one before it", async () => {
    const kept = await daemon.sessions.open({ name: "kept" });
    const doomed = await daemon.sessions.open({ name: "doomed" });
    await daemon.sessions.append(doomed.sessionId, [user("Try something")]);
    expect(daemon.sessions.current).toBe(doomed.sessionId);
    // As `contextd sessions rm` does it; this window never asked for workspace activity.
    await daemon.connection.sendRequest(Method.delete, { sessionId: doomed.sessionId });
    await eventually(() => !daemon.sessions.status.has(doomed.sessionId));
    expect(daemon.sessions.current).not.toBe(doomed.sessionId);
    expect(daemon.sessions.status.has(kept.sessionId)).toBe(true);
    expect(daemon.sessions.status.latest()?.sessionId).not.toBe(doomed.sessionId);
  });

  it("reports a bad setting by name, and keeps the old ones", async () => {
    const { sessionId } = await daemon.sessions.open({});
    await daemon.configure(settingsWith({ compaction: { reserveTokens: -5 } }));
    const message = await eventually(() => daemon.shownMessages.find((m) => m.includes("compaction.reserveTokens")));
    expect(message).toMatch(/^contextd: /);
    const result = await daemon.sessions.append(sessionId, [user("Still fine?")]);
    expect(result.usage.thresholdTokens).toBe(170_000);
    await daemon.configure(defaultSettings());
  });
});
