/** A daemon that dies and is started again: the window's sessions come back from disk. */
import { afterEach, describe, expect, it } from "vitest";
import { ContextdSessions } from "../../src/sessions";
import { statusText } from "../../src/format";
import { eventually, TestDaemon } from "../support/daemon";
import { assistant, user } from "../support/messages";
import { SwitchableConnection } from "../support/switchableConnection";

describe("after a daemon restart", () => {
  const daemons: TestDaemon[] = [];

  afterEach(async () => {
    for (const daemon of daemons.splice(0).reverse()) await daemon.stop();
  });

  it("reopens the window's sessions with their figures, and work goes on", async () => {
    const first = await TestDaemon.start();
    daemons.push(first);
    const connection = new SwitchableConnection(first.connection);
    const sessions = new ContextdSessions(connection, first.workspace);
    const { sessionId } = await sessions.open({ name: "survivor" });
    await sessions.append(sessionId, [user("Fix it"), assistant("On it", { input: 84_000, output: 10 })]);
    const other = (await sessions.open({ name: "second" })).sessionId;
    sessions.setCurrent(sessionId);
    const before = statusText(sessions.status.get(sessionId)!);

    await first.kill();
    const second = await TestDaemon.start({ dataDir: first.dataDir, workspace: first.workspace });
    daemons.push(second);
    connection.switchTo(second.connection);
    await sessions.reopenAll();

    expect(sessions.current).toBe(sessionId);
    expect(sessions.status.all().map((s) => s.sessionId).sort()).toEqual([sessionId, other].sort());
    expect(statusText(sessions.status.get(sessionId)!)).toBe(before);
    const appended = await sessions.append(sessionId, [user("Still there?")]);
    expect(appended.usage.tokens).toBeGreaterThan(84_010);
    await eventually(() => sessions.status.get(sessionId)!.usage!.tokens === appended.usage.tokens);
    const { messages } = await sessions.context(sessionId);
    expect(messages).toHaveLength(3);
    sessions.dispose();
  });

  it("lets a hand-off started while the sessions are being reopened run to its end", async () => {
    const first = await TestDaemon.start();
    daemons.push(first);
    const connection = new SwitchableConnection(first.connection);
    const sessions = new ContextdSessions(connection, first.workspace);
    const { sessionId } = await sessions.open({ name: "handed over" });
    await sessions.append(sessionId, [user("Fix the month-end report"), assistant("Found the rounding bug", { input: 9_000, output: 10 })]);
    await sessions.open({ name: "second" });
    sessions.setCurrent(sessionId);

    await first.kill();
    const second = await TestDaemon.start({ dataDir: first.dataDir, workspace: first.workspace });
    daemons.push(second);
    connection.switchTo(second.connection);
    // The user runs Hand Off the moment the window is connected again, before it has reopened its sessions.
    const reopened = sessions.reopenAll();
    const result = await sessions.handoff(sessionId, "finish the month-end fix");
    await reopened;

    expect(sessions.current).toBe(result.sessionId);
    expect(sessions.status.get(result.sessionId)?.name).toBe("finish the month-end fix");
    expect(sessions.status.get(sessionId)?.compacting).toBeUndefined();
    sessions.dispose();
  });
});
