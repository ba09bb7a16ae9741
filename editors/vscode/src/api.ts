/**
 * What this extension exports from `activate` for other extensions, typically the one
 * that runs the agent:
 *
 *   const contextd = await vscode.extensions.getExtension("contextd.contextd")!.activate();
 *   const { sessionId } = await contextd.openSession({ name: "fix tests" });
 *   await contextd.appendMessages(sessionId, [{ role: "user", content: "Fix the test" }]);
 *   const { messages } = await contextd.getContext(sessionId, "anthropic");
 */
import type { Event } from "vscode-jsonrpc";
import type {
  AppendResult,
  CompactionFinished,
  CompactResult,
  ContextFormat,
  ContextResult,
  Message,
  OpenParams,
  OpenResult,
  TokenUsage,
} from "./protocol";
import type { CompactOptions, ContextdSessions, EditorText } from "./sessions";

export interface ContextdApi {
  readonly apiVersion: 1;
  /** Creates a session (or resumes one with `sessionId`); it becomes the current one. */
  openSession(params?: OpenParams): Promise<OpenResult>;
  appendMessages(sessionId: string, messages: Message[]): Promise<AppendResult>;
  /** The context to send to the model, in the provider's shape (`"openai-responses"`: Responses API input items). */
  getContext(sessionId: string, format?: ContextFormat): Promise<ContextResult>;
  compact(sessionId: string, options?: CompactOptions): Promise<CompactResult>;
  /** Every change of a session's token figure. */
  readonly onTokenUsage: Event<TokenUsage>;
  readonly onCompactionFinished: Event<CompactionFinished>;
  /** A user message the session moved before (Move Here in the Session Tree, Go to Entry), for the agent's input box. */
  readonly onEditorText: Event<EditorText>;
  /** The session the user chose in the editor, if any. */
  currentSessionId(): string | undefined;
}

export function createApi(sessions: ContextdSessions): ContextdApi {
  return {
    apiVersion: 1,
    openSession: (params) => sessions.open(params),
    appendMessages: (sessionId, messages) => sessions.append(sessionId, messages),
    getContext: (sessionId, format) => sessions.context(sessionId, format),
    compact: (sessionId, options) => sessions.compact(sessionId, options),
    onTokenUsage: sessions.onTokenUsage,
    onCompactionFinished: sessions.onCompactionFinished,
    onEditorText: sessions.onEditorText,
    currentSessionId: () => sessions.current,
  };
}
