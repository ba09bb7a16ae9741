/**
 * Generated from contextd.results by scripts/generate-protocol.mjs: do not edit.
 * Regenerate: python -m contextd.results | node scripts/generate-protocol.mjs > src/protocol.generated.ts
 */

export type UsageSource = "usage" | "counted" | "estimated";
export type JsonValue = unknown;
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
export type CompactionReason =
  "manual" | "threshold" | "overflow" | "incomplete" | "idle" | "handoff" | "branch" | "agent";
export type CompactionOutcome =
  "compacted" | "failed" | "aborted" | "cancelled" | "promoted" | "skipped";
export type ContextFormat = "neutral" | "anthropic" | "openai" | "openai-responses";

export interface Protocol {
  results: Results;
  notifications: Notifications;
  clientRequests: ClientRequests;
}
export interface Results {
  "contextd/compact": CompactResult | CompactPreview;
  "contextd/history/search": SearchResult;
  "contextd/history/get": HistoryEntries;
  "contextd/history/sources": SourcesResult;
  "contextd/history/summarize": SpanSummary;
  "contextd/session/open": OpenResult;
  "contextd/session/state": StateResult;
  "contextd/session/list": ListResult;
  "contextd/workspace/watch": ListResult;
  "contextd/session/stats": StatsResult;
  "contextd/tree": TreeResult;
  "contextd/idle/configure": IdleConfigureResult;
  "contextd/session/append": AppendResult;
  "contextd/session/setInstructions": SetInstructionsResult;
  "contextd/session/setModel": SetModelResult;
  "contextd/session/close": CloseResult;
  "contextd/session/delete": DeleteResult;
  "contextd/compact/abort": AbortResult;
  "contextd/handoff": HandoffResult;
  "contextd/label": LabelResult;
  "contextd/fork": ForkResult;
  "contextd/workspace/unwatch": EmptyResult;
  "contextd/settings": SettingsResult;
  "contextd/daemon/status": DaemonStatus;
  "contextd/follow": FollowResult;
  "contextd/follow/environment": FollowEnvironmentResult;
  "contextd/navigate": NavigateResult;
  "contextd/session/context": ContextResult;
}
export interface CompactResult {
  entryId: string;
  summary: string;
  firstKeptEntryId: string | null;
  tokensBefore: number;
  tokensAfter: number;
  summarizer: SummarizerInfo;
  shortSummary: string | null;
}
export interface SummarizerInfo {
  provider: string;
  model?: string | null;
}
/**
 * `dryRun`: what a compaction would do, no summarizer called.
 */
export interface CompactPreview {
  firstKeptEntryId: string | null;
  summarizeEntryIds: string[];
  keptEntryIds: string[];
  pruneEntryIds: string[];
  tokensBefore: number;
  tokensKept: number;
  tokensAfter: number;
  tokensAfterMax: number;
  splitTurn: boolean;
  summary: string;
}
export interface SearchResult {
  sessionId: string;
  hits: SearchHit[];
}
export interface SearchHit {
  entryId: string;
  type: string;
  role?: string;
  tool?: string;
  timestamp: string;
  /**
   * `current` or `abandoned`.
   */
  branch: "current" | "abandoned";
  /**
   * The compaction whose summary stands for it on the current branch.
   */
  foldedBy: string | null;
  snippet: string;
}
export interface HistoryEntries {
  sessionId: string;
  entries: HistoryEntry[];
  /**
   * Entries asked for that the token budget left out.
   */
  omitted: string[];
}
export interface HistoryEntry {
  entryId: string;
  type: string;
  role?: string;
  tool?: string;
  timestamp: string;
  /**
   * `current` or `abandoned`.
   */
  branch: "current" | "abandoned";
  /**
   * The compaction whose summary stands for it on the current branch.
   */
  foldedBy: string | null;
  parentId: string | null;
  text: string;
  tokens: number;
  truncated?: boolean;
}
export interface SourcesResult {
  sessionId: string;
  entryId: string;
  items: SourceItem[];
}
export interface SourceItem {
  item: number;
  section: string;
  text: string;
  entryIds: string[];
}
export interface SpanSummary {
  sessionId: string;
  summary: string;
  firstKeptEntryId: string | null;
  summarizeEntryIds: string[];
  tokensBefore: number;
  details: FileDetails;
}
export interface FileDetails {
  readFiles?: string[];
  modifiedFiles?: string[];
  sources?: SourcedItem[] | null;
}
/**
 * One item of a summary and the entries it was taken from.
 */
