/**
 * The extension's shell: starts `contextd serve` with vscode-languageclient (a fresh client
 * per start, see daemonConnection.ts), sends settings, and wires the status bar, the session
 * tree, the commands and the API.
 */
import { spawn } from "node:child_process";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  Message,
  MessageTransports,
  RevealOutputChannelOn,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-languageclient/node";
import { ContextdApi, createApi } from "./api";
import * as commands from "./commands";
import { CompactionProgress } from "./compactionProgress";
import { LaunchOptions, RestartPolicy, remoteSettingsHint, serverCommand, writeDaemonSettings } from "./daemon";
import { ConnectionReporter, DaemonConnection } from "./daemonConnection";
import { HANDOFF_SCHEME } from "./handoffDocuments";
import { LeveledOutput } from "./logOutput";
import { DaemonStatus, FollowResult, Method } from "./protocol";
import { errorText } from "./rpc";
import { ContextdSessions } from "./sessions";
import { SESSION_TREE_VIEW, SessionTreeView } from "./sessionTree";
import { explicitSettings, followParams, LAUNCH_KEYS, OWNER_KEYS, RUNTIME_FOLLOW_KEYS, SECTION } from "./settings";
import { openSettingCommand } from "./settingsEditor";
import { EntryElement, SessionTreeElement } from "./treeItems";
import { GET_STARTED_COMMAND, RESTART_COMMAND, SessionStatusBar, SHOW_ACTIONS_COMMAND } from "./statusBar";
import { handoffDocuments, vscodeSettings, vscodeUi } from "./vscodeUi";

let connection: DaemonConnection | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<ContextdApi> {
  const output = vscode.window.createOutputChannel("contextd", { log: true });
  const clientOutput = new LeveledOutput(output);
  const lastStderr = { line: "" };
  // The client's middleware needs the sessions, which need the connection: tie the knot lazily.
  let route: ContextdSessions["routeProgress"] = () => false;
  // Per workspace, so that a shared daemon this window starts gets this workspace's settings.
  const storage = (context.storageUri ?? context.globalStorageUri).fsPath;
  const daemon = new DaemonConnection(
    () => createClient(clientOutput, lastStderr, storage, (token, value) => route(token, value)),
    new RestartPolicy(),
    reporter(output, lastStderr),
  );
  connection = daemon;
  const sessions = new ContextdSessions(daemon, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  route = (token, value) => sessions.routeProgress(token, value);
  const commandContext: commands.CommandContext = { ui: vscodeUi, sessions, settings: vscodeSettings };
  const tree = new SessionTreeView(sessions, daemon);
  const statusBar = new SessionStatusBar(sessions, daemon, { autoCompaction });

  context.subscriptions.push(
    output,
    sessions,
    statusBar,
    new CompactionProgress(sessions, vscodeUi),
    tree,
    vscode.workspace.registerTextDocumentContentProvider(HANDOFF_SCHEME, handoffDocuments),
    ...registerCommands(commandContext, tree, () => daemon.restart()),
    vscode.workspace.onDidChangeConfiguration((event) =>
      onConfigurationChange(event, daemon, output, storage).catch((error) => output.error(`applying settings: ${errorText(error)}`)),
    ),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.compaction`)) statusBar.render();
    }),
    reopenSessionsAfterRestart(daemon, sessions, output),
    daemon.onDidChangeState((state) => {
      if (state.kind !== "connected") return;
      checkInterpreterSetting(context, output, daemon.daemonVersion);
      logWhichDaemon(daemon, output);
      // A shared daemon started without following (by the CLI, another editor) follows once this window asks it to.
      if (isShared() && followParams(currentSettings()).enabled === true) {
        applyFollowSettings(daemon, output);
      }
      // Every connection watches anew: the status bar follows whoever drives this workspace's sessions.
      sessions
        .watchWorkspace()
        .then((watched) => (watched && isShared() ? sessions.showNewest(watched.sessions) : undefined))
        .catch((error) => output.error(`watching the workspace's sessions: ${errorText(error)}`));
    }),
    { dispose: () => void daemon.dispose() },
  );
  await daemon.start();
  return createApi(sessions);
}

export async function deactivate(): Promise<void> {
  await connection?.dispose();
  connection = undefined;
}

