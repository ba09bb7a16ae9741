/**
 * A mirror of another agent's session: a real Claude Code transcript from the corpus is
 * written while the daemon follows it. The window's status shows it with the agent's name,
 * and every command that would write to it says it is read-only instead of failing.
 */
import { gunzipSync } from "node:zlib";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as commands from "../../src/commands";
import { formatTokens, statusText, statusTooltip } from "../../src/format";
import { ErrorCode } from "../../src/protocol";
import { errorCode } from "../../src/rpc";
import { ContextdSessions } from "../../src/sessions";
import { eventually, settingsWith, TestDaemon } from "../support/daemon";
import { FakeUi, MemorySettings } from "../support/fakeUi";
import { user } from "../support/messages";

const REAL = "../../../../tests/fixtures/real/";
const CORPUS = new URL(`${REAL}claude-code-atlas-short.jsonl.gz`, import.meta.url);
/** A Claude Code transcript that holds two of Claude Code's own compactions. */
const COMPACTED = new URL(`${REAL}claude-code-atlas-sonnet45.jsonl.gz`, import.meta.url);

/** A corpus transcript as Claude Code would write it in `workspace`. */
const transcriptIn = (file: URL, workspace: string) =>
  gunzipSync(readFileSync(file)).toString("utf8").replaceAll('"cwd":"/Users/Sam"', `"cwd":${JSON.stringify(workspace)}`);

describe("a mirrored Claude Code session", () => {
  let root: string;
  let transcript: string;
  let daemon: TestDaemon;
  let mirrorId: string;
  let projects: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "contextd-vscode-follow-"));
    const workspace = join(root, "project");
    projects = join(root, "claude-projects");
    daemon = await TestDaemon.start({
      workspace,
      settings: settingsWith({
        follow: { enabled: true, agents: ["claude-code"], roots: { "claude-code": projects }, intervalSeconds: 0.1 },
      }),
    });
    await daemon.sessions.watchWorkspace();
    // The transcript of an agent working in this window's workspace, as Claude Code writes it.
    const lines = transcriptIn(CORPUS, workspace).split("\n");
    mkdirSync(join(projects, "-project"), { recursive: true });
    transcript = join(projects, "-project", "7d1c2f0e-8b1a-4c3d-9e5f-0a1b2c3d4e5f.jsonl");
    writeFileSync(transcript, lines.slice(0, 40).join("\n") + "\n");
    const first = await eventually(() => daemon.sessions.status.latest()?.source && daemon.sessions.status.latest(), 30_000);
    mirrorId = first.sessionId;
    appendFileSync(transcript, lines.slice(40).join("\n"));
    const before = first.usage!.tokens;
    await eventually(() => daemon.sessions.status.get(mirrorId)!.usage!.tokens !== before, 30_000);
  });

  afterAll(async () => {
    await daemon?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("is what the status bar shows, with its agent's name, though nobody opened it", () => {
    const shown = daemon.sessions.status.latest()!;
    expect(shown.sessionId).toBe(mirrorId);
    expect(shown.source).toEqual({ agent: "claude-code", path: transcript });
    expect(statusText(shown)).toMatch(/^\$\(database\) \d+(\.\d+)?k?\/\d+k \d+% · Claude Code · \S/);
    expect(daemon.sessions.current).toBeUndefined();
  });

  it("shows where Claude Code compacts it, as the daemon worked it out from Claude Code's rules and settings", () => {
    const shown = daemon.sessions.status.get(mirrorId)!;
    const point = shown.usage!.agentCompaction!;
    expect(point.basis).toMatch(/^(Claude Code's rule|.* Claude Code does not compact on its own)/);
    const tooltip = statusTooltip(shown, Date.now()).join("\n");
    if (point.enabled) expect(tooltip).toContain(`Agent compacts at ~${formatTokens(point.tokens!)} (${point.percent}%)`);
    else expect(tooltip).toContain("Agent compacts: never on its own");
  });

  it("is listed in Switch Session with its agent's name, and opens when chosen", async () => {
    const ui = new FakeUi().willPick("Claude Code · ");
    const ctx = { ui, sessions: daemon.sessions, settings: new MemorySettings() };
    expect(await commands.switchSession(ctx)).toBe(mirrorId);
    expect(ui.picks[0].items.find((item) => item.value === mirrorId)?.description).toMatch(/^\d+% · .* · read-only mirror$/);
    expect(daemon.sessions.current).toBe(mirrorId);
  });

  it("offers only the actions that leave it as its agent wrote it", async () => {
    const ui = new FakeUi().willDismissPick();
    await commands.showActions({ ui, sessions: daemon.sessions, settings: new MemorySettings() }, mirrorId);
    const labels = ui.picks[0].items.map((item) => item.label);
    expect(labels).toEqual(expect.arrayContaining(["$(eye) Compact Preview", "$(arrow-swap) Hand Off to New Session"]));
    expect(labels.filter((label) => /Compact Now|Go to Entry|Label Entry|Idle/.test(label))).toEqual([]);
    expect(ui.picks[0].options.placeholder).toMatch(/read-only mirror of Claude Code's session$/);
  });

  it("counts the compactions its agent made before the window heard of it, with the latest one's figure", async () => {
    const compacted = join(projects, "-project", "5b0c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d.jsonl");
    writeFileSync(compacted, transcriptIn(COMPACTED, daemon.workspace));
    const mirror = await eventually(() => daemon.sessions.status.all().find((s) => s.source?.path === compacted && s.agentCompactions), 60_000);
    expect(mirror.agentCompactions?.count).toBe(2);
    expect(mirror.agentCompactions?.lastTokensBefore).toBeGreaterThan(mirror.usage!.tokens);
    const tooltip = statusTooltip(mirror, Date.now()).join("\n");
    expect(tooltip).toMatch(/Compactions in the transcript: 2, by Claude Code; the latest at \d+k tokens/);
    expect(tooltip).not.toContain("Compaction threshold");
  }, 90_000);

  it("says a write is not possible instead of trying it, and the daemon refuses one all the same", async () => {
    const ui = new FakeUi();
    const ctx = { ui, sessions: daemon.sessions, settings: new MemorySettings() };
    await commands.compactNow(ctx, mirrorId);
    await commands.label(ctx, mirrorId);
    expect(ui.inputs).toEqual([]);
    expect(ui.messages("info")).toEqual([
      expect.stringMatching(/^contextd: Claude Code · .* is a read-only mirror of Claude Code's session, so compacting it is not possible\./),
      expect.stringMatching(/so labelling its entries is not possible\./),
    ]);
    const refused = await daemon.sessions.append(mirrorId, [user("hello")]).catch((error) => error);
    expect(errorCode(refused)).toBe(ErrorCode.readOnlyMirror);
  });

  it("explains the daemon's refusal to a window that did not know it was a mirror", async () => {
    const unaware = new ContextdSessions(daemon.connection, daemon.workspace);
    const ui = new FakeUi().willType("");
    await commands.compactNow({ ui, sessions: unaware, settings: new MemorySettings() }, mirrorId);
    expect(ui.messages("error")).toEqual([]);
    expect(ui.messages("info")).toEqual([expect.stringMatching(/^contextd: this session is a read-only mirror of another agent's session/)]);
    unaware.dispose();
  });

  it("previews a compaction", async () => {
    const preview = await daemon.sessions.preview(mirrorId);
    expect(preview.tokensAfter).toBeLessThanOrEqual(preview.tokensBefore);
  });
});
