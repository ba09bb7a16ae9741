/**
 * The daemon's settings object, built from the `contextd.*` settings this extension
 * contributes. Dotted names become nested objects ({compaction: {enabled: true}}).
 */
import { SETTING_SCHEMAS } from "./manifest";

export const SECTION = "contextd";

/** Settings that steer the extension itself and never go to the daemon. */
const CLIENT_ONLY = new Set(["pythonPath", "sharedDaemon"]);

/** Settings that choose which daemon runs: a change starts (or attaches to) another one. */
export const LAUNCH_KEYS: readonly string[] = ["pythonPath", "sharedDaemon", "storage.dataDir"];

/** What a connection's `initialize` sets for that connection alone, even on a shared daemon (protocol.md). */
export const PER_CONNECTION_KEYS: readonly string[] = ["defaultModel", "compaction.hookTimeoutSeconds"];

export type DaemonSettings = Record<string, unknown>;

/** Every daemon setting's name relative to the section, e.g. "compaction.enabled". */
export const DAEMON_SETTING_KEYS: readonly string[] = Object.keys(SETTING_SCHEMAS)
  .map((key) => key.slice(SECTION.length + 1))
  .filter((key) => !CLIENT_ONLY.has(key));

/**
 * The settings a shared daemon takes only from its owner (the user settings file, or
 * `--settings FILE` when this window starts it), never from an editor's workspace settings
 * (protocol.md, Where settings come from): where data is kept, which models exist, and where
 * a summarizer sends the conversation with which key. The data dir, which picks the daemon, is
 * a launch key.
 */
export const OWNER_KEYS: readonly string[] = DAEMON_SETTING_KEYS.filter(
  (key) =>
    !LAUNCH_KEYS.includes(key) &&
    (key.startsWith("storage.") || key === "models" || ["summarizer.baseUrl", "summarizer.apiKeyEnv", "summarizer.remoteEndpoint"].includes(key)),
);

/** What `WorkspaceConfiguration.inspect(key)` tells of a key: the value set in each scope. */
export interface InspectedValue {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * The settings the user set explicitly, the most specific scope winning (folder, workspace,
 * user), never the contributed defaults: the daemon lays them over its own settings, so a
 * default sent as if chosen would hide the user's settings file.
 */
export function explicitSettings(inspect: (key: string) => InspectedValue | undefined): DaemonSettings {
  return buildDaemonSettings((key) => {
    // The data dir picks the daemon (--data-dir); a shared one refuses it as a setting.
    if (LAUNCH_KEYS.includes(key)) return undefined;
    const inspected = inspect(key);
    return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
  });
}

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
