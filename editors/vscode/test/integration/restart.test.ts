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
});
