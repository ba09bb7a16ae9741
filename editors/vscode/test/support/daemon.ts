/**
 * The real daemon for tests: `python3 -m contextd serve` in a temporary data directory,
 * driven through vscode-jsonrpc (the stack under vscode-languageclient) and initialized
 * the way the extension initializes it.
 */
import { ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  createMessageConnection,
  MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import { ProgressType } from "vscode-jsonrpc";
import { SETTING_SCHEMAS } from "../../src/manifest";
import { serverCommand } from "../../src/daemon";
import { ErrorCode, Notification } from "../../src/protocol";
import { errorCode } from "../../src/rpc";
import { ContextdSessions } from "../../src/sessions";
import { buildDaemonSettings, configurationChange, DaemonSettings, SECTION } from "../../src/settings";

/** A `$/progress` value of LSP's work done progress. */
export interface Progress {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
  percentage?: number;
  cancellable?: boolean;
}
const workDoneProgress = new ProgressType<Progress>();

/** Settings at the defaults this extension contributes, as VS Code would report them. */
export function defaultSettings(): DaemonSettings {
  return buildDaemonSettings((key) => SETTING_SCHEMAS[`${SECTION}.${key}`]?.default);
}

/** The default settings with some groups changed, e.g. {compaction: {keepRecentTokens: 2000}}. */
export function settingsWith(overrides: Record<string, Record<string, unknown>>): DaemonSettings {
  const settings = defaultSettings() as Record<string, Record<string, unknown>>;
  for (const [group, values] of Object.entries(overrides)) settings[group] = { ...settings[group], ...values };
  return settings;
}

export interface DaemonOptions {
  settings?: DaemonSettings;
  workspace?: string;
  /** Sessions of an earlier daemon, to start again from disk; kept on stop. */
  dataDir?: string;
  /**
   * Attach to the shared daemon of the data dir (`serve --shared`, as the extension does by
   * default), whose socket goes under this XDG_RUNTIME_DIR; the shared daemon outlives stop().
   */
  sharedRuntimeDir?: string;
  /** The settings file a shared daemon this start brings up gets (`serve --shared --settings FILE`). */
  sharedSettingsFile?: string;
}

export class TestDaemon {
  readonly notifications: Array<{ method: string; params: any }> = [];
  readonly progress: Array<{ token: string | number; value: Progress }> = [];
  readonly shownMessages: string[] = [];
  stderr = "";
  readonly sessions: ContextdSessions;
  private exited: Promise<number | null>;

  private constructor(
    readonly process: ChildProcess,
    readonly connection: MessageConnection,
    readonly dataDir: string,
    readonly workspace: string,
    private readonly ownsDataDir: boolean,
  ) {
    process.stderr!.on("data", (chunk) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => process.once("exit", (code) => resolve(code)));
    connection.onNotification((method, params) => this.notifications.push({ method, params }));
    connection.onNotification("window/showMessage", (params: { message: string }) =>
      this.shownMessages.push(params.message),
    );
    // As the extension's middleware does: the daemon's progress goes to the session status.
    connection.onRequest("window/workDoneProgress/create", ({ token }: { token: string | number }) => {
      const subscription = connection.onProgress(workDoneProgress, token, (value) => {
        this.progress.push({ token, value });
        this.sessions.routeProgress(token, value);
        if (value.kind === "end") subscription.dispose();
      });
      return null;
    });
    connection.onRequest("workspace/configuration", () => [this.settings]);
    connection.onRequest("client/registerCapability", () => null);
    this.sessions = new ContextdSessions(connection, workspace);
    // The sessions' own handlers take these methods, so the catch-all above never sees them.
    const record = (method: string) => (params: unknown) => this.notifications.push({ method, params });
    this.sessions.onTokenUsage(record(Notification.tokenUsage));
    this.sessions.onSessionChanged(record(Notification.sessionChanged));
    this.sessions.onCompactionStarted(record(Notification.compactionStarted));
    this.sessions.onCompactionFinished(record(Notification.compactionFinished));
  }

  settings: DaemonSettings = {};

  static async start(options: DaemonOptions = {}): Promise<TestDaemon> {
    const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "contextd-vscode-"));
    const workspace = options.workspace ?? join(dataDir, "workspace");
    const shared = options.sharedRuntimeDir !== undefined;
    const { command, args } = serverCommand(process.env.CONTEXTD_PYTHON, { shared, dataDir, settingsFile: options.sharedSettingsFile });
    const env = { ...process.env, PYTHONUNBUFFERED: "1", ...(shared ? { XDG_RUNTIME_DIR: options.sharedRuntimeDir } : {}) };
    const child = spawn(command, args, { stdio: "pipe", env });
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout!),
      new StreamMessageWriter(child.stdin!),
    );
    const daemon = new TestDaemon(child, connection, dataDir, workspace, !options.dataDir);
    // What the extension sends: the values the user set explicitly (none here), never the defaults.
    daemon.settings = options.settings ?? {};
    connection.listen();
    await daemon.initialize();
    return daemon;
  }

  private async initialize(): Promise<void> {
    const folder = pathToFileURL(this.workspace).toString();
    await this.connection.sendRequest("initialize", {
      processId: process.pid,
      clientInfo: { name: "Visual Studio Code", version: "1.100.0" },
      rootUri: folder,
      workspaceFolders: [{ uri: folder, name: "workspace" }],
      capabilities: {
        window: { workDoneProgress: true, showMessage: {} },
        workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } },
      },
      initializationOptions: this.settings,
    });
    await this.connection.sendNotification("initialized", {});
  }

  /** Settings change the way the extension sends them, under settings.contextd. */
  async configure(settings: DaemonSettings): Promise<void> {
    this.settings = settings;
    await this.connection.sendNotification("workspace/didChangeConfiguration", configurationChange(settings));
  }

  /** False when the daemon answers -32601: the feature has not landed yet. */
  async supports(method: string): Promise<boolean> {
    try {
      await this.connection.sendRequest(method, {});
      return true;
    } catch (error) {
      return errorCode(error) !== ErrorCode.methodNotFound;
    }
  }

  notificationsOf(method: string): any[] {
    return this.notifications.filter((n) => n.method === method).map((n) => n.params);
  }

  async stop(): Promise<void> {
    this.sessions.dispose();
    try {
      await withTimeout(this.connection.sendRequest("shutdown"), 5000);
      await this.connection.sendNotification("exit");
    } catch {
      // A daemon that does not shut down in time is killed below.
    }
    const code = await withTimeout(this.exited, 5000).catch(() => {
      this.process.kill("SIGKILL");
      return null;
    });
    this.connection.dispose();
    if (this.ownsDataDir) rmSync(this.dataDir, { recursive: true, force: true });
    return void code;
  }

  /** Dies as a crashing daemon would: no shutdown, no flush, no lock release of its own. */
  async kill(): Promise<void> {
    this.process.kill("SIGKILL");
    await this.exited;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    promise.then(
      (value) => (clearTimeout(timer), resolve(value)),
      (error) => (clearTimeout(timer), reject(error)),
    );
  });
}

/** Waits until `check` returns something truthy (events arrive asynchronously). */
export async function eventually<T>(check: () => T | undefined | false, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
