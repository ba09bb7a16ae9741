import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // The real `vscode` module exists only inside VS Code; unit tests get a small stand-in.
    alias: { vscode: fileURLToPath(new URL("./test/support/fakeVscode.ts", import.meta.url)) },
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Daemon tests spawn Python processes; two cores are shared, so keep it to two files at a time.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
