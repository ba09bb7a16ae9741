/**
 * The connection to the daemon, across restarts: a fresh vscode-languageclient for every
 * start (a client whose start failed cannot start again), restarts with back-off after a
 * crash, and the state the status bar shows. Requests while there is no daemon fail at
 * once with a clear error instead of vscode-languageclient's unhandled "Client is not
 * running".
 */
import {
  CancellationToken,
  Disposable,
  Emitter,
  Event,
  ProgressType,
  ResponseError,
} from "vscode-jsonrpc";
import type { RestartDecision, RestartPolicy } from "./daemon";
import type { RpcConnection } from "./rpc";

/** The part of vscode-languageclient's LanguageClient used here. */
export interface DaemonClient extends RpcConnection {
  start(): Promise<void>;
  stop(): Promise<void>;
  isRunning(): boolean;
  readonly initializeResult?: { serverInfo?: { version?: string } };
  onDidChangeState: Event<{ oldState: number; newState: number }>;
}

export type ConnectionState =
  | { kind: "starting" }
  | { kind: "connected" }
  /** `retryAt`: when the next automatic restart happens; absent when none will. */
  | { kind: "disconnected"; reason: string; retryAt?: number };

/** How the connection tells the user what went wrong; each is shown once per failure. */
export interface ConnectionReporter {
  /** The daemon never answered `initialize`: most often contextd is not installed for the interpreter. */
  startFailed(error: unknown): void;
  /** The daemon kept dying: no more automatic restarts. */
  gaveUp(decision: RestartDecision): void;
}

/** vscode-jsonrpc's code for a request on a connection that is not running. */
export const NOT_RUNNING = -32097;

export class DaemonConnection implements RpcConnection, Disposable {
  private client: DaemonClient | undefined;
  private readonly handlers = new Map<string, Set<(params: any) => void>>();
  private clientSubscriptions: Disposable[] = [];
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private current: ConnectionState = { kind: "disconnected", reason: "not started yet" };
  private readonly changed = new Emitter<ConnectionState>();
  private disposed = false;
  /** Fires on every change of `state`. */
  readonly onDidChangeState: Event<ConnectionState> = this.changed.event;

  constructor(
    private readonly createClient: () => DaemonClient,
    private readonly restarts: RestartPolicy,
    private readonly reporter: ConnectionReporter,
    private readonly now: () => number = Date.now,
  ) {}

  get state(): ConnectionState {
    return this.current;
  }

  /** The running daemon's version, from its `initialize` answer. */
  get daemonVersion(): string | undefined {
    return this.runningClient()?.initializeResult?.serverInfo?.version;
  }

  /** Starts a daemon (stopping the one running, if any). Never rejects: failures are reported. */
  async start(): Promise<void> {
    this.cancelRetry();
    await this.stopClient();
    if (this.disposed) return;
    const client = this.createClient();
    this.client = client;
    this.clientSubscriptions = [
      ...[...this.handlers].map(([method, handlers]) =>
        client.onNotification(method, (params) => handlers.forEach((handler) => handler(params))),
      ),
      client.onDidChangeState(() => {
        if (client === this.client && this.current.kind === "connected" && !client.isRunning()) this.onCrash();
      }),
    ];
    this.setState({ kind: "starting" });
    let failure: unknown;
    try {
      await client.start();
    } catch (error) {
      failure = error;
    }
    if (client !== this.client) return;
    // A daemon that exits during `initialize` can leave start() resolved on a stopped client.
    if (failure === undefined && !client.isRunning()) failure = new Error("the daemon exited while starting");
    if (failure !== undefined) {
      this.setState({ kind: "disconnected", reason: `the daemon did not start: ${messageOf(failure)}` });
      this.reporter.startFailed(failure);
      return;
    }
    this.setState({ kind: "connected" });
  }

  /** The user's Restart Daemon: the crash count starts afresh. */
  async restart(): Promise<void> {
    this.restarts.reset();
    await this.start();
  }

  private onCrash(): void {
    const decision = this.restarts.onCrash(this.now());
    if (!decision.restart) {
      this.setState({ kind: "disconnected", reason: `the daemon stopped ${decision.attempt} times in a few minutes` });
      this.reporter.gaveUp(decision);
      return;
    }
    const retryAt = this.now() + decision.delayMs;
    this.setState({ kind: "disconnected", reason: "the daemon stopped", retryAt });
    this.retryTimer = setTimeout(() => void this.start(), decision.delayMs);
  }

  private cancelRetry(): void {
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const subscription of this.clientSubscriptions) subscription.dispose();
    this.clientSubscriptions = [];
    // Only a running client can be stopped; a dead one has nothing left to stop.
    if (client?.isRunning()) await client.stop().catch(() => undefined);
  }

  private setState(state: ConnectionState): void {
    this.current = state;
    this.changed.fire(state);
  }

  sendRequest<R>(method: string, params: unknown, token?: CancellationToken): Promise<R> {
    const client = this.runningClient();
    if (!client) return Promise.reject(this.notRunning());
    return token ? client.sendRequest<R>(method, params, token) : client.sendRequest<R>(method, params);
  }

  /** Dropped while there is no daemon: a new one gets the current settings when it starts. */
  async sendNotification(method: string, params?: unknown): Promise<void> {
    await this.runningClient()?.sendNotification(method, params);
  }

  onNotification(method: string, handler: (params: any) => void): Disposable {
    let handlers = this.handlers.get(method);
    if (!handlers) {
      const all = new Set<(params: any) => void>();
      handlers = all;
      this.handlers.set(method, all);
      if (this.client) this.clientSubscriptions.push(this.client.onNotification(method, (params) => all.forEach((h) => h(params))));
    }
    handlers.add(handler);
    return Disposable.create(() => handlers.delete(handler));
  }

  onProgress<P>(type: ProgressType<P>, token: string | number, handler: (params: P) => void): Disposable {
    const client = this.runningClient();
    return client ? client.onProgress(type, token, handler) : Disposable.create(() => undefined);
  }

  private runningClient(): DaemonClient | undefined {
    return this.current.kind === "connected" && this.client?.isRunning() ? this.client : undefined;
  }

  private notRunning(): ResponseError<void> {
    const state = this.current;
    const why = state.kind === "starting" ? "it is starting" : state.kind === "disconnected" ? state.reason : "";
    return new ResponseError(NOT_RUNNING, `the contextd daemon is not running (${why}); run "contextd: Restart Daemon"`);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.cancelRetry();
    await this.stopClient();
    this.changed.dispose();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
