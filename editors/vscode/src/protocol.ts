/**
 * The contextd protocol as this extension uses it: method names, params,
 * results and notification bodies (see protocol.md at the project root).
 */

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
export const CONTEXT_FORMATS = ["neutral", "anthropic", "openai", "openai-responses"] as const;
export type ContextFormat = (typeof CONTEXT_FORMATS)[number];
export type UsageSource = "usage" | "counted" | "estimated";
/**
 * Why a summarizing job runs; a hand-off and a branch summary report their jobs with these
 * events too, and a mirror its agent's own compactions (`agent`).
 */
export type CompactionReason = "manual" | "threshold" | "overflow" | "incomplete" | "idle" | "handoff" | "branch" | "agent";
/** `promoted`: no summary; the session moved to a larger model (compaction.promotion). */
export type CompactionOutcome = "compacted" | "failed" | "aborted" | "cancelled" | "promoted";

/** A message as the daemon stores it; the daemon validates the shape. */
export type Message = { role: "user" | "assistant" | "toolResult" } & Record<string, unknown>;

export interface TokenUsage {
  sessionId: string;
  tokens: number;
  contextWindow: number;
  percent: number;
  thresholdTokens: number;
  source: UsageSource;
  model: string;
  /** Where the figure's tokens are, when the daemon says (the parts add up to `tokens`). */
  breakdown?: FigureBreakdown;
}

/**
 * The figure split the way an agent's /context splits a window: the standing instructions,
 * the summary opening the context, the conversation, and what the agent sends that contextd
 * never sees (system prompt, tool schemas).
 */
export interface FigureBreakdown {
  instructions: number;
  summary: number;
  messages: number;
  unseen: number;
}

/** A mirror of another agent's transcript (Claude Code, Codex, pi): read-only. */
export interface SessionSource {
  agent: string;
  path: string;
}

/**
 * `contextd/workspace/activity`: any change of any session of a watched workspace, whoever
 * made it (another editor, a script, the daemon following an agent's transcript).
 */
export interface WorkspaceActivity {
  sessionId: string;
  name?: string | null;
  workspace: string;
  cause: ChangeCause;
  leafId: string | null;
  usage: TokenUsage;
  source?: SessionSource | null;
  updatedAt: string;
}

export interface WatchResult {
  sessions: SessionSummary[];
}

export interface DaemonStatus {
  pid: number;
  address: string | null;
  dataDir: string;
  /** A daemon of one client (stdio) rather than a shared one. */
  dedicated: boolean;
  startedAt: string;
  connections: unknown[];
}

export interface FollowResult {
  enabled: boolean;
  agents: string[];
  roots: Record<string, string>;
  allWorkspaces: boolean;
  /** How many transcripts the daemon follows. */
  mirrors: number;
}

/** `deleted`: the session's file is gone (contextd/session/delete); nothing more comes of it. */
export type ChangeCause =
  | "open"
  | "append"
  | "compaction"
  | "prune"
  | "navigate"
  | "model"
  | "label"
  | "instructions"
  | "fork"
  | "handoff"
  | "overflow"
  | "incomplete"
  | "deleted";

export interface SessionChanged {
  sessionId: string;
  leafId: string | null;
  cause: ChangeCause;
}

export interface CompactionStarted {
  sessionId: string;
  compactionId: string;
  reason: CompactionReason;
  tokensBefore: number;
}

export interface CompactionFinished {
  sessionId: string;
  compactionId: string;
  reason: CompactionReason;
  outcome: CompactionOutcome;
  tokensBefore: number;
  tokensAfter?: number;
  entryId?: string;
  /** One line saying what the compaction kept, for UIs. */
  shortSummary?: string | null;
  error?: string;
  willRetry: boolean;
  /** A hand-off's new session. */
  handoffSessionId?: string;
  /** A promotion: the model the session moved to and its window, and the ones it left. */
  model?: string;
  contextWindow?: number;
  previousModel?: string;
  previousContextWindow?: number;
}

export interface IdleTimer {
  sessionId: string;
  state: "armed" | "fired" | "cancelled";
  dueAt?: string;
}

export interface OpenParams {
  workspace?: string;
  sessionId?: string;
  name?: string;
  model?: string;
}

export interface OpenResult {
  sessionId: string;
  /** The session's name: a fork's is "NAME (fork)", a hand-off's its goal. */
  name?: string | null;
  leafId: string | null;
  model: string;
  contextWindow: number;
  usage: TokenUsage;
  source?: SessionSource | null;
}

export interface SessionSummary {
  sessionId: string;
  name?: string | null;
  workspace: string;
  entries: number;
  tokens: number;
  updatedAt: string;
  parentSession?: { id: string; entryId?: string | null } | null;
  source?: SessionSource | null;
}

export interface ListResult {
  sessions: SessionSummary[];
}

export interface AppendResult {
  entryIds: string[];
  leafId: string;
  usage: TokenUsage;
}

export interface ContextResult {
  messages: unknown[];
  system?: string;
  tokens: number;
}

export interface StateResult {
  sessionId: string;
  name?: string | null;
  workspace: string;
  leafId: string | null;
  model: string;
  contextWindow: number;
  entries: number;
  usage: TokenUsage;
  compacting: boolean;
  source?: SessionSource | null;
}

export interface CompactResult {
  entryId: string;
  summary: string;
  firstKeptEntryId: string | null;
  tokensBefore: number;
  tokensAfter: number;
  shortSummary?: string | null;
}

export interface CompactPreview {
  firstKeptEntryId: string | null;
  summarizeEntryIds: string[];
  keptEntryIds: string[];
  pruneEntryIds: string[];
  tokensBefore: number;
  tokensAfter: number;
}

export interface HandoffResult {
  sessionId: string;
  entryId: string;
  document: string;
}

export interface DeleteResult {
  deleted: boolean;
  sessionId: string;
  path: string;
}

export interface TreeNode {
  id: string;
  parentId: string | null;
  type: string;
  role?: string | null;
  preview: string;
  label?: string | null;
  tokens: number;
  children: string[];
  /** Compaction nodes: the first entry kept verbatim (older ones on the path were folded into the summary). */
  firstKeptEntryId?: string | null;
  tokensBefore?: number;
  tokensAfter?: number;
  /** Compaction and branch summary nodes: the summary's one line (the preview is built from it). */
  shortSummary?: string | null;
}

export interface TreeResult {
  nodes: TreeNode[];
  leafId: string | null;
}

export interface NavigateResult {
  leafId: string | null;
  branchSummaryId?: string | null;
  editorText?: string | null;
}

export interface ForkResult {
  sessionId: string;
  leafId: string | null;
}

export interface IdleConfigureParams {
  sessionId?: string;
  enabled: boolean;
  timeoutSeconds?: number;
  thresholdTokens?: number;
  thresholdPercent?: number;
}

export interface IdleConfigureResult {
  sessionId?: string;
  enabled: boolean;
  timeoutSeconds: number;
  /** The context size above which the idle timer runs, for a session. */
  effectiveThresholdTokens?: number;
}
