/**
 * Opening the settings editor on one of contextd's settings, in the tab where it applies: in
 * a remote window (code-server, Remote-SSH, WSL, a container) VS Code shows a machine setting
 * only under Remote; the User tab says "No Settings Found" for it.
 */
import { SETTING_SCHEMAS } from "./manifest";

const MACHINE_SCOPES = new Set(["machine", "machine-overridable"]);

/** The command and its argument that open the settings editor on `setting` ("contextd.pythonPath"). */
export function openSettingCommand(setting: string, remoteName: string | undefined): { command: string; argument: unknown } {
  const machine = MACHINE_SCOPES.has(SETTING_SCHEMAS[setting]?.scope ?? "");
  return remoteName && machine
    ? { command: "workbench.action.openRemoteSettings", argument: { query: setting } }
    : { command: "workbench.action.openSettings", argument: setting };
}
