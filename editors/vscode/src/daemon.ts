/** How the daemon is started, and how often it may be restarted after dying. */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface ServerCommand {
  command: string;
  args: string[];
}

export interface LaunchOptions {
  /** Attach to the per-user shared daemon (`serve --shared`, started on demand) instead of a daemon of our own. */
  shared?: boolean;
  /** `contextd.storage.dataDir`: the shared daemon is per data dir, so it goes on the command line. */
  dataDir?: string | null;
  /** The daemon-wide settings for a shared daemon this start brings up (one already running keeps its own). */
  settingsFile?: string;
}

/**
 * `<python> -m contextd [--data-dir DIR] serve [--shared [--settings FILE]]`, with
 * `contextd.pythonPath` or python3 from PATH.
 */
export function serverCommand(pythonPath: string | undefined, options: LaunchOptions = {}): ServerCommand {
  const python = pythonPath?.trim() || "python3";
  const dataDir = options.dataDir?.trim();
  const serve = options.shared
    ? ["serve", "--shared", ...(options.settingsFile ? ["--settings", options.settingsFile] : [])]
    : ["serve"];
  return { command: python, args: ["-m", "contextd", ...(dataDir ? ["--data-dir", dataDir] : []), ...serve] };
}

export const DAEMON_SETTINGS_FILE = "daemon-settings.json";

/**
 * Writes the settings a shared daemon started by this window gets (`serve --settings FILE`):
 * a daemon serving many clients takes its daemon-wide settings from that file, never from
 * `initialize`. Written whole to a temporary name and renamed, so a daemon starting in
 * another window never reads half a file. Returns the file's path.
 */
export function writeDaemonSettings(directory: string, settings: object): string {
  mkdirSync(directory, { recursive: true });
  const file = join(directory, DAEMON_SETTINGS_FILE);
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  renameSync(partial, file);
  return file;
}

export interface RestartDecision {
  restart: boolean;
  /** This restart's number within the window (1-based), or the count that was exceeded. */
  attempt: number;
  maxRestarts: number;
  /** How long to wait before this restart: doubles with each attempt. */
  delayMs: number;
}

/**
 * At most `maxRestarts` restarts within `windowMs`, each after a longer pause (1 s, 2 s,
 * 4 s…): a daemon that keeps dying is given up on instead of restarted in a tight loop.
 */
export class RestartPolicy {
  private restarts: number[] = [];

  constructor(
    readonly maxRestarts = 5,
    readonly windowMs = 3 * 60_000,
    readonly firstDelayMs = 1000,
  ) {}

  onCrash(now: number): RestartDecision {
    this.restarts = this.restarts.filter((time) => now - time < this.windowMs);
    const attempt = this.restarts.length;
    if (attempt >= this.maxRestarts) {
      return { restart: false, attempt, maxRestarts: this.maxRestarts, delayMs: 0 };
    }
    this.restarts.push(now);
    return { restart: true, attempt: attempt + 1, maxRestarts: this.maxRestarts, delayMs: this.firstDelayMs * 2 ** attempt };
  }

  /** A restart the user asked for starts the count afresh. */
  reset(): void {
    this.restarts = [];
  }
}

/**
 * contextd.pythonPath is machine-overridable: in a remote window (Remote-SSH, WSL, a
 * container, code-server) VS Code ignores it in User settings, and the daemon then runs
 * whatever python3 the remote PATH has. The hint to show then, if any.
 */
export function remoteSettingsHint(configuredPython: string | undefined, remoteName: string | undefined): string | undefined {
  if (configuredPython?.trim() || !remoteName) return undefined;
  return (
    "contextd: the daemon runs python3 from this machine's PATH. In a remote window VS Code ignores " +
    "contextd.pythonPath and contextd.storage.dataDir in User settings: set them in Remote settings."
  );
}
