/** Messages as an agent would append them. */
import type { Message } from "../../src/protocol";

export function user(text: string): Message {
  return { role: "user", content: text };
}

export function assistant(text: string, usage?: { input: number; output: number }): Message {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    stopReason: "stop",
    ...(usage ? { usage: { ...usage, cacheRead: 0, cacheWrite: 0 } } : {}),
  };
}

export function toolCall(id: string, name: string, args: Record<string, unknown>, usage?: { input: number; output: number }): Message {
  return {
    role: "assistant",
    content: [{ type: "toolCall", id, name, arguments: args }],
    stopReason: "toolUse",
    ...(usage ? { usage: { ...usage, cacheRead: 0, cacheWrite: 0 } } : {}),
  };
}

export function toolResult(toolCallId: string, toolName: string, content: string): Message {
  return { role: "toolResult", toolCallId, toolName, content, isError: false };
}

/** A plausible coding conversation of `turns` read/answer rounds, each tool output `outputWords` long. */
export function conversation(turns: number, outputWords = 400): Message[] {
  const messages: Message[] = [user("Fix the failing test in src/app.py and keep the public API unchanged.")];
  for (let turn = 0; turn < turns; turn++) {
    const id = `call_${turn}`;
    messages.push(
      toolCall(id, "read", { path: `src/module_${turn}.py` }),
      toolResult(id, "read", Array.from({ length: outputWords }, (_, i) => `line${i} value_${turn}_${i}`).join(" ")),
      assistant(`Read module ${turn}; the bug is not there yet.`),
      user(`Continue with module ${turn + 1}.`),
    );
  }
  return messages;
}
