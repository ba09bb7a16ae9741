/**
 * vscode-languageclient writes its messages as "[Error - 10:42:01] text" lines, and the
 * daemon's stderr arrives in chunks of "2026-11-23 10:42:01,123 ERROR name: text" lines.
 * A log output channel would show all of them at info level; this adapter gives each line
 * its own level, drops the stray flag values the client logs as data, and lets the
 * channel add the time stamp once.
 */
import type { LogOutputChannel, OutputChannel, ViewColumn } from "vscode";

export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";

export interface LogLine {
  level: LogLevel;
  text: string;
}

const CLIENT_LINE = /^\[(Error|Warn|Info|Debug|Trace)\s*- [^\]]*\] ?(.*)$/;
const DAEMON_LINE = /^\d{4}-\d\d-\d\d[ T][\d:.,]+ (CRITICAL|ERROR|WARNING|INFO|DEBUG) (.*)$/;
const CLIENT_LEVEL: Record<string, LogLevel> = { Error: "error", Warn: "warn", Info: "info", Debug: "debug", Trace: "trace" };
const DAEMON_LEVEL: Record<string, LogLevel> = { CRITICAL: "error", ERROR: "error", WARNING: "warn", INFO: "info", DEBUG: "debug" };
/** vscode-languageclient passes its showNotification flag as a message's data on some calls. */
const FLAG_VALUES = new Set(["false", "true", "undefined"]);

/** Classifies lines one at a time; a line without a level (a traceback) keeps the last one. */
export class LogLineParser {
  private level: LogLevel = "info";

  parse(line: string): LogLine | undefined {
    const trimmed = line.trimEnd();
    if (trimmed === "" || FLAG_VALUES.has(trimmed.trim())) return undefined;
    const client = CLIENT_LINE.exec(trimmed);
    const daemon = client ? null : DAEMON_LINE.exec(trimmed);
    if (client) this.level = CLIENT_LEVEL[client[1]];
    else if (daemon) this.level = DAEMON_LEVEL[daemon[1]];
    return { level: this.level, text: client?.[2] ?? daemon?.[2] ?? trimmed };
  }
}

type LogSink = Pick<LogOutputChannel, LogLevel | "name" | "show" | "hide" | "clear">;

/** The output channel handed to vscode-languageclient: it writes leveled lines to `sink`. */
export class LeveledOutput implements OutputChannel {
  private readonly parser = new LogLineParser();
  private partial = "";

  constructor(private readonly sink: LogSink) {}

  get name(): string {
    return this.sink.name;
  }

  append(value: string): void {
    const lines = (this.partial + value).split(/\r?\n/);
    this.partial = lines.pop() ?? "";
    for (const line of lines) this.write(line);
  }

  appendLine(value: string): void {
    this.append(`${value}\n`);
  }

  replace(value: string): void {
    this.sink.clear();
    this.partial = "";
    this.append(value);
  }

  private write(line: string): void {
    const parsed = this.parser.parse(line);
    if (parsed) this.sink[parsed.level](parsed.text);
  }

  clear(): void {
    this.partial = "";
    this.sink.clear();
  }

  show(columnOrPreserveFocus?: ViewColumn | boolean, preserveFocus?: boolean): void {
    if (typeof columnOrPreserveFocus === "boolean") this.sink.show(columnOrPreserveFocus);
    else this.sink.show(preserveFocus);
  }

  hide(): void {
    this.sink.hide();
  }

  dispose(): void {
    // The channel belongs to the extension, which outlives every client that writes to it.
  }
}
