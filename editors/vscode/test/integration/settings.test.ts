/**
 * The settings a window sends reach the shared daemon: what the user set explicitly for the
 * workspace (the values `inspect()` reports, never the contributed defaults) sets how that
 * workspace's sessions compact, and another workspace's sessions keep the daemon's own.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DaemonStatus, Method, StateResult } from "../../src/protocol";
import { explicitSettings, InspectedValue } from "../../src/settings";
import { TestDaemon } from "../support/daemon";

describe("settings on the shared daemon", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "contextd-vscode-settings-"));
  const runtimeDir = mkdtempSync(join(tmpdir(), "ctxd-rt-"));
  const started: TestDaemon[] = [];
  let sharedPid: number | undefined;

  afterAll(async () => {
    for (const daemon of started) await daemon.stop();
    if (sharedPid) process.kill(sharedPid, "SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(runtimeDir, { recursive: true, force: true });
  });

  async function window(name: string, scopes: Record<string, InspectedValue>): Promise<TestDaemon> {
    const workspace = join(dataDir, name);
    mkdirSync(workspace, { recursive: true });
    const settings = explicitSettings((key) => scopes[key]);
    const daemon = await TestDaemon.start({ dataDir, workspace, sharedRuntimeDir: runtimeDir, settings });
    started.push(daemon);
    sharedPid ??= (await daemon.connection.sendRequest<DaemonStatus>(Method.daemonStatus, {})).pid;
    return daemon;
  }

  async function threshold(daemon: TestDaemon): Promise<{ tokens: number; window: number }> {
    const { sessionId } = await daemon.sessions.open({ name: "set" });
    const state = await daemon.connection.sendRequest<StateResult>(Method.state, { sessionId });
    return { tokens: state.usage.thresholdTokens, window: state.usage.contextWindow };
  }

  it("applies the workspace's explicit thresholdPercent to its sessions, not to another's", async () => {
    const set = await window("set", { "compaction.thresholdPercent": { globalValue: 0.8, workspaceValue: 0.5 } });
    const mine = await threshold(set);
    expect(mine.tokens).toBe(Math.floor(mine.window * 0.5));

    const other = await window("other", {});
    const theirs = await threshold(other);
    expect(theirs.tokens).toBeGreaterThan(Math.floor(theirs.window * 0.5));
  });
});
