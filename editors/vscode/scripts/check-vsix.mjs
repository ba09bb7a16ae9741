// Proves a .vsix runs on its own: it holds the manifest and the bundle, and the bundle
// loads with nothing but the `vscode` module around it (no node_modules next to it).
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire, Module } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { inflateRawSync } from "node:zlib";

/** The files of a zip archive (stored or deflated entries, as vsce writes them). */
function unzip(buffer) {
  const end = buffer.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error("not a zip archive");
  const count = buffer.readUInt16LE(end + 10);
  let offset = buffer.readUInt32LE(end + 16);
  const files = new Map();
  for (let i = 0; i < count; i++) {
    const method = buffer.readUInt16LE(offset + 10);
    const size = buffer.readUInt32LE(offset + 20);
    const nameLength = buffer.readUInt16LE(offset + 28);
    const extraLength = buffer.readUInt16LE(offset + 30);
    const commentLength = buffer.readUInt16LE(offset + 32);
    const local = buffer.readUInt32LE(offset + 42);
    const name = buffer.toString("utf8", offset + 46, offset + 46 + nameLength);
    const dataStart = local + 30 + buffer.readUInt16LE(local + 26) + buffer.readUInt16LE(local + 28);
    const data = buffer.subarray(dataStart, dataStart + size);
    files.set(name, method === 8 ? inflateRawSync(data) : Buffer.from(data));
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return files;
}

const vsix = process.argv[2];
const files = unzip(readFileSync(vsix));
const manifest = JSON.parse(files.get("extension/package.json").toString());
const main = join("extension", manifest.main);
if (!files.has(main.replaceAll("\\", "/"))) throw new Error(`${vsix} lacks its main file ${manifest.main}`);

const root = mkdtempSync(join(tmpdir(), "contextd-vsix-"));
try {
  for (const [name, data] of files) {
    if (name.endsWith("/")) continue;
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), data);
  }
  // Any property of the stand-in `vscode` is a constructible function, enough for loading.
  // The prototype trap serves bundlers' ESM interop, which reads names through a copy's prototype.
  const members = new Proxy({}, { get: () => stub });
  const stub = new Proxy(function vscode() {}, {
    get: (target, key) => (key in target ? target[key] : stub),
    getPrototypeOf: () => members,
  });
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    return request === "vscode" ? "vscode" : resolve.call(this, request, ...rest);
  };
  Module._cache.vscode = { id: "vscode", filename: "vscode", loaded: true, exports: stub };
  const extension = createRequire(join(root, "extension", "package.json"))(join(root, main));
  for (const name of ["activate", "deactivate"]) {
    if (typeof extension[name] !== "function") throw new Error(`${main} does not export ${name}`);
  }
  console.log(`${vsix}: ${files.size} files; ${manifest.main} loads on its own and exports activate/deactivate`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
