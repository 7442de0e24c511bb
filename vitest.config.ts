import * as os from "node:os"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // Pipeline files import the library by its package name; in tests that is the TypeScript source.
    alias: { "rag-eval": fileURLToPath(new URL("./src/index.ts", import.meta.url)) }
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Test files share each worker's module cache (no fresh import of effect and the sources per
    // file): on this 2-core machine that cut the suite's collect time from ~170 s to ~37 s. No test
    // file mocks modules or leaves global state behind (console spies are restored), which is what
    // isolation would protect against.
    isolate: false,
    // vitest's default is one worker fewer than the cores — one worker on 2 cores, which ran the
    // suite's files one after another while most of them wait on child processes and sockets.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    minWorkers: 1
  }
})
