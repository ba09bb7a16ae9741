/**
 * The palette commands, as functions of a small context: the editor's UI, the
 * sessions and the settings. Each reports its own failure with the daemon's words.
 */
import { agentName, describePreview, formatCount, formatTokens, sessionPickRow, sessionTitle } from "./format";
import { ErrorCode, SessionSummary, TreeNode } from "./protocol";
import { errorCode, errorText } from "./rpc";
import type { ContextdSessions } from "./sessions";
import { treeRows } from "./treeItems";
import type { SettingsStore, Ui } from "./ui";

export type SessionsApi = Pick<
  ContextdSessions,
  | "current"
  | "setCurrent"
  | "status"
  | "open"
  | "list"
  | "preview"
  | "compact"
  | "handoff"
  | "tree"
  | "navigate"
  | "fork"
  | "label"
  | "configureIdle"
  | "delete"
>;

export interface CommandContext {
  ui: Ui;
  sessions: SessionsApi;
  settings: SettingsStore;
}

type Command = (ctx: CommandContext, sessionId?: string) => Promise<void>;

export const compactNow: Command = (ctx, sessionId) =>
  guarded(ctx, "compaction", async () => {
    const id = await resolveSession(ctx, sessionId);
    if (!id || (await refuseMirror(ctx, id, "compacting it"))) return;
    const instructions = await ctx.ui.input({
      title: "contextd: Compact Now",
      prompt: "Extra instructions for the summary (optional). Enter to compact, Escape to cancel.",
      placeholder: "e.g. keep the exact failing test output",
    });
    if (instructions === undefined) return;
    await runCompaction(ctx, id, instructions.trim() || undefined);
  });

async function runCompaction(ctx: CommandContext, sessionId: string, instructions?: string): Promise<void> {
  const result = await ctx.sessions.compact(sessionId, { instructions });
  await ctx.ui.info(
    `contextd: compacted ${title(ctx, sessionId)} from ${formatTokens(result.tokensBefore)} ` +
      `to ${formatTokens(result.tokensAfter)} tokens.`,
  );
}

export const compactPreview: Command = (ctx, sessionId) =>
  guarded(ctx, "compaction preview", async () => {
    const id = await resolveSession(ctx, sessionId);
    if (!id) return;
    const preview = await ctx.sessions.preview(id);
    const nodes = await treeNodesIfAvailable(ctx, id);
    const { message, detail } = describePreview(preview, nodes);
    const choice = await ctx.ui.info(message, { modal: true, detail }, "Compact Now");
    if (choice === "Compact Now") await runCompaction(ctx, id);
  });

/** Previews of entries for the dry run, when the daemon can give the tree. */
async function treeNodesIfAvailable(ctx: CommandContext, sessionId: string): Promise<Map<string, TreeNode>> {
  try {
    const tree = await ctx.sessions.tree(sessionId);
    return new Map(tree.nodes.map((node) => [node.id, node]));
  } catch (error) {
    if (errorCode(error) === ErrorCode.methodNotFound) return new Map();
    throw error;
  }
}

export const handoff: Command = (ctx, sessionId) =>
  guarded(ctx, "hand-off", async () => {
    const id = await resolveSession(ctx, sessionId);
    if (!id) return;
    const goal = await ctx.ui.input({
      title: "contextd: Hand Off to New Session",
      prompt: "Goal of the new session (optional)",
      placeholder: "e.g. finish the migration to the new API",
    });
    if (goal === undefined) return;
    // Its progress notification, with a cancel button, is the one every summarizing job gets.
    const result = await ctx.sessions.handoff(id, goal.trim() || undefined);
    const choice = await ctx.ui.info(
      `contextd: handed off ${title(ctx, id)} to the new session ${title(ctx, result.sessionId)}.`,
      {},
      "Show Document",
      "Copy Hand-off",
    );
    if (choice === "Show Document") await ctx.ui.showDocument(result.document, `Hand-off to ${title(ctx, result.sessionId)}`);
    if (choice === "Copy Hand-off") await copyHandoff(ctx, result.document);
  });

async function copyHandoff(ctx: CommandContext, document: string): Promise<void> {
  await ctx.ui.copy(document);
  await ctx.ui.info("contextd: the hand-off document is on the clipboard.");
}