export interface SourcedItem {
  section: string;
  text: string;
  entryIds: string[];
}
export interface OpenResult {
  sessionId: string;
  name: string | null;
  leafId: string | null;
  model: string;
  contextWindow: number;
  usage: TokenUsage;
  path: string;
  source?: MirrorSource;
}
/**
 * The contextd/tokenUsage notification's body, and every result's `usage`.
 */
export interface TokenUsage {
  sessionId: string;
  tokens: number;
  contextWindow: number;
  percent: number;
  thresholdTokens: number;
  source: UsageSource;
  /**
   * What counted tokens were multiplied by: 1.0 for OpenAI models (exact counts).
   */
  calibration: number;
  model: string;
  breakdown: FigureBreakdown;
  agentCompaction?: AgentCompaction;
}
/**
 * Where the figure's tokens are, the way an agent's /context splits a window; the parts
 * add up to `tokens`.
 */
export interface FigureBreakdown {
  instructions: number;
  summary: number;
  messages: number;
  /**
   * What the agent sends that contextd never sees (system prompt, tool schemas).
   */
  unseen: number;
}
/**
 * Where a mirror's agent compacts its own session, from the agent's rules and its
 * configuration (compaction/agent_points.py).
 */
export interface AgentCompaction {
  /**
   * False: the agent does not compact on its own (then `tokens` and `percent` are null).
   */
  enabled: boolean;
  tokens: number | null;
  /**
   * Of `contextWindow`.
   */
  percent: number | null;
  /**
   * How the point was worked out: the rule, the settings taken and from where, the
   * defaults assumed, the files not found or not readable.
   */
  basis: string;
}
/**
 * The transcript a mirrored session follows (see contextd.follow).
 */
export interface MirrorSource {
  agent: "claude-code" | "codex" | "pi";
  path: string;
}
export interface StateResult {
  sessionId: string;
  name: string | null;
  leafId: string | null;
  model: string;
  contextWindow: number;
  usage: TokenUsage;
  path: string;
  source?: MirrorSource;
  workspace: string;
  entries: number;
  compacting: boolean;
}
export interface ListResult {
  sessions: SessionSummary[];
}
/**
 * A session as contextd/session/list and contextd/workspace/watch list it.
 */
export interface SessionSummary {
  sessionId: string;
  name: string | null;
  workspace: string;
  entries: number;
  tokens: number;
  updatedAt: string;
  parentSession?: ParentSession;
  source?: MirrorSource;
  /**
   * Why the session file cannot be opened.
   */
  damaged?: string;
}
export interface ParentSession {
  id: string;
  entryId?: string | null;
}
export interface StatsResult {
  sessionId: string;
  treeNodes: number;
  history: Figures;
  context: Figures;
  compactions: CompactionFigures;
  prunes: PruneFigures;
  ratio: number;
  breakdown: FigureBreakdown;
}
export interface Figures {
  entries: number;
  tokens: number;
}
export interface CompactionFigures {
  count: number;
  tokensSaved: number;
  summaryTokens: number;
}
export interface PruneFigures {
  count: number;
  tokensSaved: number;
}
export interface TreeResult {
  leafId: string | null;
  nodes: TreeNode[];
}
export interface TreeNode {
  id: string;
  parentId: string | null;
  type: string;
  /**
   * A message's role.
   */
  role?: string;
  preview: string;
  tokens: number;
  timestamp: string;
  children: string[];
  label?: string;
  /**
   * A compaction's or branch summary's one line.
   */
  shortSummary?: string;
  firstKeptEntryId?: string | null;
  tokensBefore?: number;
  /**
   * The three of a compaction.
   */
  tokensAfter?: number;
}
export interface IdleConfigureResult {
  enabled: boolean;
  timeoutSeconds: number;
  thresholdTokens: number | null;
  thresholdPercent: number;
  sessionId?: string;
  /**
   * These two for one session's idle compaction; absent for the daemon-wide settings.
   */
  effectiveThresholdTokens?: number;
}
export interface AppendResult {
  entryIds: string[];
  leafId: string | null;
  usage: TokenUsage;
}
export interface SetInstructionsResult {
  entryId: string;
  leafId: string | null;
  usage: TokenUsage;
}
export interface SetModelResult {
  model: string;
  contextWindow: number;
  usage: TokenUsage;
}
export interface CloseResult {
  closed: boolean;
}
export interface DeleteResult {
  deleted: boolean;
  sessionId: string;
  path: string;
}
export interface AbortResult {
  aborted: boolean;
}
export interface HandoffResult {
  sessionId: string;
  entryId: string;
  document: string;
}
export interface LabelResult {
  entryId: string;
  label: string | null;
}
export interface ForkResult {
  sessionId: string;
  leafId: string | null;
}
export interface EmptyResult {}
export interface SettingsResult {
  workspace: string | null;
  settings: Settings;
  /**
   * Each key set above the built-in layer, and the layer that set it.
   */
  sources: {
    [k: string]: string;
  };
  userFile: string;
  userFileError: string | null;
}
export interface Settings {
  defaultModel?: string;
  compaction?: CompactionSettings;
  pruning?: PruningSettings;
  idle?: IdleSettings;
  branchSummary?: BranchSummarySettings;
  summarizer?: SummarizerSettings;
  models?: {
    [k: string]: ModelOverride;
  };
  storage?: StorageSettings;
  follow?: FollowSettings;
  [k: string]: unknown;
}
export interface CompactionSettings {
  enabled?: boolean;
  strategy?: "summary" | "handoff" | "off";
  reserveTokens?: number;
  keepRecentTokens?: number;
  thresholdPercent?: number | null;
  thresholdTokens?: number | null;
  hookTimeoutSeconds?: number;
  readTools?: string[];
  modifyTools?: string[];
  promotion?: PromotionRule[];
  [k: string]: unknown;
}
/**
 * On an overflow or a truncated answer, a session on a model `from` names moves to `to`
 * instead of compacting, when `to` has the larger window (see tokens/promotion.py).
 */
