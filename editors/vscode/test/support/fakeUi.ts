/**
 * The editor side of the commands, scripted: each pick or input takes the next answer
 * the test queued, and everything shown is recorded for assertions.
 */
import { CancellationTokenSource } from "vscode-jsonrpc";
import type { SettingsStore, InputOptions, MessageOptions, PickItem, PickOptions, ProgressReport, Ui } from "../../src/ui";

type PickAnswer = (items: PickItem<unknown>[], options: PickOptions<unknown>) => PickItem<unknown> | undefined;
type InputAnswer = (options: InputOptions) => string | undefined;

export interface Shown {
  kind: "info" | "error" | "document" | "copy" | "walkthrough";
  message: string;
  options?: MessageOptions;
  actions?: string[];
}

export interface ShownProgress {
  title: string;
  reports: ProgressReport[];
  cancel: () => void;
  cancellable: boolean;
  done: boolean;
}

export class FakeUi implements Ui {
  readonly shown: Shown[] = [];
  readonly picks: Array<{ items: PickItem<unknown>[]; options: PickOptions<unknown> }> = [];
  readonly inputs: InputOptions[] = [];
  readonly progresses: ShownProgress[] = [];
  private readonly pickAnswers: PickAnswer[] = [];
  private readonly inputAnswers: InputAnswer[] = [];
  /** Button pressed on the next message that offers it. */
  private readonly buttons: string[] = [];

  /** Picks the first item whose label contains `text` (or the item `choose` returns). */
  willPick(choose: string | PickAnswer): this {
    this.pickAnswers.push(
      typeof choose === "string" ? (items) => items.find((item) => item.label.includes(choose)) : choose,
    );
    return this;
  }

  willDismissPick(): this {
    this.pickAnswers.push(() => undefined);
    return this;
  }

  willType(text: string | undefined): this {
    this.inputAnswers.push(() => text);
    return this;
  }

  willPress(button: string): this {
    this.buttons.push(button);
    return this;
  }

  async pick<T>(items: PickItem<T>[], options: PickOptions<T>): Promise<T | undefined> {
    this.picks.push({ items, options } as never);
    const answer = this.pickAnswers.shift();
    if (!answer) throw new Error(`unexpected pick: ${options.title}`);
    return (answer(items as PickItem<unknown>[], options as PickOptions<unknown>) as PickItem<T> | undefined)?.value;
  }

  async input(options: InputOptions): Promise<string | undefined> {
    this.inputs.push(options);
    const answer = this.inputAnswers.shift();
    if (!answer) throw new Error(`unexpected input: ${options.title}`);
    const text = answer(options);
    const problem = text === undefined ? undefined : options.validate?.(text);
    if (problem) throw new Error(`input refused: ${problem}`);
    return text;
  }

  async info(message: string, options?: MessageOptions, ...actions: string[]): Promise<string | undefined> {
    this.shown.push({ kind: "info", message, options, actions });
    return this.press(actions);
  }

  async error(message: string, ...actions: string[]): Promise<string | undefined> {
    this.shown.push({ kind: "error", message, actions });
    return this.press(actions);
  }

  private press(actions: string[]): string | undefined {
    const index = this.buttons.findIndex((button) => actions.includes(button));
    return index < 0 ? undefined : this.buttons.splice(index, 1)[0];
  }

  async progress<R>(
    title: string,
    task: (report: (progress: ProgressReport) => void, token: import("vscode-jsonrpc").CancellationToken) => Promise<R>,
    options: { cancellable?: boolean } = {},
  ): Promise<R> {
    const source = new CancellationTokenSource();
    const cancellable = options.cancellable ?? true;
    const cancel = () => {
      if (!cancellable) throw new Error(`${title} offers no Cancel`);
      source.cancel();
    };
    const shown: ShownProgress = { title, reports: [], cancel, cancellable, done: false };
    this.progresses.push(shown);
    try {
      return await task((report) => shown.reports.push(report), source.token);
    } finally {
      shown.done = true;
      source.dispose();
    }
  }

  async showDocument(text: string, title?: string): Promise<void> {
    this.shown.push({ kind: "document", message: text, options: { detail: title } });
  }

  async openWalkthrough(): Promise<void> {
    this.shown.push({ kind: "walkthrough", message: "" });
  }

  async copy(text: string): Promise<void> {
    this.shown.push({ kind: "copy", message: text });
  }

  messages(kind: Shown["kind"]): string[] {
    return this.shown.filter((s) => s.kind === kind).map((s) => s.message);
  }
}

/** Settings held in memory, as VS Code would hold the user's values. */
export class MemorySettings implements SettingsStore {
  readonly values = new Map<string, unknown>();
  readonly updates: Array<[string, unknown, ("workspace" | undefined)?]> = [];

  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }

  async update(key: string, value: unknown, scope?: "workspace"): Promise<void> {
    this.values.set(key, value);
    this.updates.push(scope ? [key, value, scope] : [key, value]);
  }
}
