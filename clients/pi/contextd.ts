/**
 * contextd for pi: pi's compactions and branch summaries written by contextd.
 *
 * On `session_before_compact` it asks the shared contextd daemon (which mirrors this pi
 * session) for contextd's summary of the same span — everything before pi's first kept
 * entry — and returns it as pi's compaction, with contextd's file lists in `details`. On
 * `session_before_tree`, when a summary is wanted, it does the same for the branch being
 * left. When the daemon cannot be reached, does not mirror the session yet, or is slower
 * than CONTEXTD_PI_TIMEOUT_MS (default 10000), it returns nothing and pi summarizes as usual.
 *
 * Install: copy (or link) this file to ~/.pi/agent/extensions/contextd.ts, or run
 * `pi -e path/to/contextd.ts`. The daemon is reached through `contextd serve --shared`
 * (CONTEXTD_PI_COMMAND, a JSON array, replaces `["contextd"]`: e.g.
 * `["python3", "-m", "contextd", "--data-dir", "/srv/ctx"]`).
 */

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { pathToFileURL } from "node:url";

const DEFAULT_TIMEOUT_MS = 10_000;
const POLL_MS = 200;
const ENTRY_NOT_FOUND = -32007;

type Json = any;

interface SpanSummary {
  summary: string;
  details: { readFiles?: string[]; modifiedFiles?: string[] };
}

/** A JSON-RPC peer over `contextd serve --shared`'s stdio (LSP framing). */
class Daemon {
  private buffer = Buffer.alloc(0);
  private nextId = 1;
  private waiting = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void }>();

  constructor(private child: ChildProcessWithoutNullStreams) {
    child.stdout.on("data", (chunk: Buffer) => this.receive(chunk));
    const fail = (why: string) => {
      for (const pending of this.waiting.values()) pending.reject(new Error(why));
      this.waiting.clear();
    };
    child.on("exit", () => fail("contextd exited"));
    child.on("error", (error) => fail(String(error)));
  }

  static start(): Daemon {
    const command: string[] = process.env.CONTEXTD_PI_COMMAND ? JSON.parse(process.env.CONTEXTD_PI_COMMAND) : ["contextd"];
    const child = spawn(command[0], [...command.slice(1), "serve", "--shared"], { stdio: ["pipe", "pipe", "ignore"] });
    return new Daemon(child);
  }

  request(method: string, params: Json): Promise<Json> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method: string, params: Json): void {
    this.send({ jsonrpc: "2.0", method, params });
  }

  stop(): void {
    this.child.stdin.end();
    this.child.kill();
  }

  private send(message: Json): void {
    const body = Buffer.from(JSON.stringify(message), "utf8");
    this.child.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  }

  private receive(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/Content-Length:\s*(\d+)/i.exec(this.buffer.subarray(0, end).toString())?.[1]);
      if (this.buffer.length < end + 4 + length) return;
      const message = JSON.parse(this.buffer.subarray(end + 4, end + 4 + length).toString("utf8"));
      this.buffer = this.buffer.subarray(end + 4 + length);
      const pending = typeof message.id === "number" ? this.waiting.get(message.id) : undefined;
      if (pending && !("method" in message)) {
        this.waiting.delete(message.id);
        if (message.error) pending.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
        else pending.resolve(message.result);
      } else if ("method" in message && "id" in message) {
        this.send({ jsonrpc: "2.0", id: message.id, result: null }); // a request to us: nothing to add
      }
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The mirror of `sessionFile`, once the daemon follows it. */
async function mirrorOf(daemon: Daemon, cwd: string, sessionFile: string): Promise<string> {
  for (;;) {
    const { sessions } = await daemon.request("contextd/session/list", { workspace: cwd });
    const found = sessions.find((row: Json) => row.source?.path === sessionFile);
    if (found) return found.sessionId;
    await sleep(POLL_MS);
  }
}

/** contextd/history/summarize, asked again while the mirror does not hold the entries yet. */
async function summarize(daemon: Daemon, params: Json): Promise<SpanSummary> {
  for (;;) {
    try {
      return await daemon.request("contextd/history/summarize", params);
    } catch (error: any) {
      if (error.code !== ENTRY_NOT_FOUND) throw error;
      await sleep(POLL_MS);
    }
  }
}

/** contextd's summary of a span of this pi session; undefined when it is not to be had in time. */
async function contextdSummary(cwd: string, sessionFile: string | undefined, span: Json): Promise<SpanSummary | undefined> {
  if (!sessionFile) return undefined; // an ephemeral session: nothing to mirror
  const timeout = Number(process.env.CONTEXTD_PI_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS;
  const daemon = Daemon.start();
  const work = (async () => {
    await daemon.request("initialize", {
      processId: process.pid,
      clientInfo: { name: "contextd-pi" },
      capabilities: {},
      workspaceFolders: [{ uri: pathToFileURL(cwd).href, name: "pi" }],
    });
    daemon.notify("initialized", {});
    await daemon.request("contextd/follow", { enabled: true });
    const sessionId = await mirrorOf(daemon, cwd, sessionFile);
    return summarize(daemon, { sessionId, ...span });
  })();
  try {
    return await Promise.race([work, sleep(timeout).then(() => undefined)]);
  } catch {
    return undefined;
  } finally {
    work.catch(() => undefined);
    daemon.stop();
  }
}

export default function (pi: any) {
  pi.on("session_before_compact", async (event: Json, ctx: Json) => {
    const { preparation } = event;
    const span = await contextdSummary(ctx.cwd, ctx.sessionManager.getSessionFile(), {
      firstKeptEntryId: preparation.firstKeptEntryId,
    });
    if (!span) return undefined;
    return {
      compaction: {
        summary: span.summary,
        firstKeptEntryId: preparation.firstKeptEntryId,
        tokensBefore: preparation.tokensBefore,
        details: { readFiles: span.details.readFiles ?? [], modifiedFiles: span.details.modifiedFiles ?? [], by: "contextd" },
      },
    };
  });

  pi.on("session_before_tree", async (event: Json, ctx: Json) => {
    const { preparation } = event;
    if (!preparation.userWantsSummary || !preparation.oldLeafId) return undefined;
    const span = await contextdSummary(ctx.cwd, ctx.sessionManager.getSessionFile(), {
      throughEntryId: preparation.oldLeafId,
      ...(preparation.commonAncestorId ? { afterEntryId: preparation.commonAncestorId } : {}),
    });
    if (!span) return undefined;
    return {
      summary: {
        summary: span.summary,
        details: { readFiles: span.details.readFiles ?? [], modifiedFiles: span.details.modifiedFiles ?? [], by: "contextd" },
      },
    };
  });
}