/** Go to Entry: choose an entry in a quick pick, then how to leave the current branch. */
export const goToEntry: Command = (ctx, sessionId) =>
  guarded(ctx, "navigation", async () => {
    const id = await resolveSession(ctx, sessionId);
    if (!id || (await refuseMirror(ctx, id, "moving its leaf"))) return;
    const target = await pickEntry(ctx, id, "contextd: Go to Entry", "Choose an entry to continue from");
    if (!target || target.isLeaf) return;
    const choice = await ctx.ui.pick(
      [
        { label: "$(fold) Summarize the branch I leave", value: "summarize" as const },
        { label: "$(edit) Summarize it with instructions…", value: "instructions" as const },
        { label: "$(arrow-right) Just move, no summary", value: "move" as const },
      ],
      { title: "contextd: Leave the current branch", placeholder: "Keep what the branch you leave found out?" },
    );
    if (!choice) return;
    await moveLeaf(ctx, id, target.node.id, choice);
  });

/** The tree view's Move Here (`move`) and Move Here and Summarize (`summarize`, `instructions`). */
export function moveTo(ctx: CommandContext, sessionId: string, entryId: string, how: "move" | "summarize" | "instructions") {
  return guarded(ctx, "navigation", async () => {
    if (!(await refuseMirror(ctx, sessionId, "moving its leaf"))) await moveLeaf(ctx, sessionId, entryId, how);
  });
}

async function moveLeaf(
  ctx: CommandContext,
  sessionId: string,
  entryId: string,
  how: "move" | "summarize" | "instructions",
): Promise<void> {
  const instructions = how === "instructions" ? await askSummaryInstructions(ctx) : undefined;
  if (how === "instructions" && instructions === undefined) return;
  const summarize = how !== "move";
  const navigate = (token?: Parameters<SessionsApi["navigate"]>[3]) =>
    ctx.sessions.navigate(sessionId, entryId, { summarize, instructions }, token);
  const result = summarize
    ? await ctx.ui.progress("contextd: summarizing the branch you leave…", (_, token) => navigate(token))
    : await navigate();
  await reportNavigation(ctx, result.editorText ?? undefined);
}

function askSummaryInstructions(ctx: CommandContext): Promise<string | undefined> {
  return ctx.ui.input({
    title: "contextd: Branch summary",
    prompt: "Instructions for the summary of the branch you leave",
    placeholder: "e.g. note why this approach failed",
  });
}

async function reportNavigation(ctx: CommandContext, editorText?: string): Promise<void> {
  if (!editorText) {
    await ctx.ui.info("contextd: moved the session to the chosen entry.");
    return;
  }
  const choice = await ctx.ui.info(
    "contextd: moved the session before the chosen message; its text is ready to edit and resend.",
    {},
    "Copy Message",
  );
  if (choice === "Copy Message") await ctx.ui.copy(editorText);
}

/** Fork From Here; `entry` comes from the tree view, else the user picks one. */
export const fork = (ctx: CommandContext, sessionId?: string, entry?: TreeNode) =>
  guarded(ctx, "fork", async () => {
    const id = await resolveSession(ctx, sessionId);
    if (!id) return;
    const node = entry ?? (await pickEntry(ctx, id, "contextd: Fork From Here", "The new session's history ends at this entry"))?.node;
    if (!node) return;
    const result = await ctx.sessions.fork(id, node.id);
    await ctx.ui.info(`contextd: forked ${title(ctx, id)} into the new session ${title(ctx, result.sessionId)}.`);
  });

/** Label Entry; `entry` comes from the tree view, else the user picks one. */
export const label = (ctx: CommandContext, sessionId?: string, entry?: TreeNode) =>
  guarded(ctx, "label", async () => {
    const id = await resolveSession(ctx, sessionId);
    if (!id || (await refuseMirror(ctx, id, "labelling its entries"))) return;
    const node = entry ?? (await pickEntry(ctx, id, "contextd: Label Entry", "Choose the entry to label"))?.node;
    if (!node) return;
    const text = await ctx.ui.input({
      title: "contextd: Label Entry",
      prompt: "Label (empty removes it)",
      value: node.label ?? "",
    });
    if (text === undefined) return;
    await ctx.sessions.label(id, node.id, text.trim() || null);
  });

export const toggleAutoCompaction: Command = async (ctx) =>
  guarded(ctx, "setting auto-compaction", async () => {
    const enabled = ctx.settings.get<boolean>("compaction.enabled") ?? true;
    await ctx.settings.update("compaction.enabled", !enabled);
    await ctx.ui.info(`contextd: auto-compaction ${enabled ? "off" : "on"}.`);
  });

