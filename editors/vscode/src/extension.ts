/**
 * The extension's shell: starts `contextd serve` with vscode-languageclient, restarts it
 * when it dies, sends settings, and wires the status bar, the commands and the API.
 */
import { ChildProcess, spawn } from "node:child_process";
import * as vscode from "vscode";
import {
  CloseAction,
  CloseHandlerResult,
  DidChangeConfigurationNotification,
  ErrorAction,
  ErrorHandler,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  State,
} from "vscode-languageclient/node";
import { ContextdApi, createApi } from "./api";
import * as commands from "./commands";
import { CompactionProgress } from "./compactionProgress";
import { RestartPolicy, serverCommand } from "./daemon";
import { errorText } from "./rpc";
import { ContextdSessions } from "./sessions";
import { buildDaemonSettings, configurationChange, SECTION } from "./settings";
import { SessionStatusBar, SHOW_ACTIONS_COMMAND } from "./statusBar";
import { vscodeSettings, vscodeUi } from "./vscodeUi";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<ContextdApi> {
  const output = vscode.window.createOutputChannel("contextd", { log: true });
  const restarts = new RestartPolicy();
  // The client's middleware needs the sessions, which need the client: tie the knot lazily.
  let route: ContextdSessions["routeProgress"] = () => false;
  client = createClient(output, restarts, (token, value) => route(token, value));
  const sessions = new ContextdSessions(client, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  route = (token, value) => sessions.routeProgress(token, value);
  const commandContext: commands.CommandContext = { ui: vscodeUi, sessions, settings: vscodeSettings };

  context.subscriptions.push(
    output,
    sessions,
    new SessionStatusBar(sessions),
    new CompactionProgress(sessions, vscodeUi),
    ...registerCommands(commandContext, () => restartDaemon(restarts)),
    vscode.workspace.onDidChangeConfiguration((event) => onConfigurationChange(event, restarts)),
    reopenSessionsAfterRestart(client, sessions, output),
  );
  await startClient(client);
  return createApi(sessions);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

function createClient(
  output: vscode.LogOutputChannel,
  restarts: RestartPolicy,
  routeProgress: ContextdSessions["routeProgress"],
): LanguageClient {
  const clientOptions: LanguageClientOptions = {
    documentSelector: [],
    outputChannel: output,
    initializationOptions: () => currentSettings(),
    errorHandler: restartingErrorHandler(restarts),
    middleware: {
      // A compaction's progress shows in our cancellable notification, not in a second
      // status bar progress; the end still goes through so the client cleans up.
      handleWorkDoneProgress: (token, params, next) => {
        const routed = routeProgress(token, params);
        if (!routed || params.kind === "end") next(token, params);
      },
      // The daemon may pull its settings; answer with the same object we push.
      workspace: {
        configuration: (params, token, next) =>
          params.items.every((item) => item.section === SECTION)
            ? params.items.map(() => currentSettings())
            : next(params, token),
      },
    },
  };
  return new LanguageClient("contextd", "contextd", startDaemon, clientOptions);
}

/** Spawns the daemon; called at every (re)start, so a changed interpreter takes effect. */
async function startDaemon(): Promise<ChildProcess> {
  const { command, args } = serverCommand(vscode.workspace.getConfiguration(SECTION).get<string>("pythonPath"));
  const child = spawn(command, args, { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, stdio: "pipe" });
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (error) => reject(new Error(`cannot run ${command}: ${error.message}`)));
  });
  return child;
}

function currentSettings() {
  const configuration = vscode.workspace.getConfiguration(SECTION);
  return buildDaemonSettings((key) => configuration.get(key));
}

/** Restart a dying daemon a bounded number of times, telling the user each time. */
function restartingErrorHandler(restarts: RestartPolicy): ErrorHandler {
  return {
    error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue, handled: true }),
    closed: (): CloseHandlerResult => {
      const decision = restarts.onCrash(Date.now());
      if (decision.restart) {
        void vscode.window.showWarningMessage(
          `contextd: the daemon stopped; restarting it (${decision.attempt} of ${decision.maxRestarts}).`,
        );
        return { action: CloseAction.Restart, handled: true };
      }
      void vscode.window
        .showErrorMessage(
          `contextd: the daemon stopped ${decision.attempt} times in a few minutes; not restarting it. ` +
            "See the contextd output for its log.",
          "Restart Daemon",
          "Show Log",
        )
        .then((choice) => {
          if (choice === "Restart Daemon") void vscode.commands.executeCommand("contextd.restartDaemon");
          if (choice === "Show Log") client?.outputChannel.show();
        });
      return { action: CloseAction.DoNotRestart, handled: true };
    },
  };
}

async function startClient(languageClient: LanguageClient): Promise<void> {
  try {
    await languageClient.start();
  } catch (error) {
    const choice = await vscode.window.showErrorMessage(
      `contextd: the daemon did not start: ${errorText(error)}. Is contextd installed for the ` +
        "interpreter in the setting contextd.pythonPath?",
      "Open Settings",
    );
    if (choice === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "contextd.pythonPath");
    }
  }
}

/** A restarted daemon has no session in memory: open this window's sessions again from disk. */
function reopenSessionsAfterRestart(
  languageClient: LanguageClient,
  sessions: ContextdSessions,
  output: vscode.LogOutputChannel,
): vscode.Disposable {
  let started = false;
  return languageClient.onDidChangeState(({ newState }) => {
    if (newState !== State.Running) return;
    if (started) {
      sessions.reopenAll().catch((error) => output.error(`reopening sessions: ${errorText(error)}`));
    }
    started = true;
  });
}

async function restartDaemon(restarts: RestartPolicy): Promise<void> {
  restarts.reset();
  if (!client) return;
  if (client.state === State.Running) await client.restart();
  else await startClient(client);
}

async function onConfigurationChange(
  event: vscode.ConfigurationChangeEvent,
  restarts: RestartPolicy,
): Promise<void> {
  if (!event.affectsConfiguration(SECTION) || !client) return;
  if (event.affectsConfiguration(`${SECTION}.pythonPath`)) {
    await restartDaemon(restarts);
    return;
  }
  if (client.state === State.Running) {
    await client.sendNotification(DidChangeConfigurationNotification.type, configurationChange(currentSettings()));
  }
}

function registerCommands(ctx: commands.CommandContext, restart: () => Promise<void>): vscode.Disposable[] {
  const register = (id: string, run: (ctx: commands.CommandContext, sessionId?: string) => Promise<unknown>) =>
    vscode.commands.registerCommand(id, (sessionId?: unknown) =>
      run(ctx, typeof sessionId === "string" ? sessionId : undefined),
    );
  return [
    register("contextd.compactNow", commands.compactNow),
    register("contextd.compactPreview", commands.compactPreview),
    register("contextd.handoff", commands.handoff),
    register("contextd.showTree", commands.showTree),
    register("contextd.fork", commands.fork),
    register("contextd.label", commands.label),
    register("contextd.toggleAutoCompaction", commands.toggleAutoCompaction),
    register("contextd.setIdleTimer", commands.setIdleTimer),
    register("contextd.switchSession", commands.switchSession),
    register(SHOW_ACTIONS_COMMAND, commands.showActions),
    vscode.commands.registerCommand("contextd.restartDaemon", restart),
  ];
}
