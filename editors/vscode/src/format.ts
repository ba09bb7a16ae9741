/** How a session's status reads in the status bar and its tooltip. Pure functions. */
import type { ConnectionState } from "./daemonConnection";
import type { AgentCompaction, CompactPreview, FigureBreakdown, MirrorSource as SessionSource, SessionSummary, TokenUsage, TreeNode } from "./protocol";
import type { CompactionResult, SessionStatus } from "./statusModel";

export type Level = "normal" | "warning" | "error";

/** Above this share of the window the status turns to error, whatever the threshold. */
export const ERROR_PERCENT = 95;

/** 950, 8.4k, 84k, 1.05M: short enough for a status bar. */
export function formatTokens(tokens: number): string {
  if (tokens < 1000) return String(tokens);
  if (tokens < 10_000) return `${trimZeros((tokens / 1000).toFixed(1))}k`;
  const thousands = Math.round(tokens / 1000);
  if (thousands < 1000) return `${thousands}k`;
  return `${trimZeros((tokens / 1_000_000).toFixed(2))}M`;
}

function trimZeros(fixed: string): string {
  return fixed.replace(/\.?0+$/, "");
}

export function formatPercent(percent: number): string {
  return `${Math.round(percent)}%`;
}

export function usageLevel(usage: TokenUsage): Level {
  if (usage.percent > ERROR_PERCENT) return "error";
  if (usage.tokens > usage.thresholdTokens) return "warning";
  return "normal";
}

/**
 * A mirror is compacted by its agent, never at contextd's threshold: only a nearly full
 * window is a warning worth a colour there.
 */
export function statusLevel(status: SessionStatus): Level {
  if (!status.usage) return "normal";
  const level = usageLevel(status.usage);
  return status.source && level === "warning" ? "normal" : level;
}

export interface TextOptions {
  /** Several sessions are shown at once: say which one this is. */
  withName?: boolean;
  /** The daemon's connection; absent means connected. */
  connection?: ConnectionState;
  /** The user keeps the item on this session, whichever changes. */
  pinned?: boolean;
}

/**
 * Longest session name the status bar item shows; the tooltip has the whole of it. A narrow
 * window cuts the item's end (VS Code ellipsizes it), so the name comes after the figure.
 */
const STATUS_NAME_LENGTH = 20;

/** "$(database) 84k/200k 42% · fix tests": the figure (or the state) first, then which session. */
export function statusText(status: SessionStatus, options: TextOptions = {}): string {
  // A mirror always says whose session it is: "… · Claude Code · fix tests".
  const named = options.withName || status.source;
  const name = status.name ? truncate(status.name, STATUS_NAME_LENGTH) : undefined;
  const suffix = named ? ` · ${sessionTitle({ ...status, name })}` : "";
  // A figure from a daemon that is gone would be stale: say that there is none.
  if (options.connection?.kind === "disconnected") return `$(debug-disconnect) disconnected${suffix}`;
  if (options.connection?.kind === "starting") return `$(sync~spin) connecting…${suffix}`;
  if (status.compacting) {
    return `$(sync~spin) ${status.compacting.reason === "handoff" ? "handing off…" : "compacting…"}${suffix}`;
  }
  const icon = options.pinned ? "$(pinned)" : "$(database)";
  if (!status.usage) return `${icon} contextd${suffix}`;
  return `${icon} ${figureText(status.usage)}${suffix}`;
}

/** "84k/200k 42%". */
export function figureText(usage: Pick<TokenUsage, "tokens" | "contextWindow" | "percent">): string {
  return `${formatTokens(usage.tokens)}/${formatTokens(usage.contextWindow)} ${formatPercent(usage.percent)}`;
}

/** The session's name (or short id); a mirror's starts with its agent's: "Claude Code · fix tests". */
export function sessionTitle(status: Pick<SessionStatus, "sessionId" | "name" | "source">): string {
  const name = status.name || shortId(status.sessionId);
  return status.source ? `${agentName(status.source)} · ${name}` : name;
}

const AGENT_NAMES: Record<string, string> = { "claude-code": "Claude Code", codex: "Codex", pi: "pi" };

/** How a followed agent is called in the UI. */
export function agentName(source: { agent: string }): string {
  return AGENT_NAMES[source.agent] ?? source.agent;
}

export function shortId(id: string): string {
  return id.length > 10 ? `…${id.slice(-8)}` : id;
}

