import { describe, expect, it } from "vitest";
import { openSettingCommand } from "../../src/settingsEditor";

describe("opening the settings editor on a setting", () => {
  it("opens a machine setting under Remote in a remote window, where VS Code shows it", () => {
    expect(openSettingCommand("contextd.pythonPath", "ssh-remote")).toEqual({
      command: "workbench.action.openRemoteSettings",
      argument: { query: "contextd.pythonPath" },
    });
  });

  it("opens the User settings in a local window, and for a setting of any scope", () => {
    expect(openSettingCommand("contextd.pythonPath", undefined)).toEqual({ command: "workbench.action.openSettings", argument: "contextd.pythonPath" });
    expect(openSettingCommand("contextd.sharedDaemon", "wsl")).toEqual({ command: "workbench.action.openSettings", argument: "contextd.sharedDaemon" });
  });
});