const IDLE_CHOICES: Array<{ label: string; seconds: number | "off" | "custom" }> = [
  { label: "Off", seconds: "off" },
  { label: "1 minute", seconds: 60 },
  { label: "5 minutes", seconds: 300 },
  { label: "15 minutes", seconds: 900 },
  { label: "30 minutes", seconds: 1800 },
  { label: "Custom…", seconds: "custom" },
];

export const setIdleTimer: Command = (ctx, sessionId) =>
  guarded(ctx, "idle timer", async () => {
    const id = await resolveSession(ctx, sessionId);
    if (!id || (await refuseMirror(ctx, id, "compacting it when idle"))) return;
    const choice = await ctx.ui.pick(
      IDLE_CHOICES.map((c) => ({ label: c.label, value: c.seconds })),
      { title: "contextd: Idle Compaction Timer", placeholder: "Compact this session after it sits idle for…" },
    );
    if (choice === undefined) return;
    const seconds = choice === "custom" ? await askSeconds(ctx) : choice;
    if (seconds === undefined) return;
    if (seconds === "off") {
      await ctx.sessions.configureIdle({ sessionId: id, enabled: false });
      await ctx.ui.info(`contextd: idle compaction off for ${title(ctx, id)}.`);
      return;
    }
    const result = await ctx.sessions.configureIdle({ sessionId: id, enabled: true, timeoutSeconds: seconds });
    const above = result.effectiveThresholdTokens ? `, once above ${formatCount(result.effectiveThresholdTokens)} tokens` : "";
    await ctx.ui.info(`contextd: ${title(ctx, id)} compacts after ${formatDuration(seconds)} idle${above}.`);
  });

async function askSeconds(ctx: CommandContext): Promise<number | undefined> {
  const text = await ctx.ui.input({
    title: "contextd: Idle Compaction Timer",
    prompt: "Seconds of inactivity before compacting",
    value: "600",
    validate: (value) => (parseSeconds(value) === undefined ? "A number of seconds above 0" : undefined),
  });
  return text === undefined ? undefined : parseSeconds(text);
}

export function parseSeconds(text: string): number | undefined {
  const value = Number(text.trim());
  return text.trim() !== "" && Number.isFinite(value) && value > 0 ? value : undefined;
}

function formatDuration(seconds: number): string {
  return seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`;
}

const NEW_SESSION = Symbol("new session");

/** Lets the user choose (or start) the session the commands act on; returns its id. */
export async function switchSession(ctx: CommandContext): Promise<string | undefined> {
  let chosen: string | undefined;
  await guarded(ctx, "switching sessions", async () => {
    const { sessions } = await ctx.sessions.list();
    const shown = ctx.sessions.status.shown()?.sessionId ?? ctx.sessions.current;
    // The session shown comes preselected: Enter keeps it, and never makes a new one by mistake.
    const choice = await ctx.ui.pick<string | typeof NEW_SESSION>(
      [
        ...sessionRows(ctx, sessions, shown),
        {
          label: "$(add) New session",
          description: "empty, for an agent or a script to fill through contextd's API",
          value: NEW_SESSION,
        },
      ],
      {
        title: "contextd: Switch Session",
        placeholder: "Session to show and act on: this workspace's, whoever drives them",
        active: shown,
      },
    );
    if (choice === undefined) return;
    const damaged = sessions.find((s) => s.sessionId === choice && s.damaged);
    if (damaged) {
      // Opening it would only fail (-32009): say why, as the row did.
      await ctx.ui.info(`contextd: the session ${damaged.sessionId} is damaged and cannot be opened: ${damaged.damaged}.`);
      return;
    }
    if (choice === NEW_SESSION) {
      chosen = await newSession(ctx);
    } else if (ctx.sessions.status.has(choice)) {
      ctx.sessions.setCurrent(choice);
      chosen = choice;
    } else {
      const name = sessions.find((s) => s.sessionId === choice)?.name ?? undefined;
      chosen = (await ctx.sessions.open({ sessionId: choice, name })).sessionId;
    }
    // A choice the item would not show (another session is pinned) moves the pin to it.
    const pinned = ctx.sessions.status.pinned;
    if (pinned && chosen && pinned !== chosen) ctx.sessions.status.pin(chosen);
  });
  return chosen;
}

async function newSession(ctx: CommandContext): Promise<string | undefined> {
  const name = await ctx.ui.input({ title: "contextd: New Session", prompt: "Name (optional)" });
  if (name === undefined) return undefined;
  return (await ctx.sessions.open(name.trim() ? { name: name.trim() } : {})).sessionId;
}

function sessionRows(ctx: CommandContext, sessions: SessionSummary[], shown: string | undefined) {
  const now = Date.now();
  return sessions.map((s) => ({
    ...sessionPickRow(s, { current: shown, usage: ctx.sessions.status.get(s.sessionId)?.usage, now }),
    value: s.sessionId,
  }));
}

/** Delete Session: one of the workspace's sessions, file and all, after a modal confirmation. */
export const deleteSession: Command = (ctx, sessionId) =>
  guarded(ctx, "deleting the session", async () => {
    const { sessions } = await ctx.sessions.list();
    const id =
      sessionId ??
      (await ctx.ui.pick(sessionRows(ctx, sessions, ctx.sessions.status.shown()?.sessionId), {
        title: "contextd: Delete Session",
        placeholder: "Session to delete, with its whole history",
      }));
    if (!id) return;
    const row = sessions.find((s) => s.sessionId === id);
    const name = sessionTitle({ sessionId: id, name: row?.name ?? ctx.sessions.status.get(id)?.name, source: row?.source ?? undefined });
    const detail = row?.source
      ? `It mirrors ${agentName(row.source)}'s transcript, which stays: the mirror comes back whole when the transcript next grows.`
      : "Its file and whole history go, for every editor and script that uses it; this cannot be undone.";
    const confirmed = await ctx.ui.info(`Delete the contextd session ${name}?`, { modal: true, detail }, "Delete");
    if (confirmed !== "Delete") return;
    await ctx.sessions.delete(id);
    await ctx.ui.info(`contextd: deleted the session ${name}.`);
  });

