/**
 * The shared daemon, as the extension attaches to it by default: two clients (`serve
 * --shared` forwarders, vscode-jsonrpc under each) on one per-user daemon. The window's
 * status follows a session another client drives, which it never opened.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeDaemonSettings } from "../../src/daemon";
import { statusText } from "../../src/format";
import { DaemonStatus, FollowResult, Method, StateResult } from "../../src/protocol";
import { followParams } from "../../src/settings";
import { CompactionProgress } from "../../src/compactionProgress";
import { eventually, settingsWith, TestDaemon } from "../support/daemon";
import { FakeUi } from "../support/fakeUi";
import { assistant, conversation, user } from "../support/messages";

describe("on the shared daemon", () => {
  let dataDir: string;
  let runtimeDir: string;
  let window: TestDaemon;
  let script: TestDaemon;
  let sharedPid: number | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "contextd-vscode-shared-"));
    runtimeDir = mkdtempSync(join(tmpdir(), "ctxd-rt-"));
    const workspace = join(dataDir, "workspace");
    // What the extension writes to its workspace storage: small budgets, so a short conversation compacts;
    // the followed root a client may then ask for (one beyond ~/.claude/projects is the owner's to name).
    const ownerRoots = { "claude-code": join(dataDir, "claude-projects") };
    const settingsFile = writeDaemonSettings(
      join(dataDir, "storage"),
      settingsWith({ compaction: { keepRecentTokens: 1500 }, follow: { roots: ownerRoots } }),
    );
    window = await TestDaemon.start({ dataDir, workspace, sharedRuntimeDir: runtimeDir, sharedSettingsFile: settingsFile });
    script = await TestDaemon.start({ dataDir, workspace, sharedRuntimeDir: runtimeDir });
    sharedPid = (await window.connection.sendRequest<DaemonStatus>(Method.daemonStatus, {})).pid;
  });

  afterAll(async () => {
    await script?.stop();
    await window?.stop();
    // The shared daemon would wait out its grace period for more clients.
    if (sharedPid) process.kill(sharedPid, "SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(runtimeDir, { recursive: true, force: true });
  });

  it("is one daemon for both clients, which the first one started", async () => {
    const status = await script.connection.sendRequest<DaemonStatus>(Method.daemonStatus, {});
    expect(status).toMatchObject({ pid: sharedPid, dedicated: false });
    expect(status.connections).toHaveLength(2);
  });

  it("shows the session another client appends to, without opening it, then ours again when it changes", async () => {
    const mine = await window.sessions.open({ name: "mine" });
    const watched = await window.sessions.watchWorkspace();
    expect(watched?.sessions.map((s) => s.sessionId)).toContain(mine.sessionId);
    expect(window.sessions.status.latest()?.sessionId).toBe(mine.sessionId);

    const { sessionId } = await script.sessions.open({ name: "nightly agent" });
    const appended = await script.sessions.append(sessionId, [user("Run the checks"), assistant("All pass", { input: 42_000, output: 20 })]);
    const shown = await eventually(() => {
      const latest = window.sessions.status.latest();
      return latest?.sessionId === sessionId && latest.usage?.tokens === appended.usage.tokens ? latest : undefined;
    });
    expect(statusText(shown, { withName: true })).toBe("$(database) 42k/200k 21% · nightly agent");
    expect(window.sessions.current).toBe(mine.sessionId);

    const again = await window.sessions.append(mine.sessionId, [user("Back to my session")]);
    await eventually(() => window.sessions.status.latest()?.sessionId === mine.sessionId);
    expect(window.sessions.status.latest()?.usage).toEqual(again.usage);
  });

  it("forgets a session another client deletes, and shows the one that changed before it", async () => {
    const { sessionId } = await script.sessions.open({ name: "short-lived" });
    await script.sessions.append(sessionId, [user("Try something")]);
    await eventually(() => window.sessions.status.latest()?.sessionId === sessionId);
    await script.connection.sendRequest(Method.delete, { sessionId });
    await eventually(() => !window.sessions.status.has(sessionId));
    expect(window.sessions.status.latest()?.sessionId).not.toBe(sessionId);
    expect(window.sessions.status.latest()).toBeDefined();
  });

  it("hears the other client's compaction, with its summary line, under the settings the window started the daemon with", async () => {
    const { sessionId } = await script.sessions.open({ name: "long run" });
    await script.sessions.append(sessionId, conversation(8, 300));
    await eventually(() => window.sessions.status.latest()?.sessionId === sessionId);
    const result = await script.sessions.compact(sessionId);
    // keepRecentTokens 1500 from the settings file: the daemon's default (20,000) would keep it all.
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore / 2);
    const last = await eventually(() => window.sessions.status.get(sessionId)?.lastCompaction);
    expect(last).toMatchObject({ outcome: "compacted", tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter });
    expect(last.shortSummary).toBe(result.shortSummary);
    expect(last.shortSummary).toMatch(/\S/);
  });

  it("shows another client's compaction without Cancel: only the window that asked may stop it", async () => {
    const ui = new FakeUi();
    const progress = new CompactionProgress(window.sessions, ui);
    const scriptUi = new FakeUi();
    const scriptProgress = new CompactionProgress(script.sessions, scriptUi);
    try {
      const { sessionId } = await script.sessions.open({ name: "asked by the script" });
      await script.sessions.append(sessionId, conversation(8, 300));
      await eventually(() => window.sessions.status.has(sessionId));
      await script.sessions.compact(sessionId);
      const seen = await eventually(() => ui.progresses.find((p) => p.title.includes("asked by the script")));
      expect(seen).toMatchObject({ title: "contextd: compacting asked by the script (manual, asked for elsewhere)…", cancellable: false });
      expect(scriptUi.progresses[0]).toMatchObject({ title: "contextd: compacting asked by the script (manual)…", cancellable: true });
    } finally {
      progress.dispose();
      scriptProgress.dispose();
    }
  });

  it("keeps no session of another workspace, though the daemon-wide follow request touches every loaded one", async () => {
    const { sessionId } = await script.sessions.open({ name: "elsewhere", workspace: join(dataDir, "other-workspace") });
    await script.sessions.append(sessionId, [user("Work in another workspace")]);
    await window.connection.sendRequest<FollowResult>(Method.follow, { allWorkspaces: false });
    const mine = await window.sessions.open({ name: "after the follow request" });
    await window.sessions.append(mine.sessionId, [user("Still here")]);
    expect(window.sessions.status.has(sessionId)).toBe(false);
    expect(window.sessions.status.all().every((s) => s.name)).toBe(true);
  });

  it("shows a window that opens later the workspace's session that changed last", async () => {
    const newest = window.sessions.status.latest()!;
    // A damaged session file changed later still: it cannot be read, so it is passed over.
    const sessionsDir = readdirSync(join(dataDir, "workspaces"))
      .map((slug) => join(dataDir, "workspaces", slug, "sessions"))
      .find((dir) => existsSync(join(dir, `${newest.sessionId}.jsonl`)))!;
    const broken = join(sessionsDir, "broken.jsonl");
    writeFileSync(broken, Buffer.from([0, 0xff, 0xfe]));
    const aMinuteOn = new Date(Date.now() + 60_000);
    utimesSync(broken, aMinuteOn, aMinuteOn);
    const later = await TestDaemon.start({ dataDir, workspace: window.workspace, sharedRuntimeDir: runtimeDir });
    try {
      expect(later.sessions.status.latest()).toBeUndefined();
      const rows = (await later.sessions.watchWorkspace())!.sessions;
      expect(rows[0]).toMatchObject({ sessionId: "broken", damaged: "its first line is not a session header" });
      await later.sessions.showNewest(rows);
      // The session's figure as the daemon has it now: the first window's copy may still wait
      // for the activity that follows the previous test's compaction.
      const { usage } = await script.connection.sendRequest<StateResult>(Method.state, { sessionId: newest.sessionId });
      expect(later.sessions.status.latest()).toMatchObject({ sessionId: newest.sessionId, usage });
      expect(later.sessions.current).toBeUndefined();
    } finally {
      await later.stop();
      rmSync(broken);
    }
  });

  it("takes the window's follow settings at run time, for every client", async () => {
    const roots = { "claude-code": join(dataDir, "claude-projects") };
    const asked = await window.connection.sendRequest<FollowResult>(
      Method.follow,
      followParams(settingsWith({ follow: { enabled: true, agents: ["claude-code"], roots } })),
    );
    expect(asked).toMatchObject({ enabled: true, agents: ["claude-code"], roots, mirrors: 0 });
    expect(await script.connection.sendRequest<FollowResult>(Method.follow, {})).toMatchObject({ enabled: true, roots });
  });
});
