import { describe, expect, it } from "vitest";
import { LeveledOutput, LogLineParser } from "../../src/logOutput";

function recordingSink() {
  const lines: string[] = [];
  const at = (level: string) => (text: string) => lines.push(`${level}: ${text}`);
  return {
    lines,
    sink: { name: "contextd", error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug"), trace: at("trace"), show() {}, hide() {}, clear: () => (lines.length = 0) },
  };
}

describe("the output channel's levels", () => {
  it("gives vscode-languageclient's lines their level and drops its flag values", () => {
    const parser = new LogLineParser();
    expect(parser.parse("[Error - 10:42:01 AM] Connection to server got closed.")).toEqual({ level: "error", text: "Connection to server got closed." });
    expect(parser.parse("false")).toBeUndefined();
    expect(parser.parse("[Info  - 10:42:02 AM] Connection to server got closed. Server will restart.")).toEqual({ level: "info", text: "Connection to server got closed. Server will restart." });
  });

  it("reads the daemon's log level, and a traceback keeps it", () => {
    const parser = new LogLineParser();
    expect(parser.parse("2026-11-23 10:42:01,123 WARNING contextd.server: unknown setting foo")).toEqual({ level: "warn", text: "contextd.server: unknown setting foo" });
    expect(parser.parse("2026-11-23 10:42:01,124 ERROR contextd.session: boom")?.level).toBe("error");
    expect(parser.parse("Traceback (most recent call last):")).toEqual({ level: "error", text: "Traceback (most recent call last):" });
    expect(parser.parse("2026-11-23 10:42:02,000 INFO contextd.server: serving")?.level).toBe("info");
  });

  it("joins the daemon's stderr chunks into whole lines", () => {
    const { lines, sink } = recordingSink();
    const output = new LeveledOutput(sink);
    output.append("2026-11-23 10:42:01,123 ERROR contextd: half");
    expect(lines).toEqual([]);
    output.append(" a line\n2026-11-23 10:42:01,200 INFO contextd: next\n");
    output.appendLine("[Error - 10:42:03] Server initialization failed.");
    output.appendLine("false");
    expect(lines).toEqual(["error: contextd: half a line", "info: contextd: next", "error: Server initialization failed."]);
  });
});