/** `notForMirrors`: what a mirror cannot have: it writes to the session or steers contextd's compaction of it. */
const ACTIONS: Array<{ label: string; run: Command; notForMirrors?: boolean }> = [
  { label: "$(fold) Compact Now", run: compactNow, notForMirrors: true },
  { label: "$(eye) Compact Preview", run: compactPreview },
  { label: "$(arrow-swap) Hand Off to New Session", run: handoff },
  { label: "$(list-tree) Go to Entry…", run: goToEntry, notForMirrors: true },
  { label: "$(repo-forked) Fork From Here", run: fork },
  { label: "$(tag) Label Entry", run: label, notForMirrors: true },
  { label: "$(settings-gear) Toggle Auto-compaction", run: toggleAutoCompaction, notForMirrors: true },
  { label: "$(watch) Set Idle Compaction Timer", run: setIdleTimer, notForMirrors: true },
  { label: "$(list-selection) Switch Session", run: async (ctx) => void (await switchSession(ctx)) },
];

/** Keeps the status bar on the session, or lets it follow whichever session changes again. */
export const togglePin: Command = async (ctx, sessionId) => {
  const id = sessionId ?? ctx.sessions.status.shown()?.sessionId;
  if (!id) return;
  const pinning = ctx.sessions.status.pinned !== id;
  ctx.sessions.status.pin(pinning ? id : undefined);
  await ctx.ui.info(
    pinning
      ? `contextd: the status bar stays on ${title(ctx, id)}.`
      : "contextd: the status bar shows whichever session of the workspace changed last again.",
  );
};

/** The status bar item's click: the actions above for that session. */
export const showActions: Command = async (ctx, sessionId) => {
  const id = sessionId ?? ctx.sessions.current;
  if (id) ctx.sessions.setCurrent(id);
  const status = id ? ctx.sessions.status.get(id) : undefined;
  const usage = status?.usage;
  const figure = usage ? `${formatCount(usage.tokens)} of ${formatCount(usage.contextWindow)} tokens` : undefined;
  // A mirror is offered only what leaves it as its agent wrote it.
  const actions = status?.source ? ACTIONS.filter((a) => !a.notForMirrors) : ACTIONS;
  const pin = {
    label: ctx.sessions.status.pinned === id ? "$(pinned) Unpin: Show the Session That Changes" : "$(pin) Pin: Keep the Status Bar on This Session",
    run: togglePin,
  };
  const action = await ctx.ui.pick(
    [...actions, pin].map((a) => ({ label: a.label, value: a.run })),
    {
      title: status ? `contextd: ${sessionTitle(status)}` : "contextd",
      placeholder: status?.source ? [figure, `read-only mirror of ${agentName(status.source)}'s session`].filter(Boolean).join(" · ") : figure,
    },
  );
  if (action) await action(ctx, id);
};

