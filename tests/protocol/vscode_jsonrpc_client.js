// A client built on the VS Code extension's own JSON-RPC stack (vscode-jsonrpc), attached to
// the shared daemon through `contextd serve --shared`. It opens the session named on its
// command line, prints every notification as a JSON line, and quits when stdin says "quit".
const path = require('path');
const readline = require('readline');
const { spawn } = require('child_process');
const rpc = require(path.join(process.env.VSCODE_NODE_MODULES, 'vscode-jsonrpc', 'node'));

const [python, dataDir, sessionId] = process.argv.slice(2);
const daemon = spawn(python, ['-m', 'contextd', '--data-dir', dataDir, 'serve', '--shared'], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(daemon.stdout),
  new rpc.StreamMessageWriter(daemon.stdin),
);
const say = (kind, params) => console.log(JSON.stringify({ kind, params }));
connection.onNotification((method, params) => say(method, params));
connection.listen();

(async () => {
  await connection.sendRequest('initialize', {
    processId: process.pid, capabilities: {}, clientInfo: { name: 'vscode-jsonrpc' },
  });
  await connection.sendNotification('initialized', {});
  say('opened', await connection.sendRequest('contextd/session/open', { sessionId }));
  readline.createInterface({ input: process.stdin }).on('line', async (line) => {
    if (line.trim() !== 'quit') return;
    await connection.sendRequest('shutdown');
    await connection.sendNotification('exit');
    daemon.on('exit', (code) => { say('quit', { forwarderExit: code }); process.exit(0); });
  });
})().catch((error) => { say('error', { message: String(error) }); process.exit(1); });