export interface PromotionRule {
  from: string;
  to: string;
}
export interface PruningSettings {
  enabled?: boolean;
  protectTokens?: number;
  minimumSavings?: number;
  protectedTools?: string[];
  [k: string]: unknown;
}
export interface IdleSettings {
  enabled?: boolean;
  timeoutSeconds?: number;
  thresholdTokens?: number | null;
  thresholdPercent?: number;
  [k: string]: unknown;
}
export interface BranchSummarySettings {
  reserveTokens?: number;
  [k: string]: unknown;
}
export interface SummarizerSettings {
  provider?: "offline" | "anthropic" | "openai" | "remote" | "anthropic-native" | "openai-native";
  model?: string | null;
  baseUrl?: string | null;
  apiKeyEnv?: string | null;
  remoteEndpoint?: string | null;
  maxRetries?: number;
  timeoutSeconds?: number;
  fallback?: (
    "offline" | "anthropic" | "openai" | "remote" | "anthropic-native" | "openai-native"
  )[];
  [k: string]: unknown;
}
export interface ModelOverride {
  contextWindow?: number | null;
  maxOutputTokens?: number | null;
  encoding?: ("o200k_base" | "cl100k_base") | null;
  [k: string]: unknown;
}
export interface StorageSettings {
  dataDir?: string | null;
  maxLoadedSessions?: number;
  maxLoadedEntries?: number;
  [k: string]: unknown;
}
/**
 * Following other agents' transcripts as read-only mirrors (see contextd.follow).
 */
export interface FollowSettings {
  enabled?: boolean;
  agents?: ("claude-code" | "codex" | "pi")[];
  roots?: {
    [k: string]: string;
  };
  allWorkspaces?: boolean;
  intervalSeconds?: number;
  [k: string]: unknown;
}
export interface DaemonStatus {
  pid: number;
  /**
   * The socket or host:port it listens on; None on stdio.
   */
  address: string | null;
  dataDir: string;
  dedicated: boolean;
  startedAt: string;
  connections: ConnectionRow[];
  sessions: LoadedSession[];
  /**
   * The id of the connection that asked.
   */
  connection: number;
}
export interface ConnectionRow {
  id: number;
  /**
   * The name its initialize gave (clientInfo.name).
   */
  client: string | null;
  sessions: string[];
  workspaces: string[];
  allWorkspaces: boolean;
  connectedAt: string;
}
export interface LoadedSession {
  sessionId: string;
  name: string | null;
  tokens: number;
  /**
   * The ids of the connections that have it open.
   */
  connections: number[];
}
/**
 * The daemon-wide follow settings in force and how many transcripts are followed.
 */
