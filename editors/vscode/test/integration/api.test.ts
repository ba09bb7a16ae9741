/** The API other extensions get from `activate`, used the way an agent extension would. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContextdApi, createApi } from "../../src/api";
import { CONTEXT_FORMATS, type TokenUsage } from "../../src/protocol";
import { eventually, TestDaemon } from "../support/daemon";
import { assistant, toolCall, toolResult, user } from "../support/messages";

describe("the extension API", () => {
  let daemon: TestDaemon;
  let api: ContextdApi;

  beforeAll(async () => {
    daemon = await TestDaemon.start();
    api = createApi(daemon.sessions);
  });

  afterAll(async () => {
    await daemon?.stop();
  });

  it("records an agent's turns and gives back the context in the provider's shape", async () => {
    const usages: TokenUsage[] = [];
    const subscription = api.onTokenUsage((usage) => usages.push(usage));
    const { sessionId } = await api.openSession({ name: "agent", model: "claude-sonnet-4-5" });
    expect(api.currentSessionId()).toBe(sessionId);
    await api.appendMessages(sessionId, [user("What is in app.py?")]);
    await api.appendMessages(sessionId, [
      toolCall("call_1", "read", { path: "app.py" }, { input: 1200, output: 40 }),
      toolResult("call_1", "read", "def main(): ..."),
      assistant("It defines main().", { input: 1300, output: 20 }),
    ]);
    const { messages } = await api.getContext(sessionId, "anthropic");
    expect(messages).toHaveLength(4);
    expect(messages[1]).toMatchObject({ role: "assistant", content: [{ type: "tool_use", id: "call_1", name: "read" }] });
    expect(messages[2]).toMatchObject({ role: "user", content: [{ type: "tool_result", tool_use_id: "call_1" }] });
    await eventually(() => usages.some((u) => u.sessionId === sessionId && u.tokens === 1320));
    expect(usages.at(-1)).toMatchObject({ sessionId, source: "usage", contextWindow: 200_000 });
    subscription.dispose();
  });

  it("gives the context as OpenAI Responses input items, each format with the same figure", async () => {
    const { sessionId } = await api.openSession({ name: "responses", model: "gpt-4o" });
    await api.appendMessages(sessionId, [
      user("What is in app.py?"),
      toolCall("call_1", "read", { path: "app.py" }),
      toolResult("call_1", "read", "def main(): ..."),
      assistant("It defines main()."),
    ]);
    const responses = await api.getContext(sessionId, "openai-responses");
    expect(responses.messages).toMatchObject([
      { role: "user", content: "What is in app.py?" },
      { type: "function_call", call_id: "call_1", name: "read" },
      { type: "function_call_output", call_id: "call_1", output: "def main(): ..." },
      { role: "assistant" },
    ]);
    expect(JSON.parse((responses.messages[1] as { arguments: string }).arguments)).toEqual({ path: "app.py" });
    for (const format of CONTEXT_FORMATS) {
      expect((await api.getContext(sessionId, format)).tokens, format).toBe(responses.tokens);
    }
  });

  it("refuses a malformed message with the daemon's field errors, storing nothing", async () => {
    const { sessionId } = await api.openSession({});
    await expect(api.appendMessages(sessionId, [user("ok"), { role: "user", content: 42 }])).rejects.toMatchObject({
      code: -32602,
      data: { errors: expect.arrayContaining([expect.objectContaining({ field: expect.stringContaining("messages.1") })]) },
    });
    expect((await api.getContext(sessionId)).messages).toEqual([]);
  });
});