/** Turns following on for this workspace: the daemon mirrors the agents' transcripts of it. */
export const followWorkspace: Command = (ctx) =>
  guarded(ctx, "following", async () => {
    await ctx.settings.update("follow.enabled", true, "workspace");
    await ctx.ui.info(
      "contextd: following Claude Code, Codex and pi sessions of this workspace. The status bar shows the one that changes, " +
        "as soon as the agent writes to its transcript.",
    );
  });

const FOLLOW = Symbol("follow");
const NEW = Symbol("new");
const WALKTHROUGH = Symbol("walkthrough");

/** The idle item's click: the ways to a first session in this workspace. */
export const getStarted: Command = async (ctx) => {
  const following = ctx.settings.get<boolean>("follow.enabled") === true;
  const choice = await ctx.ui.pick<symbol>(
    [
      ...(following
        ? []
        : [{ label: "$(eye) Follow Claude Code / Codex / pi sessions of this workspace", description: "read-only mirrors", value: FOLLOW }]),
      { label: "$(book) How an agent or a script feeds a session", value: WALKTHROUGH },
      { label: "$(add) New session", description: "an empty session for an agent or a script to fill", value: NEW },
    ],
    {
      title: "contextd: no session in this workspace yet",
      placeholder: following ? "contextd follows your agents: a session shows once one writes in this workspace" : "Get started",
    },
  );
  if (choice === FOLLOW) await followWorkspace(ctx);
  if (choice === WALKTHROUGH) await ctx.ui.openWalkthrough();
  if (choice === NEW) await guarded(ctx, "starting a session", async () => void (await newSession(ctx)));
};

async function resolveSession(ctx: CommandContext, sessionId?: string): Promise<string | undefined> {
  return sessionId ?? ctx.sessions.current ?? (await switchSession(ctx));
}

async function pickEntry(ctx: CommandContext, sessionId: string, pickTitle: string, placeholder: string) {
  const tree = await ctx.sessions.tree(sessionId);
  if (tree.nodes.length === 0) {
    await ctx.ui.info("contextd: this session has no entries yet.");
    return undefined;
  }
  const rows = treeRows(tree);
  const leaf = rows.find((r) => r.isLeaf);
  return ctx.ui.pick(
    rows.map((r) => ({ label: r.label, description: r.description, value: r })),
    { title: pickTitle, placeholder, active: leaf },
  );
}

/**
 * Says why a write to a read-only mirror cannot happen, and returns true, for a mirror;
 * false for a session of contextd's own.
 */
async function refuseMirror(ctx: CommandContext, sessionId: string, what: string): Promise<boolean> {
  const source = ctx.sessions.status.get(sessionId)?.source;
  if (!source) return false;
  await ctx.ui.info(mirrorText(`${title(ctx, sessionId)} is`, agentName(source), what));
  return true;
}

function mirrorText(subject: string, agent: string, what: string): string {
  return (
    `contextd: ${subject} a read-only mirror of ${agent}'s session, so ${what} is not possible. ` +
    "Compact Preview shows what a compaction would keep; Hand Off starts a session of contextd's own from it."
  );
}

function title(ctx: CommandContext, sessionId: string): string {
  const status = ctx.sessions.status.get(sessionId);
  return sessionTitle(status ?? { sessionId });
}

async function guarded(ctx: CommandContext, action: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    await reportFailure(ctx.ui, action, error);
  }
}

export function isCancellation(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return errorCode(error) === ErrorCode.cancelled || name === "Canceled";
}

async function reportFailure(ui: Ui, action: string, error: unknown): Promise<void> {
  const code = errorCode(error);
  if (isCancellation(error)) {
    await ui.info(`contextd: ${action} cancelled.`);
  } else if (code === ErrorCode.nothingToCompact) {
    await ui.info(`contextd: nothing to compact yet (${errorText(error)}).`);
  } else if (code === ErrorCode.readOnlyMirror) {
    await ui.info(mirrorText("this session is", "another agent", action));
  } else if (code === ErrorCode.methodNotFound) {
    await ui.error(`contextd: this daemon does not support ${action} yet (${errorText(error)}).`);
  } else {
    await ui.error(`contextd: ${action} failed: ${errorText(error)}`);
  }
}