export interface FollowResult {
  enabled: boolean;
  agents: ("claude-code" | "codex" | "pi")[];
  roots: {
    [k: string]: string;
  };
  allWorkspaces: boolean;
  mirrors: number;
}
export interface FollowEnvironmentResult {
  transcriptPath: string;
  /**
   * The names of the variables kept (their values are not sent back).
   */
  variables: string[];
}
export interface NavigateResult {
  leafId: string | null;
  /**
   * The summary left of the branch, when one was asked for.
   */
  branchSummaryId?: string;
  /**
   * A user message navigated to: its text, for the client's input box.
   */
  editorText?: string;
}
export interface ContextResult {
  /**
   * In the format asked for (neutral, anthropic, openai or openai-responses).
   */
  messages: {
    [k: string]: JsonValue;
  }[];
  system?: string;
  tokens: number;
}
export interface Notifications {
  "contextd/tokenUsage": TokenUsage;
  "contextd/sessionChanged": SessionChanged;
  "contextd/workspace/activity": WorkspaceActivity;
  "contextd/compactionStarted": CompactionStarted;
  "contextd/compactionFinished": CompactionFinished;
  "contextd/idleTimer": IdleTimer;
}
export interface SessionChanged {
  sessionId: string;
  leafId: string | null;
  cause: ChangeCause;
}
/**
 * `contextd/workspace/activity`: any change of any session of a watched workspace,
 * whoever made it (another editor, a script, the daemon following an agent's transcript).
 */
export interface WorkspaceActivity {
  sessionId: string;
  name: string | null;
  workspace: string;
  cause: ChangeCause;
  leafId: string | null;
  usage: TokenUsage;
  source?: MirrorSource;
  updatedAt: string;
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
  tokensBefore: number;
  outcome: CompactionOutcome;
  tokensAfter?: number;
  entryId?: string;
  shortSummary?: string | null;
  error?: string;
  willRetry: boolean;
  handoffSessionId?: string;
  model?: string;
  contextWindow?: number;
  previousModel?: string;
  /**
   * The last four for a promotion to a larger model.
   */
  previousContextWindow?: number;
}
export interface IdleTimer {
  sessionId: string;
  state: "armed" | "fired" | "cancelled";
  dueAt?: string;
  reason?: string;
}
export interface ClientRequests {
  "contextd/beforeCompact": BeforeCompactRequest;
  "contextd/beforeNavigate": BeforeNavigateRequest;
}
export interface BeforeCompactRequest {
  params: BeforeCompactParams;
  answer: BeforeCompactAnswer;
}
export interface BeforeCompactParams {
  sessionId: string;
  compactionId: string;
  reason: CompactionReason;
  tokensBefore: number;
  firstKeptEntryId: string | null;
  summarizeEntryIds: string[];
  keptEntryIds: string[];
  /**
   * The summary the compaction folds in, if an earlier one opens the context.
   */
  previousSummary: string | null;
}
/**
 * A client's answer to contextd/beforeCompact; null or {} lets the compaction proceed.
 */
export interface BeforeCompactAnswer {
  cancel?: boolean;
  /**
   * Used instead of the summarizer's.
   */
  summary?: string | null;
  /**
   * Added to the request's.
   */
  instructions?: string | null;
}
export interface BeforeNavigateRequest {
  params: BeforeNavigateParams;
  answer: BeforeNavigateAnswer;
}
export interface BeforeNavigateParams {
  sessionId: string;
  targetId: string;
  /**
   * The current leaf.
   */
  leafId: string | null;
  /**
   * Where the leaf will be.
   */
  newLeafId: string | null;
  commonAncestorId: string | null;
  /**
   * The nodes of the current path after commonAncestorId, oldest first.
   */
  leftBehindEntryIds: string[];
  summarize: boolean;
  instructions?: string;
}
/**
 * A client's answer to contextd/beforeNavigate; null or {} lets the navigation proceed.
 */
