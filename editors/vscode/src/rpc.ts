/**
 * The part of a JSON-RPC connection this extension needs. vscode-languageclient's
 * LanguageClient and vscode-jsonrpc's MessageConnection both satisfy it, so the
 * same session code runs in VS Code and against the daemon in Node tests.
 */
import { CancellationToken, Disposable, ProgressType, ResponseError } from "vscode-jsonrpc";
import { ErrorCode } from "./protocol";

export interface RpcConnection {
  sendRequest<R>(method: string, params: unknown, token?: CancellationToken): Promise<R>;
  sendNotification(method: string, params?: unknown): Promise<void> | void;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  onProgress<P>(type: ProgressType<P>, token: string | number, handler: (params: P) => void): Disposable;
}

export function errorCode(error: unknown): number | undefined {
  if (error instanceof ResponseError) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}

export function isMethodNotFound(error: unknown): boolean {
  return errorCode(error) === ErrorCode.methodNotFound;
}

/** The daemon's own words for a failure, with the offending fields when it named them. */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const fields = fieldErrors(error);
  return fields.length ? `${error.message} (${fields.join("; ")})` : error.message;
}

function fieldErrors(error: Error): string[] {
  const data = (error as { data?: { errors?: unknown } }).data;
  if (!data || !Array.isArray(data.errors)) return [];
  return data.errors
    .filter((e): e is { field: string; message: string } => typeof e?.field === "string")
    .map((e) => `${e.field}: ${e.message}`);
}
