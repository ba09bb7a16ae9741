/**
 * A `remote` summarizer on 127.0.0.1 for the daemon to call: it answers with a summary,
 * fails with an HTTP status, or holds the request until released (to test cancelling).
 */
import { createServer, IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Behaviour =
  | { kind: "summary"; text: string }
  | { kind: "fail"; status: number; body: unknown }
  | { kind: "hold" };

export class SummarizerServer {
  behaviour: Behaviour = { kind: "summary", text: "## Goal\nFix the failing test." };
  readonly requests: Array<{ systemPrompt: string; prompt: string; maxTokens: number }> = [];
  private held: ServerResponse[] = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<SummarizerServer> {
    let instance!: SummarizerServer;
    const server = createServer((request, response) => void instance.handle(request, response));
    instance = new SummarizerServer(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return instance;
  }

  get endpoint(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/summarize`;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let body = "";
    for await (const chunk of request) body += chunk;
    this.requests.push(JSON.parse(body));
    const behaviour = this.behaviour;
    if (behaviour.kind === "hold") {
      this.held.push(response);
      return;
    }
    const [status, reply] = behaviour.kind === "summary" ? [200, { summary: behaviour.text }] : [behaviour.status, behaviour.body];
    response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(reply));
  }

  /** Answers every held request with a summary. */
  release(text = "## Goal\nReleased."): void {
    for (const response of this.held.splice(0)) {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ summary: text }));
    }
  }

  async stop(): Promise<void> {
    for (const response of this.held.splice(0)) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
