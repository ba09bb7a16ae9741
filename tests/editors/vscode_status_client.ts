/**
 * The VS Code extension's client stack outside VS Code: vscode-jsonrpc over `contextd serve
 * --shared` (the per-user shared daemon), initialized as the extension initializes, with the
 * extension's own session code (ContextdSessions) and status bar text (statusText).
 *
 * Run with the extension's vite-node: `vite-node vscode_status_client.ts -- PYTHON DATA_DIR
 * WORKSPACE SESSION_ID`. It opens SESSION_ID and watches the workspace as the extension does,
 * and prints JSON lines: `opened`, then `status` with the status bar's session and text each
 * time the daemon's notifications change them; on the line `quit` it shuts down as the
 * extension does and prints `quit` with the forwarder's exit code.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { statusText } from "../../editors/vscode/src/format";
import { ContextdSessions } from "../../editors/vscode/src/sessions";

const extension = fileURLToPath(new URL("../../editors/vscode/", import.meta.url));
const rpc = createRequire(extension + "package.json")("vscode-jsonrpc/node") as typeof import("vscode-jsonrpc/node");

const [python, dataDir, workspace, sessionId] = process.argv.slice(2).filter((arg) => arg !== "--");
const say = (kind: string, params: unknown) => console.log(JSON.stringify({ kind, params }));

const forwarder = spawn(python, ["-m", "contextd", "--data-dir", dataDir, "serve", "--shared"], {
  stdio: ["pipe", "pipe", "inherit"],
});
const forwarderExit = new Promise<number | null>((resolve) => forwarder.once("exit", resolve));
const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(forwarder.stdout!),
  new rpc.StreamMessageWriter(forwarder.stdin!),
);
const sessions = new ContextdSessions(connection, workspace);
// What the extension's status bar item shows (statusBar.ts): the session that changed last,
// named once the window knows several.
const statusBar = () => {
  const shown = sessions.status.latest();
  return shown && { sessionId: shown.sessionId, text: statusText(shown, { withName: sessions.status.all().length > 1 }) };
};
sessions.status.onDidChange(() => say("status", statusBar()));
connection.onRequest("workspace/configuration", () => [{}]);
connection.listen();

async function main(): Promise<void> {
  const folder = pathToFileURL(workspace).toString();
  await connection.sendRequest("initialize", {
    processId: process.pid,
    clientInfo: { name: "Visual Studio Code", version: "1.100.0" },
    rootUri: folder,
    workspaceFolders: [{ uri: folder, name: "workspace" }],
    capabilities: { window: { workDoneProgress: true }, workspace: { configuration: true } },
    initializationOptions: {},
  });
  await connection.sendNotification("initialized", {});
  const opened = await sessions.open({ sessionId });
  // As the extension does on every connection to a shared daemon (extension.ts).
  const watched = await sessions.watchWorkspace();
  if (watched) await sessions.showNewest(watched.sessions);
  say("opened", { sessionId: opened.sessionId, watched: Boolean(watched), ...statusBar() });
  createInterface({ input: process.stdin }).on("line", async (line) => {
    if (line.trim() !== "quit") return;
    await connection.sendRequest("shutdown");
    await connection.sendNotification("exit");
    say("quit", { forwarderExit: await forwarderExit });
    process.exit(0);
  });
}

main().catch((error) => {
  say("error", { message: String(error) });
  process.exit(1);
});
