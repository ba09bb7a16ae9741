// pi's own compaction preparation, timed in node for bench_prepare.py: prepareCompaction on
// the session's current path, then the serialization its summary requests send
// (serializeConversation of convertToLlm, for the history and a split turn's prefix), which
// is what contextd's preparation builds too.
//
//   node pi_prepare.mjs <pi package dir> <keepRecentTokens> <session.jsonl>...
//
// Prints one JSON line describing each session's preparation, then answers each stdin line
// "<session index> <runs>" with a JSON line of that many timings (milliseconds of CPU time,
// node's compiler and collector threads included), so the caller can interleave its own
// rounds with pi's.
import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, keepRecentTokens, ...files] = process.argv.slice(2);
const dist = join(packageDir, "dist", "core");
const load = (module) => import(pathToFileURL(join(dist, module)).href);
const { prepareCompaction, DEFAULT_COMPACTION_SETTINGS } = await load("compaction/compaction.js");
const { serializeConversation } = await load("compaction/utils.js");
const { convertToLlm } = await load("messages.js");
const { SessionManager } = await load("session-manager.js");

const settings = { ...DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: Number(keepRecentTokens) };
const paths = files.map((file) => SessionManager.open(file).getBranch());

function prepare(path) {
  const preparation = prepareCompaction(path, settings);
  if (!preparation) return { preparation, prompts: [] };
  const prompts = [preparation.messagesToSummarize, preparation.turnPrefixMessages]
    .filter((messages) => messages.length > 0)
    .map((messages) => serializeConversation(convertToLlm(messages)));
  return { preparation, prompts };
}

for (const path of paths) {
  const { preparation, prompts } = prepare(path);
  console.log(JSON.stringify({
    entries: path.length,
    summarized: preparation ? preparation.messagesToSummarize.length + preparation.turnPrefixMessages.length : 0,
    splitTurn: preparation ? preparation.isSplitTurn : false,
    serializedChars: prompts.reduce((sum, text) => sum + text.length, 0),
    tokensBefore: preparation ? preparation.tokensBefore : null,
  }));
}

for await (const line of createInterface({ input: process.stdin })) {
  const [index, runs] = line.split(" ").map(Number);
  const times = [];
  for (let run = 0; run < runs; run++) {
    const start = process.cpuUsage();
    prepare(paths[index]);
    const used = process.cpuUsage(start);
    times.push((used.user + used.system) / 1000);
  }
  console.log(JSON.stringify(times));
}
