/**
 * The daemon's settings object, built from the `contextd.*` settings this extension
 * contributes. Dotted names become nested objects ({compaction: {enabled: true}}).
 */
import { contributes } from "../package.json";

export const SECTION = "contextd";

/** Settings that steer the extension itself and never go to the daemon. */
const CLIENT_ONLY = new Set(["pythonPath"]);

export type DaemonSettings = Record<string, unknown>;

/** Every daemon setting's name relative to the section, e.g. "compaction.enabled". */
export const DAEMON_SETTING_KEYS: readonly string[] = Object.keys(contributes.configuration.properties)
  .map((key) => key.slice(SECTION.length + 1))
  .filter((key) => !CLIENT_ONLY.has(key));

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

/** The `workspace/didChangeConfiguration` params, in VS Code's convention. */
export function configurationChange(settings: DaemonSettings): { settings: { contextd: DaemonSettings } } {
  return { settings: { contextd: settings } };
}
