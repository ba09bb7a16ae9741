/**
 * The few editor interactions the commands need. VS Code provides them in
 * vscodeUi.ts; tests script them.
 */
import type { CancellationToken } from "vscode-jsonrpc";

export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

export interface PickOptions<T> {
  title: string;
  placeholder?: string;
  /** The row selected when the pick opens. */
  active?: T;
}

export interface InputOptions {
  title: string;
  prompt?: string;
  placeholder?: string;
  value?: string;
  /** An error message for a bad value, undefined when it is fine. */
  validate?: (value: string) => string | undefined;
}

export interface MessageOptions {
  modal?: boolean;
  detail?: string;
}

export interface ProgressReport {
  message?: string;
  /** 0–100, absolute. */
  percentage?: number;
}

export interface Ui {
  /** undefined when the user dismissed the pick. */
  pick<T>(items: PickItem<T>[], options: PickOptions<T>): Promise<T | undefined>;
  /** undefined when the user dismissed the input; "" when they accepted it empty. */
  input(options: InputOptions): Promise<string | undefined>;
  info(message: string, options?: MessageOptions, ...actions: string[]): Promise<string | undefined>;
  error(message: string, ...actions: string[]): Promise<string | undefined>;
  /** A progress notification that lasts as long as `task`; cancellable unless told otherwise. */
  progress<R>(
    title: string,
    task: (report: (progress: ProgressReport) => void, token: CancellationToken) => Promise<R>,
    options?: { cancellable?: boolean },
  ): Promise<R>;
  /** Opens `text` in a read-only Markdown editor whose tab reads `title`. */
  showDocument(text: string, title?: string): Promise<void>;
  copy(text: string): Promise<void>;
  /** The extension's walkthrough: how to get a first session. */
  openWalkthrough(): Promise<void>;
}

/** The settings the commands change (section `contextd`). */
export interface SettingsStore {
  get<T>(key: string): T | undefined;
  /** Where the value is set now (so a workspace value is not shadowed), or in the workspace's settings. */
  update(key: string, value: unknown, scope?: "workspace"): Promise<void>;
}
