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
    // Each test file gets fresh modules (vitest's default). Sharing them (isolate: false) cut the
    // collect time from ~170 s to ~37 s on this 2-core machine, but one run beside two CPU burners
    // then saw a file's TestClock tests share one clock (test/target/Retry.test.ts started at 5 h):
    // a flake that blocks every submission is worse than a slower suite.
    isolate: true,
    // vitest's default is one worker fewer than the cores — one worker on 2 cores, which ran the
    // suite's files one after another while most of them wait on child processes and sockets.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    minWorkers: 1
  }
})
