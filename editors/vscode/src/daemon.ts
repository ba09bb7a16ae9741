/** How the daemon is started, and how often it may be restarted after dying. */

export interface ServerCommand {
  command: string;
  args: string[];
}

/** `<python> -m contextd serve`, with `contextd.pythonPath` or python3 from PATH. */
export function serverCommand(pythonPath: string | undefined): ServerCommand {
  const python = pythonPath?.trim() || "python3";
  return { command: python, args: ["-m", "contextd", "serve"] };
}

export interface RestartDecision {
  restart: boolean;
  /** This restart's number within the window (1-based), or the count that was exceeded. */
  attempt: number;
  maxRestarts: number;
}

/**
 * At most `maxRestarts` restarts within `windowMs`: a daemon that keeps dying at start
 * (a bad interpreter, a broken install) is given up on instead of restarted forever.
 */
export class RestartPolicy {
  private restarts: number[] = [];

  constructor(
    readonly maxRestarts = 5,
    readonly windowMs = 3 * 60_000,
  ) {}

  onCrash(now: number): RestartDecision {
    this.restarts = this.restarts.filter((time) => now - time < this.windowMs);
    if (this.restarts.length >= this.maxRestarts) {
      return { restart: false, attempt: this.restarts.length, maxRestarts: this.maxRestarts };
    }
    this.restarts.push(now);
    return { restart: true, attempt: this.restarts.length, maxRestarts: this.maxRestarts };
  }

  /** A restart the user asked for starts the count afresh. */
  reset(): void {
    this.restarts = [];
  }
}