/** vscode-languageclient, without its own notifications: this extension reports failures itself. */
class QuietLanguageClient extends LanguageClient {
  constructor(...args: ConstructorParameters<typeof LanguageClient>) {
    super(...args);
    // When the daemon exits during `initialize`, vscode-languageclient 9 forgets its start
    // promise (the close handler resets it) and then rejects it: an unhandled rejection.
    // start()'s own outcome is checked by DaemonConnection, so that orphan is ignored.
    const internals = this as unknown as { createOnStartPromise?: () => [Promise<void>, unknown, unknown] };
    const create = internals.createOnStartPromise?.bind(this);
    if (create) {
      internals.createOnStartPromise = () => {
        const made = create();
        made[0].catch(() => undefined);
        return made;
      };
    }
  }

  override error(message: string, data?: unknown): void {
    super.error(message, data, false);
  }

  override warn(message: string, data?: unknown): void {
    super.warn(message, data, false);
  }

  override info(message: string, data?: unknown): void {
    super.info(message, data, false);
  }

  /**
   * After a failed start vscode-languageclient calls `void this.stop()` on a client that
   * never ran, whose rejection nobody handles; there is nothing to stop then.
   */
  override async stop(timeout?: number): Promise<void> {
    if (this.isRunning()) await super.stop(timeout);
  }
}

/**
 * A writer whose failed writes go only through onError: when the daemon has died, the
 * connection's close rejects the pending requests, and a rejected write (vscode-languageclient
 * does not await all of them) would be an unhandled rejection.
 */
class DaemonWriter extends StreamMessageWriter {
  override write(message: Message): Promise<void> {
    return super.write(message).catch(() => undefined);
  }
}

function createClient(
  output: vscode.OutputChannel,
  lastStderr: { line: string },
  storage: string,
  routeProgress: ContextdSessions["routeProgress"],
): LanguageClient {
  const clientOptions: LanguageClientOptions = {
    documentSelector: [],
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: () => currentSettings(),
    // DaemonConnection restarts the daemon (with a new client) and tells the user.
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue, handled: true }),
      closed: () => ({ action: CloseAction.DoNotRestart, handled: true, message: "the daemon exited" }),
    },
    initializationFailedHandler: () => false,
    middleware: {
      // A compaction's progress shows in our cancellable notification, not in a second
      // status bar progress; the end still goes through so the client cleans up.
      handleWorkDoneProgress: (token, params, next) => {
        const routed = routeProgress(token, params);
        if (!routed || params.kind === "end") next(token, params);
      },
      // The daemon pulls each folder's settings (scopeUri): the values the user set there.
      workspace: {
        configuration: (params, token, next) =>
          params.items.every((item) => item.section === SECTION)
            ? params.items.map((item) => settingsFor(item.scopeUri))
            : next(params, token),
      },
    },
  };
  return new QuietLanguageClient("contextd", "contextd", () => startDaemon(output, lastStderr, storage), clientOptions);
}

/**
 * Spawns the daemon, or with contextd.sharedDaemon the forwarder to the shared one; called
 * at every (re)start, so a changed interpreter, data dir or setting takes effect.
 */
async function startDaemon(output: vscode.OutputChannel, lastStderr: { line: string }, storage: string): Promise<MessageTransports> {
  const { command, args } = serverCommand(vscode.workspace.getConfiguration(SECTION).get<string>("pythonPath"), launchOptions(storage));
  lastStderr.line = "";
  const child = spawn(command, args, { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, stdio: "pipe" });
  // The last line the daemon wrote says best why it did not start ("No module named contextd").
  child.stderr.on("data", (chunk: Buffer) => {
    output.append(chunk.toString());
    const lines = chunk.toString().split("\n").map((line) => line.trim()).filter(Boolean);
    if (lines.length) lastStderr.line = lines[lines.length - 1];
  });
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (error) => reject(new Error(`cannot run ${command}: ${error.message}`)));
  });
  return { reader: new StreamMessageReader(child.stdout), writer: new DaemonWriter(child.stdin) };
}

function launchOptions(storage: string): LaunchOptions {
  const configuration = vscode.workspace.getConfiguration(SECTION);
  const shared = configuration.get<boolean>("sharedDaemon") ?? true;
  return {
    shared,
    dataDir: configuration.get<string | null>("storage.dataDir"),
    settingsFile: shared ? writeDaemonSettings(storage, currentSettings()) : undefined,
  };
}

/** The settings the user set for the first folder (or the window): what initialize and a started daemon get. */
function currentSettings() {
  return settingsFor(vscode.workspace.workspaceFolders?.[0]?.uri.toString());
}

