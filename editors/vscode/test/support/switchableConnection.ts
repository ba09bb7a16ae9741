/**
 * A connection that can move to a new daemon, keeping its notification handlers, the
 * way vscode-languageclient's LanguageClient does across a restart.
 */
import type { CancellationToken, Disposable, MessageConnection, ProgressType } from "vscode-jsonrpc";
import type { RpcConnection } from "../../src/rpc";

export class SwitchableConnection implements RpcConnection {
  private readonly handlers = new Map<string, (params: any) => void>();
  private registrations: Disposable[] = [];

  constructor(private current: MessageConnection) {
    this.registerAll();
  }

  switchTo(connection: MessageConnection): void {
    for (const registration of this.registrations) registration.dispose();
    this.current = connection;
    this.registerAll();
  }

  private registerAll(): void {
    this.registrations = [...this.handlers].map(([method, handler]) => this.current.onNotification(method, handler));
  }

  sendRequest<R>(method: string, params: unknown, token?: CancellationToken): Promise<R> {
    return token ? this.current.sendRequest<R>(method, params, token) : this.current.sendRequest<R>(method, params);
  }

  sendNotification(method: string, params?: unknown): Promise<void> {
    return this.current.sendNotification(method, params);
  }

  onNotification(method: string, handler: (params: any) => void): Disposable {
    this.handlers.set(method, handler);
    const registration = this.current.onNotification(method, handler);
    this.registrations.push(registration);
    return { dispose: () => (this.handlers.delete(method), registration.dispose()) };
  }

  onProgress<P>(type: ProgressType<P>, token: string | number, handler: (params: P) => void): Disposable {
    return this.current.onProgress(type, token, handler);
  }
}