const thousands = new Intl.NumberFormat("en-US");

export function formatCount(tokens: number): string {
  return thousands.format(tokens);
}

const SOURCE_TEXT: Record<TokenUsage["source"], string> = {
  usage: "the provider's reported usage, plus counted tokens since",
  counted: "counted with the model's tokenizer",
  estimated: "estimated with a general tokenizer, calibrated by the provider's reports",
};

/** The tooltip's lines (Markdown) while the daemon is away. */
export function disconnectedTooltip(status: SessionStatus, connection: ConnectionState, now: number): string[] {
  const lines = [`**contextd** — ${sessionTitle(status)} \`${status.sessionId}\``];
  if (connection.kind === "starting") return [...lines, "Connecting to the daemon…"];
  if (connection.kind !== "disconnected") return lines;
  lines.push(`Disconnected: ${connection.reason}.`);
  if (connection.retryAt !== undefined) {
    lines.push(`Restarting it in ${Math.max(1, Math.round((connection.retryAt - now) / 1000))} s.`);
  }
  return [...lines, "", "Click to restart the daemon"];
}

/** What a screen reader says for the status item: words, not Markdown or icon names. */
export function statusAccessibilityLabel(status: SessionStatus, connection?: ConnectionState): string {
  const session = `contextd session ${sessionTitle(status)}`;
  if (connection?.kind === "disconnected") return `${session}: disconnected from the daemon, ${connection.reason}`;
  if (connection?.kind === "starting") return `${session}: connecting to the daemon`;
  if (status.compacting) return `${session}: ${status.compacting.reason === "handoff" ? "handing off" : "compacting"}`;
  if (!status.usage) return `${session}: no token figure yet`;
  const { tokens, contextWindow, percent } = status.usage;
  const level = usageLevel(status.usage);
  const warning = level === "error" ? ", nearly full" : level === "warning" ? ", above the compaction threshold" : "";
  return `${session}: ${formatCount(tokens)} of ${formatCount(contextWindow)} tokens, ${Math.round(percent)} percent of the context window${warning}`;
}

export interface TooltipOptions {
  /** Whether this window's settings let contextd compact automatically. */
  autoCompaction?: boolean;
}

/** The tooltip's lines (Markdown), given the current time for "x minutes ago". */
export function statusTooltip(status: SessionStatus, now: number, options: TooltipOptions = {}): string[] {
  const lines = [`**contextd** — ${sessionTitle(status)} \`${status.sessionId}\``];
  const usage = status.usage;
  if (usage) {
    lines.push(
      `Model: ${usage.model}`,
      `Context: ${formatCount(usage.tokens)} of ${formatCount(usage.contextWindow)} tokens (${usage.percent.toFixed(1)}%)`,
    );
    if (usage.breakdown) lines.push(breakdownLine(usage.breakdown));
    lines.push(`Window: ${formatCount(usage.contextWindow)} tokens`);
    // contextd never compacts a mirror: its threshold would say nothing true of it.
    if (!status.source) lines.push(thresholdLine(usage));
    lines.push(`Figure: ${SOURCE_TEXT[usage.source]}`);
  } else {
    lines.push("No token figure yet");
  }
  if (status.source) lines.push(...mirrorLines(status, status.source));
  if (status.compacting) lines.push(compactingLine(status));
  else lines.push(...attentionLines(status, options));
  if (status.lastCompaction || !status.source) {
    lines.push(`Last compaction: ${status.lastCompaction ? describeCompaction(status.lastCompaction, now, status.source) : "none seen by this window yet"}`);
  }
  if (status.lastCompaction?.shortSummary) lines.push(`Summary: ${escapeMarkdown(status.lastCompaction.shortSummary)}`);
  if (status.idleTimer?.state === "armed" && status.idleTimer.dueAt) {
    lines.push(`Idle compaction due at ${new Date(status.idleTimer.dueAt).toLocaleTimeString()}`);
  }
  lines.push("", "Click for session actions");
  return lines;
}

function thresholdLine(usage: TokenUsage): string {
  const thresholdPercent = (100 * usage.thresholdTokens) / usage.contextWindow;
  return `Compaction threshold: ${formatCount(usage.thresholdTokens)} tokens (${formatPercent(thresholdPercent)})`;
}