export interface BeforeNavigateAnswer {
  cancel?: boolean;
  /**
   * The branch summary, used instead of asking the summarizer.
   */
  summary?: string | null;
}
export interface AppendParams {
  sessionId: string;
  /**
   * @minItems 1
   * @maxItems 10000
   */
  messages: [
    UserMessage | AssistantMessage | ToolResultMessage,
    ...(UserMessage | AssistantMessage | ToolResultMessage)[]
  ];
}
export interface UserMessage {
  role?: "user";
  content: string | (TextContent | ImageContent)[];
}
export interface TextContent {
  type?: "text";
  text: string;
}
export interface ImageContent {
  type?: "image";
  data: string;
  mimeType: string;
}
export interface AssistantMessage {
  role?: "assistant";
  content?: (TextContent | ThinkingContent | ToolCall)[];
  usage?: Usage | null;
  stopReason?: "stop" | "toolUse" | "length" | "error" | "aborted";
  errorKind?: string | null;
  errorMessage?: string | null;
  model?: string | null;
}
export interface ThinkingContent {
  type?: "thinking";
  thinking: string;
  signature?: string | null;
}
export interface ToolCall {
  type?: "toolCall";
  id: string;
  name: string;
  arguments?: {
    [k: string]: unknown;
  };
}
/**
 * Token usage a provider reported for one assistant answer.
 */
export interface Usage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  total?: number | null;
}
export interface ToolResultMessage {
  role?: "toolResult";
  toolCallId: string;
  toolName: string;
  content: string | (TextContent | ImageContent)[];
  isError?: boolean;
}
export interface CompactParams {
  sessionId: string;
  instructions?: string | null;
  dryRun?: boolean;
}
export interface ContextParams {
  sessionId: string;
  format?: "neutral" | "anthropic" | "openai" | "openai-responses";
  /**
   * The model the request is for (default: the session's): provider state is replayed to
   * the model that made it only.
   */
  model?: string | null;
}
/**
 * What a followed agent's hook reports of the agent's own environment, for the mirror of
 * `transcriptPath`: only the variables its compaction point is worked out from.
 */
export interface FollowEnvironmentParams {
  agent: "claude-code" | "codex" | "pi";
  transcriptPath: string;
  /**
   * Those of the agent's variables (`AGENT_VARIABLES`) it has set; one it leaves out is unset.
   */
  environment: {
    [k: string]: string;
  };
}
/**
 * Changes to the daemon-wide `follow` settings; none only reads them.
 */
export interface FollowParams {
  enabled?: boolean | null;
  agents?: ("claude-code" | "codex" | "pi")[] | null;
  roots?: {
    [k: string]: string;
  } | null;
  allWorkspaces?: boolean | null;
}
export interface ForkParams {
  sessionId: string;
  entryId: string;
}
export interface HandoffParams {
  sessionId: string;
  goal?: string | null;
}
export interface HistoryGetParams {
  sessionId: string;
  entryIds?: [string, ...string[]] | null;
  around?: string | null;
  maxTokens?: number;
}
export interface HistorySearchParams {
  sessionId: string;
  query: string;
  limit?: number;
}
export interface HistorySourcesParams {
  sessionId: string;
  entryId: string;
  item?: number | string | null;
}
export interface HistorySummarizeParams {
  sessionId: string;
  throughEntryId?: string | null;
  firstKeptEntryId?: string | null;
  afterEntryId?: string | null;
}
export interface IdleConfigureParams {
  sessionId?: string | null;
  enabled: boolean;
  timeoutSeconds?: number | null;
  thresholdTokens?: number | null;
  thresholdPercent?: number | null;
}
export interface LabelParams {
  sessionId: string;
  entryId: string;
  label: string | null;
}
export interface ListParams {
  workspace?: string | null;
}
export interface NavigateParams {
  sessionId: string;
  targetId: string;
  summarize?: boolean;
  instructions?: string | null;
}
export interface OpenParams {
  workspace?: string | null;
  sessionId?: string | null;
  name?: string | null;
  model?: string | null;
}
export interface SessionParams {
  sessionId: string;
}
export interface SetInstructionsParams {
  sessionId: string;
  text: string;
  source?: string;
}
export interface SetModelParams {
  sessionId: string;
  model: string;
}
export interface SettingsParams {
  /**
   * Whose sessions' settings; the connection's workspace when omitted.
   */
  workspace?: string | null;
}
/**
 * A workspace, or every workspace; neither means the connection's first workspace folder.
 */
export interface WorkspaceWatchParams {
  workspace?: string | null;
  allWorkspaces?: boolean;
}