function settingsFor(scopeUri: string | undefined) {
  const configuration = vscode.workspace.getConfiguration(SECTION, scopeUri ? vscode.Uri.parse(scopeUri) : undefined);
  return explicitSettings((key) => configuration.inspect(key));
}

/** Whether this window's settings let contextd compact on its own. */
function autoCompaction(): boolean {
  const configuration = vscode.workspace.getConfiguration(SECTION);
  return configuration.get<boolean>("compaction.enabled") !== false && configuration.get<string>("compaction.strategy") !== "off";
}

function interpreter(): string {
  return serverCommand(vscode.workspace.getConfiguration(SECTION).get<string>("pythonPath")).command;
}

/** One message per failure, each with the action that fixes it. */
function reporter(output: vscode.LogOutputChannel, lastStderr: { line: string }): ConnectionReporter {
  return {
    startFailed(error) {
      const why = lastStderr.line || errorText(error);
      output.error(`the daemon did not start with ${interpreter()}: ${why}`);
      void vscode.window
        .showErrorMessage(
          `contextd: the daemon did not start with ${interpreter()} (${why}). Is contextd installed for the ` +
            "interpreter in the setting contextd.pythonPath?",
          "Open Settings",
          "Show Log",
        )
        .then((choice) => {
          if (choice === "Open Settings") void openSetting(`${SECTION}.pythonPath`);
          if (choice === "Show Log") output.show();
        });
    },
    gaveUp(decision) {
      output.error(`the daemon stopped ${decision.attempt} times in a few minutes; not restarting it`);
      void vscode.window
        .showErrorMessage(
          `contextd: the daemon stopped ${decision.attempt} times in a few minutes; not restarting it. ` +
            "Its log is in the contextd output.",
          "Restart Daemon",
          "Show Log",
        )
        .then((choice) => {
          if (choice === "Restart Daemon") void vscode.commands.executeCommand(RESTART_COMMAND);
          if (choice === "Show Log") output.show();
        });
    },
  };
}

function openSetting(setting: string): Thenable<unknown> {
  const { command, argument } = openSettingCommand(setting, vscode.env.remoteName);
  return vscode.commands.executeCommand(command, argument);
}

const REMOTE_SETTINGS_HINT = "contextd.remoteSettingsHintShown";

/** Logs what the daemon runs with, and says once where the interpreter setting belongs in a remote window. */
function checkInterpreterSetting(context: vscode.ExtensionContext, output: vscode.LogOutputChannel, version?: string): void {
  const configured = vscode.workspace.getConfiguration(SECTION).get<string>("pythonPath")?.trim();
  const runs = configured ? `contextd.pythonPath = ${configured}` : "python3 from PATH (contextd.pythonPath is not set)";
  output.info(`contextd ${version ?? "(version unknown)"} runs with ${runs}`);
  const hint = remoteSettingsHint(configured, vscode.env.remoteName);
  if (!hint || context.globalState.get(REMOTE_SETTINGS_HINT)) return;
  void context.globalState.update(REMOTE_SETTINGS_HINT, true);
  void vscode.window.showInformationMessage(hint, "Open Remote Settings").then((choice) => {
    if (choice === "Open Remote Settings") void vscode.commands.executeCommand("workbench.action.openRemoteSettings");
  });
}

/** A restarted daemon has no session in memory: open this window's sessions again from disk. */
function reopenSessionsAfterRestart(
  daemon: DaemonConnection,
  sessions: ContextdSessions,
  output: vscode.LogOutputChannel,
): vscode.Disposable {
  let connectedBefore = false;
  return daemon.onDidChangeState((state) => {
    if (state.kind !== "connected") return;
    if (connectedBefore) {
      sessions.reopenAll().catch((error) => output.error(`reopening sessions: ${errorText(error)}`));
    }
    connectedBefore = true;
  });
}

function isShared(): boolean {
  return vscode.workspace.getConfiguration(SECTION).get<boolean>("sharedDaemon") ?? true;
}

/** Gives the running (shared) daemon this window's follow settings; it follows for all its clients. */
function applyFollowSettings(daemon: DaemonConnection, output: vscode.LogOutputChannel): void {
  daemon
    .sendRequest<FollowResult>(Method.follow, followParams(currentSettings()))
    .then((result) =>
      output.info(
        result.enabled
          ? `the daemon follows ${result.agents.join(", ")}: ${result.mirrors} transcript(s)`
          : "the daemon follows no agent",
      ),
    )
    .catch((error) => output.error(`following agents: ${errorText(error)}`));
}

