// The extension's protocol types, generated from the daemon's JSON Schema (contextd.results):
//   python -m contextd.results | node scripts/generate-protocol.mjs > src/protocol.generated.ts
// tests/editors/test_protocol_types.py runs the same and fails on any difference.
import { compile } from "json-schema-to-typescript";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const schema = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const banner = [
  "/**",
  " * Generated from contextd.results by scripts/generate-protocol.mjs: do not edit.",
  " * Regenerate: python -m contextd.results | node scripts/generate-protocol.mjs > src/protocol.generated.ts",
  " */",
].join("\n");

const types = await compile(schema, "Protocol", {
  bannerComment: banner,
  unreachableDefinitions: true,
  additionalProperties: false,
  unknownAny: true,
  style: { printWidth: 100 },
});
// The generator notes under each type which definition it came from (every type here is
// one): those two lines go, and a comment left empty or ending in an empty line with them.
const provenance = /( \*\n)? \* This interface was referenced by `Protocol`'s JSON-Schema\n \* via the `definition` "\w+"\.\n/g;
process.stdout.write(types.replace(provenance, "").replace(/\/\*\*\n \*\/\n/g, ""));
