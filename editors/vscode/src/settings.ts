/**
 * The daemon's settings object, built from the `contextd.*` settings this extension
 * contributes. Dotted names become nested objects ({compaction: {enabled: true}}).
 */
import { contributes } from "../package.json";

export const SECTION = "contextd";

/** Settings that steer the extension itself and never go to the daemon. */
const CLIENT_ONLY = new Set(["pythonPath", "sharedDaemon"]);

/** Settings that choose which daemon runs: a change starts (or attaches to) another one. */
export const LAUNCH_KEYS: readonly string[] = ["pythonPath", "sharedDaemon", "storage.dataDir"];

/** What a connection's `initialize` sets for that connection alone, even on a shared daemon (protocol.md). */
export const PER_CONNECTION_KEYS: readonly string[] = ["defaultModel", "compaction.hookTimeoutSeconds"];

export type DaemonSettings = Record<string, unknown>;

/** Every daemon setting's name relative to the section, e.g. "compaction.enabled". */
export const DAEMON_SETTING_KEYS: readonly string[] = Object.keys(contributes.configuration.properties)
  .map((key) => key.slice(SECTION.length + 1))
  .filter((key) => !CLIENT_ONLY.has(key));

/**
 * The settings a shared daemon takes only when it starts (from `--settings FILE`): every
 * daemon setting but the per-connection ones and the data dir, which picks the daemon.
 */
export const DAEMON_WIDE_KEYS: readonly string[] = DAEMON_SETTING_KEYS.filter(
  (key) => !PER_CONNECTION_KEYS.includes(key) && !LAUNCH_KEYS.includes(key),
);

/**
 * The settings object for `initializationOptions` and `didChangeConfiguration`.
 * Unset (null) values are left out so that the daemon applies its own default.
 */
export function buildDaemonSettings(get: (key: string) => unknown): DaemonSettings {
  const settings: DaemonSettings = {};
  for (const key of DAEMON_SETTING_KEYS) {
    const value = get(key);
    if (value !== null && value !== undefined) setPath(settings, key.split("."), value);
  }
  return settings;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  const [head, ...rest] = path;
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  const child = (target[head] ??= {}) as Record<string, unknown>;
  setPath(child, rest, value);
}

/**
 * The follow settings a running daemon takes from any connection (`contextd/follow`): so
 * this window's follow settings apply to a shared daemon at once, not only when it starts.
 */
export const RUNTIME_FOLLOW_KEYS: readonly string[] = ["follow.enabled", "follow.agents", "follow.roots", "follow.allWorkspaces"];

/** The `contextd/follow` params for the follow settings of a settings object. */
export function followParams(settings: DaemonSettings): Record<string, unknown> {
  const follow = (settings.follow ?? {}) as Record<string, unknown>;
  const params: Record<string, unknown> = {};
  for (const key of RUNTIME_FOLLOW_KEYS) {
    const name = key.slice("follow.".length);
    if (follow[name] !== undefined) params[name] = follow[name];
  }
  return params;
}

/** The `workspace/didChangeConfiguration` params, in VS Code's convention. */
export function configurationChange(settings: DaemonSettings): { settings: { contextd: DaemonSettings } } {
  return { settings: { contextd: settings } };
}
