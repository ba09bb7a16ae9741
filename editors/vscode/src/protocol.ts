/**
 * The contextd protocol as this extension uses it: method names, notifications and error
 * codes (see protocol.md at the project root). The shapes of results and notification
 * bodies are generated from the daemon's models (protocol.generated.ts).
 */

import type { ContextFormat } from "./protocol.generated";

export * from "./protocol.generated";

export const Method = {
  open: "contextd/session/open",
  list: "contextd/session/list",
  append: "contextd/session/append",
  context: "contextd/session/context",
  state: "contextd/session/state",
  setModel: "contextd/session/setModel",
  close: "contextd/session/close",
  delete: "contextd/session/delete",
  compact: "contextd/compact",
  abort: "contextd/compact/abort",
  handoff: "contextd/handoff",
  tree: "contextd/tree",
  navigate: "contextd/navigate",
  fork: "contextd/fork",
  label: "contextd/label",
  idleConfigure: "contextd/idle/configure",
  daemonStatus: "contextd/daemon/status",
  watchWorkspace: "contextd/workspace/watch",
  follow: "contextd/follow",
} as const;

export const Notification = {
  tokenUsage: "contextd/tokenUsage",
  sessionChanged: "contextd/sessionChanged",
  compactionStarted: "contextd/compactionStarted",
  compactionFinished: "contextd/compactionFinished",
  idleTimer: "contextd/idleTimer",
  workspaceActivity: "contextd/workspace/activity",
} as const;

export const ErrorCode = {
  methodNotFound: -32601,
  invalidParams: -32602,
  sessionNotFound: -32001,
  sessionLocked: -32003,
  compactionRunning: -32004,
  nothingToCompact: -32005,
  summarizerFailed: -32006,
  entryNotFound: -32007,
  readOnlyMirror: -32008,
  cancelled: -32800,
} as const;

/**
 * The shapes `contextd/session/context` gives the context in: contextd's own, Anthropic
 * Messages, OpenAI Chat Completions and OpenAI Responses `input` items.
 */
export const CONTEXT_FORMATS = [
  "neutral",
  "anthropic",
  "openai",
  "openai-responses",
] as const satisfies readonly ContextFormat[];

/** A message as the daemon stores it; the daemon validates the shape. */
export type Message = { role: "user" | "assistant" | "toolResult" } & Record<string, unknown>;