const BREAKDOWN_PARTS: Array<[keyof FigureBreakdown, string]> = [
  ["instructions", "instructions"],
  ["summary", "summary"],
  ["messages", "messages"],
  ["unseen", "system prompt and tools (unseen)"],
];

/** "Of which: instructions 1.2k · summary 3k · messages 60k · system prompt and tools (unseen) 14k". */
export function breakdownLine(breakdown: FigureBreakdown): string {
  const parts = BREAKDOWN_PARTS.filter(([key]) => breakdown[key] > 0).map(([key, text]) => `${text} ${formatTokens(breakdown[key])}`);
  return `Of which: ${parts.join(" · ") || "nothing yet"}`;
}

/** What a mirror is, and who compacts it: its agent, at the agent's own point. */
function mirrorLines(status: SessionStatus, source: SessionSource): string[] {
  const agent = agentName(source);
  const lines = [
    `Read-only mirror of ${agent}'s transcript \`${source.path}\``,
    `Compaction: ${agent} compacts this session itself, at its own point; contextd never compacts a mirror`,
  ];
  const point = status.usage?.agentCompaction;
  if (point) lines.push(agentPointLine(point), `How contextd knows: ${escapeMarkdown(point.basis)}`);
  const compactions = status.agentCompactions;
  if (compactions) {
    const point = compactions.lastTokensBefore !== undefined ? `; the latest at ${formatTokens(compactions.lastTokensBefore)} tokens` : "";
    lines.push(`Compactions in the transcript: ${compactions.count === 0 ? "none" : `${compactions.count}, by ${agent}${point}`}`);
  }
  return lines;
}

/** "Agent compacts at ~167k (83.5%)": the mirror's agent's own point, as the daemon worked it out. */
export function agentPointLine(point: AgentCompaction): string {
  if (!point.enabled || point.tokens === null || point.percent === null) return "Agent compacts: never on its own (its auto-compaction is off)";
  return `Agent compacts at ~${formatTokens(point.tokens)} (${point.percent}%)`;
}

/**
 * Why a full session was not compacted, and what the user can do: said whenever the item
 * turns to warning or error, so a red item never goes unexplained.
 */
export function attentionLines(status: SessionStatus, options: TooltipOptions = {}): string[] {
  const level = statusLevel(status);
  if (!status.usage || level === "normal") return [];
  if (status.source) {
    const agent = agentName(status.source);
    const point = status.usage.agentCompaction;
    const when = !point ? "when it decides to" : point.enabled && point.tokens !== null ? `at ~${formatTokens(point.tokens)}` : "only when asked (/compact), its auto-compaction being off";
    return [`Nearly full: ${agent} compacts it ${when}; contextd does not. Hand Off starts a session of contextd's own from it.`];
  }
  const last = status.lastCompaction;
  if (last?.outcome === "failed" && !last.willRetry) {
    return [
      `Not compacted: the last compaction (${last.reason}) failed: ${escapeMarkdown(last.error ?? "unknown error")}.`,
      "What to do: Compact Now to try again; if it fails again, check the contextd.summarizer settings (the contextd output has the details).",
    ];
  }
  if (last?.outcome === "skipped") {
    return [
      `Not compacted: the ${last.reason} compaction found ${escapeMarkdown(last.error ?? "nothing to compact")}.`,
      "What to do: Hand Off continues in a fresh session; a smaller contextd.compaction.keepRecentTokens leaves a compaction older history to fold.",
    ];
  }
  if (last?.outcome === "aborted" || last?.outcome === "cancelled") {
    return [`Not compacted: the last compaction was ${last.outcome}. Compact Now runs it again.`];
  }
  if (options.autoCompaction === false) {
    return ["Not compacted: automatic compaction is off (contextd.compaction.enabled). Compact Now, or Toggle Auto-compaction."];
  }
  return [
    "Above the compaction threshold, not compacted: contextd compacts after an append that reaches it, when older history is there to fold " +
      "(recent entries are kept whole). Compact Now tries at once; Hand Off continues in a fresh session.",
  ];
}

function compactingLine(status: SessionStatus): string {
  const compacting = status.compacting!;
  const progress = compacting.message ? `: ${compacting.message}` : "";
  return `Compacting now (${compacting.reason})${progress}`;
}

