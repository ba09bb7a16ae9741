import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { remoteSettingsHint, RestartPolicy, serverCommand, writeDaemonSettings } from "../../src/daemon";

describe("the daemon's command", () => {
  it("uses python3 from PATH by default", () => {
    expect(serverCommand(undefined)).toEqual({ command: "python3", args: ["-m", "contextd", "serve"] });
    expect(serverCommand("  ")).toEqual({ command: "python3", args: ["-m", "contextd", "serve"] });
  });

  it("uses the configured interpreter", () => {
    expect(serverCommand("/opt/venv/bin/python")).toEqual({ command: "/opt/venv/bin/python", args: ["-m", "contextd", "serve"] });
  });

  it("attaches to the shared daemon of the data dir, handing it the settings file to start with", () => {
    expect(serverCommand(undefined, { shared: true, dataDir: "/data/ctx", settingsFile: "/store/daemon-settings.json" })).toEqual({
      command: "python3",
      args: ["-m", "contextd", "--data-dir", "/data/ctx", "serve", "--shared", "--settings", "/store/daemon-settings.json"],
    });
    expect(serverCommand("py", { shared: true, dataDir: null })).toEqual({ command: "py", args: ["-m", "contextd", "serve", "--shared"] });
  });

  it("runs a daemon of its own without the shared daemon, with the data dir when one is set", () => {
    expect(serverCommand("py", { shared: false, dataDir: " /data/ctx ", settingsFile: "/ignored.json" })).toEqual({
      command: "py",
      args: ["-m", "contextd", "--data-dir", "/data/ctx", "serve"],
    });
  });
});

describe("the shared daemon's settings file", () => {
  it("holds the settings as JSON, replaced whole, readable by the user only", () => {
    const dir = mkdtempSync(join(tmpdir(), "contextd-settings-"));
    try {
      const store = join(dir, "workspace-storage");
      const file = writeDaemonSettings(store, { compaction: { keepRecentTokens: 3000 } });
      expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ compaction: { keepRecentTokens: 3000 } });
      writeDaemonSettings(store, { idle: { enabled: true } });
      expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ idle: { enabled: true } });
      expect(readdirSync(store)).toEqual(["daemon-settings.json"]);
      if (process.platform !== "win32") expect(statSync(file).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("restarts", () => {
  it("restarts a bounded number of times within the window", () => {
    const policy = new RestartPolicy(3, 60_000, 1000);
    expect([0, 1000, 2000].map((t) => policy.onCrash(t))).toEqual([
      { restart: true, attempt: 1, maxRestarts: 3, delayMs: 1000 },
      { restart: true, attempt: 2, maxRestarts: 3, delayMs: 2000 },
      { restart: true, attempt: 3, maxRestarts: 3, delayMs: 4000 },
    ]);
    expect(policy.onCrash(3000)).toEqual({ restart: false, attempt: 3, maxRestarts: 3, delayMs: 0 });
  });

  it("forgets crashes older than the window", () => {
    const policy = new RestartPolicy(2, 60_000);
    policy.onCrash(0);
    policy.onCrash(10_000);
    expect(policy.onCrash(20_000).restart).toBe(false);
    expect(policy.onCrash(65_000)).toMatchObject({ restart: true, attempt: 2, maxRestarts: 2 });
  });

  it("starts afresh when the user restarts the daemon", () => {
    const policy = new RestartPolicy(1, 60_000);
    policy.onCrash(0);
    expect(policy.onCrash(1).restart).toBe(false);
    policy.reset();
    expect(policy.onCrash(2).restart).toBe(true);
  });
});

describe("the remote settings hint", () => {
  it("is given in a remote window when no interpreter is set for the machine", () => {
    expect(remoteSettingsHint(undefined, "ssh-remote")).toMatch(/ignores contextd.pythonPath .* User settings: set them in Remote settings/);
    expect(remoteSettingsHint("  ", "127.0.0.1:8080")).toBeDefined();
  });

  it("is not given in a local window or when the interpreter is set", () => {
    expect(remoteSettingsHint(undefined, undefined)).toBeUndefined();
    expect(remoteSettingsHint("/opt/venv/bin/python", "wsl")).toBeUndefined();
  });
});
