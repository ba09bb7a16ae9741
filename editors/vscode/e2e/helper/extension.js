// The test's agent: appends through contextd's exported API, the way an agent extension
// does, and writes what the API reports as JSON lines to $CONTEXTD_E2E_LOG.
const vscode = require("vscode");
const fs = require("fs");

const LOG = process.env.CONTEXTD_E2E_LOG;
const record = (event) => LOG && fs.appendFileSync(LOG, `${JSON.stringify({ at: Date.now(), ...event })}\n`);

exports.activate = async (context) => {
  const api = await vscode.extensions.getExtension("contextd.contextd").activate();
  context.subscriptions.push(
    api.onTokenUsage((usage) => record({ event: "tokenUsage", usage })),
    vscode.commands.registerCommand("contextdE2e.append", async () => {
      const sessionId = api.currentSessionId();
      const result = await api.appendMessages(sessionId, [
        { role: "user", content: "Now add a test for the month-end balance, please. ".repeat(40) },
        { role: "assistant", content: [{ type: "text", text: "Added tests/test_month_end.py; it passes. ".repeat(60) }], stopReason: "stop" },
      ]);
      record({ event: "appended", sessionId, usage: result.usage });
    }),
    vscode.commands.registerCommand("contextdE2e.environment", () => {
      const inspected = vscode.workspace.getConfiguration("contextd").inspect("pythonPath");
      record({ event: "environment", remoteName: vscode.env.remoteName ?? null, pythonPath: inspected });
    }),
  );
  record({ event: "activated" });
};