/** `source`: the mirror's, whose `agent` compactions its agent made itself. */
export function describeCompaction(result: CompactionResult, now: number, source?: Pick<SessionSource, "agent">): string {
  const when = timeAgo(now - result.finishedAt);
  const what = compactionOutcomeText(result);
  const why = result.reason === "agent" ? `by ${source ? agentName(source) : "the agent"} itself` : result.reason;
  return `${what} (${why}, ${when})`;
}

export function compactionOutcomeText(result: Omit<CompactionResult, "finishedAt">): string {
  switch (result.outcome) {
    case "compacted":
      return result.tokensBefore !== undefined && result.tokensAfter !== undefined
        ? `compacted ${formatTokens(result.tokensBefore)} → ${formatTokens(result.tokensAfter)} tokens`
        : "compacted";
    case "failed":
      return `failed: ${result.error ?? "unknown error"}${result.willRetry ? " (retrying)" : ""}`;
    case "aborted":
      return "aborted";
    case "cancelled":
      return "cancelled";
    case "promoted":
      return `moved to the larger model ${result.model ?? "(unknown)"} instead of compacting`;
    case "skipped":
      return `not compacted: ${result.error ?? "nothing to compact"}`;
  }
}

/**
 * A session's row in the session picker: a mirror says whose it is ("Claude Code · fix
 * tests"), a damaged session file why it cannot be opened; the share of the window shows when the window has heard the session's figure
 * (`usage`), the listing's token count otherwise.
 */
/** Longest name a picker row shows: a longer one would push the row's figures out of view. */
const PICK_NAME_LENGTH = 48;

export function sessionPickRow(
  session: SessionSummary,
  known: { current?: string; usage?: TokenUsage; now: number },
): { label: string; description: string } {
  // A file that cannot be opened shows only why: it has no name, entries or tokens to show.
  if (session.damaged) return { label: `$(warning) ${session.sessionId}`, description: `damaged: ${session.damaged}` };
  const icon = session.sessionId === known.current ? "$(check) " : session.source ? "$(eye) " : "";
  const name = session.name ?? undefined;
  const description = [
    known.usage ? formatPercent(known.usage.percent) : "",
    `${formatTokens(known.usage?.tokens ?? session.tokens)} tokens`,
    `${session.entries} entries`,
    timeAgo(known.now - Date.parse(session.updatedAt)),
    session.source ? "read-only mirror" : "",
  ];
  return {
    label: `${icon}${sessionTitle({ sessionId: session.sessionId, name: name && truncate(name, PICK_NAME_LENGTH), source: session.source ?? undefined })}`,
    description: description.filter(Boolean).join(" · "),
  };
}

/** Text from a session (a summary line) shown as itself in a Markdown tooltip. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~$]/g, "\\$&");
}

export function timeAgo(milliseconds: number): string {
  const seconds = Math.max(0, Math.round(milliseconds / 1000));
  if (seconds < 60) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return `${Math.round(hours / 24)} d ago`;
}

/** A dry run as a message and a detail text: what would be summarized, kept and pruned. */
export function describePreview(
  preview: CompactPreview,
  nodes: ReadonlyMap<string, TreeNode> = new Map(),
): { message: string; detail: string } {
  const message =
    `Compaction would take the context from ${formatCount(preview.tokensBefore)} ` +
    `to about ${formatCount(preview.tokensAfter)} tokens.`;
  const sections = [
    entrySection("Summarized (dropped from the context)", preview.summarizeEntryIds, nodes),
    entrySection("Kept verbatim", preview.keptEntryIds, nodes),
    entrySection("Tool output pruned", preview.pruneEntryIds, nodes),
  ];
  return { message, detail: sections.join("\n\n") };
}

const PREVIEW_LINES = 5;

function entrySection(title: string, ids: string[], nodes: ReadonlyMap<string, TreeNode>): string {
  const header = `${title}: ${ids.length} ${ids.length === 1 ? "entry" : "entries"}`;
  const shown = ids.slice(0, PREVIEW_LINES).map((id) => `  • ${entryLine(id, nodes.get(id))}`);
  const more = ids.length > PREVIEW_LINES ? [`  … and ${ids.length - PREVIEW_LINES} more`] : [];
  return [header, ...shown, ...more].join("\n");
}

function entryLine(id: string, node: TreeNode | undefined): string {
  if (!node) return id;
  return `${node.role ?? node.type}: ${truncate(node.preview, 80)}`;
}

export function truncate(text: string, length: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}
