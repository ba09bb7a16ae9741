import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import manifest from "../../package.json";
import { SETTING_SCHEMAS } from "../../src/manifest";
import { buildDaemonSettings, configurationChange, DAEMON_SETTING_KEYS, explicitSettings, followParams, OWNER_KEYS } from "../../src/settings";
import { defaultSettings } from "../support/daemon";

const properties = SETTING_SCHEMAS;

/** Settings whose value is an object of the user's keys, not a group of settings. */
const OBJECT_SETTINGS = new Set(["models", "follow.roots"]);

/** The defaults protocol.md documents, as dotted names (object-valued settings whole). */
function documentedDefaults(): Map<string, unknown> {
  const protocol = readFileSync(new URL("../../../../protocol.md", import.meta.url), "utf8");
  const section = protocol.slice(protocol.indexOf("## Settings"));
  const json = section.match(/```json\n([\s\S]*?)```/)![1];
  const flat = new Map<string, unknown>();
  const walk = (value: Record<string, unknown>, prefix: string) => {
    for (const [key, item] of Object.entries(value)) {
      const name = `${prefix}${key}`;
      if (item && typeof item === "object" && !Array.isArray(item) && !OBJECT_SETTINGS.has(name)) walk(item as Record<string, unknown>, `${name}.`);
      else flat.set(name, item);
    }
  };
  walk(JSON.parse(json), "");
  return flat;
}

describe("contributed settings", () => {
  it("cover every setting protocol.md documents, with its default", () => {
    const documented = documentedDefaults();
    expect(documented.size).toBeGreaterThan(25);
    for (const [key, value] of documented) {
      expect(properties, key).toHaveProperty([`contextd.${key}`]);
      if (key !== "models") expect(properties[`contextd.${key}`].default, key).toEqual(value);
    }
  });

  it("contribute nothing the daemon does not know, besides the interpreter and the shared daemon switch", () => {
    const documented = documentedDefaults();
    expect(DAEMON_SETTING_KEYS.filter((key) => !documented.has(key))).toEqual([]);
    expect(Object.keys(properties)).toEqual(expect.arrayContaining(["contextd.pythonPath", "contextd.sharedDaemon"]));
    expect(DAEMON_SETTING_KEYS).not.toContain("pythonPath");
    expect(DAEMON_SETTING_KEYS).not.toContain("sharedDaemon");
    expect(properties["contextd.sharedDaemon"].default).toBe(true);
  });

  it("tell the per-connection settings and the owner's from those a workspace sets (protocol.md)", () => {
    const protocol = readFileSync(new URL("../../../../protocol.md", import.meta.url), "utf8");
    const perConnection = protocol.match(/Settings: `(\w+)` and `([\w.]+)` are \*\*per connection\*\*/)!.slice(1);
    expect(perConnection).toEqual(["defaultModel", "compaction.hookTimeoutSeconds"]);
    for (const key of perConnection) expect(OWNER_KEYS).not.toContain(key);
    expect(OWNER_KEYS).toEqual(expect.arrayContaining(["models", "storage.maxLoadedSessions", "summarizer.baseUrl", "summarizer.apiKeyEnv"]));
    for (const key of ["compaction.keepRecentTokens", "summarizer.provider", "idle.enabled"]) expect(OWNER_KEYS).not.toContain(key);
    // The data dir chooses which shared daemon runs: it goes on the command line.
    expect(OWNER_KEYS).not.toContain("storage.dataDir");
  });

  it("give each setting a description", () => {
    for (const [key, spec] of Object.entries(properties) as Array<[string, Record<string, unknown>]>) {
      expect(spec.description ?? spec.markdownDescription, key).toBeTruthy();
    }
  });
});

describe("the daemon's settings object", () => {
  it("nests dotted names and leaves unset values to the daemon", () => {
    const values: Record<string, unknown> = {
      "compaction.enabled": false,
      "compaction.thresholdPercent": 0.6,
      "compaction.thresholdTokens": null,
      "summarizer.provider": "openai",
      "summarizer.apiKeyEnv": "OPENAI_API_KEY",
      models: { local: { contextWindow: 32_768 } },
      pythonPath: "/usr/bin/python3",
    };
    expect(buildDaemonSettings((key) => values[key])).toEqual({
      compaction: { enabled: false, thresholdPercent: 0.6 },
      summarizer: { provider: "openai", apiKeyEnv: "OPENAI_API_KEY" },
      models: { local: { contextWindow: 32_768 } },
    });
  });

  it("at the defaults, matches protocol.md's defaults minus the unset ones", () => {
    const settings = defaultSettings() as Record<string, Record<string, unknown>>;
    expect(settings.compaction).toMatchObject({ enabled: true, strategy: "summary", reserveTokens: 16384 });
    expect(settings.compaction).not.toHaveProperty("thresholdTokens");
    expect(settings.idle).toEqual({ enabled: false, timeoutSeconds: 300, thresholdPercent: 0.5 });
    expect(settings).not.toHaveProperty("pythonPath");
  });

  it("gives a running daemon the follow settings it takes at run time (contextd/follow), and no others", () => {
    const values: Record<string, unknown> = {
      "follow.enabled": true, "follow.agents": ["codex"], "follow.roots": { codex: "/srv/codex" }, "follow.intervalSeconds": 0.5,
    };
    expect(followParams(buildDaemonSettings((key) => values[key]))).toEqual({ enabled: true, agents: ["codex"], roots: { codex: "/srv/codex" } });
    expect(followParams(defaultSettings())).toEqual({ enabled: false, agents: ["claude-code", "codex", "pi"], roots: {}, allWorkspaces: false });
  });

  it("holds only what the user set, the folder's value over the workspace's over the user's", () => {
    const scopes: Record<string, { globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown }> = {
      "compaction.thresholdPercent": { globalValue: 0.7, workspaceValue: 0.6, workspaceFolderValue: 0.5 },
      "idle.enabled": { globalValue: true },
      "compaction.keepRecentTokens": {},
      "storage.dataDir": { globalValue: "/srv/contextd" },
    };
    expect(explicitSettings((key) => scopes[key])).toEqual({ compaction: { thresholdPercent: 0.5 }, idle: { enabled: true } });
    expect(explicitSettings(() => undefined)).toEqual({});
  });

  it("is sent on change under settings.contextd", () => {
    expect(configurationChange({ idle: { enabled: true } })).toEqual({ settings: { contextd: { idle: { enabled: true } } } });
  });
});

describe("the settings editor's sections", () => {
  const sections = (manifest.contributes.configuration as Array<{ title: string; order: number; properties: Record<string, unknown> }>)
    .slice()
    .sort((a, b) => a.order - b.order);

  it("come titled, Following and the daemon first, Advanced last", () => {
    expect(sections.map((s) => s.title)).toEqual(["Following", "Status and Daemon", "Compaction", "Summarizer", "Advanced"]);
    expect(Object.keys(sections[1].properties)[0]).toBe("contextd.sharedDaemon");
  });

  it("hold every setting once", () => {
    const keys = sections.flatMap((s) => Object.keys(s.properties));
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.sort()).toEqual(Object.keys(SETTING_SCHEMAS).sort());
  });
});