async function onConfigurationChange(
  event: vscode.ConfigurationChangeEvent,
  daemon: DaemonConnection,
  output: vscode.LogOutputChannel,
  storage: string,
): Promise<void> {
  if (!event.affectsConfiguration(SECTION)) return;
  if (LAUNCH_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
    await daemon.restart();
    return;
  }
  // No settings in it: the daemon asks for each folder's (workspace/configuration).
  await daemon.sendNotification(DidChangeConfigurationNotification.type.method, { settings: null });
  if (!isShared()) return;
  const affects = (key: string) => event.affectsConfiguration(`${SECTION}.${key}`);
  // What is followed changes on a running daemon too (contextd/follow).
  if (RUNTIME_FOLLOW_KEYS.some(affects)) applyFollowSettings(daemon, output);
  // These are the shared daemon owner's (it tells the user so): a daemon this window starts gets them.
  if (OWNER_KEYS.some(affects)) writeDaemonSettings(storage, currentSettings());
}

/** Says in the log which daemon this window talks to: its own, or the shared one and who else uses it. */
function logWhichDaemon(daemon: DaemonConnection, output: vscode.LogOutputChannel): void {
  daemon
    .sendRequest<DaemonStatus>(Method.daemonStatus, {})
    .then((status) =>
      output.info(
        status.dedicated
          ? `a daemon of this window's own (pid ${status.pid}, data in ${status.dataDir})`
          : `attached to the shared daemon (pid ${status.pid}, socket ${status.address}, data in ${status.dataDir}, ` +
              `started ${status.startedAt}, ${status.connections.length} client(s)); this window's workspace settings apply to its sessions`,
      ),
    )
    .catch((error) => output.debug(`daemon status: ${errorText(error)}`));
}

function registerCommands(
  ctx: commands.CommandContext,
  tree: SessionTreeView,
  restart: () => Promise<void>,
): vscode.Disposable[] {
  const register = (id: string, run: (ctx: commands.CommandContext, sessionId?: string) => Promise<unknown>) =>
    vscode.commands.registerCommand(id, (sessionId?: unknown) =>
      run(ctx, typeof sessionId === "string" ? sessionId : undefined),
    );
  // The tree view's context menu passes the row's element.
  const registerEntry = (id: string, run: (entry: EntryElement) => Promise<unknown>) =>
    vscode.commands.registerCommand(id, (element?: SessionTreeElement) =>
      element?.kind === "entry" ? run(element) : undefined,
    );
  return [
    register("contextd.compactNow", commands.compactNow),
    register("contextd.compactPreview", commands.compactPreview),
    register("contextd.handoff", commands.handoff),
    register("contextd.goToEntry", commands.goToEntry),
    vscode.commands.registerCommand("contextd.showTree", () => vscode.commands.executeCommand(`${SESSION_TREE_VIEW}.focus`)),
    registerEntry("contextd.tree.moveHere", (entry) => commands.moveTo(ctx, entry.sessionId, entry.node.id, "move")),
    registerEntry("contextd.tree.moveHereSummarize", (entry) => commands.moveTo(ctx, entry.sessionId, entry.node.id, "instructions")),
    registerEntry("contextd.tree.fork", (entry) => commands.fork(ctx, entry.sessionId, entry.node)),
    registerEntry("contextd.tree.label", (entry) => commands.label(ctx, entry.sessionId, entry.node)),
    vscode.commands.registerCommand("contextd.tree.refresh", () => tree.refresh()),
    register("contextd.fork", commands.fork),
    register("contextd.label", commands.label),
    register("contextd.toggleAutoCompaction", commands.toggleAutoCompaction),
    register("contextd.setIdleTimer", commands.setIdleTimer),
    register("contextd.switchSession", commands.switchSession),
    register("contextd.deleteSession", commands.deleteSession),
    register(SHOW_ACTIONS_COMMAND, commands.showActions),
    register(GET_STARTED_COMMAND, commands.getStarted),
    register("contextd.followWorkspace", commands.followWorkspace),
    register("contextd.togglePin", commands.togglePin),
    vscode.commands.registerCommand(RESTART_COMMAND, restart),
  ];
}
