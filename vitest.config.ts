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
    // Hang guards, not measures: a test asserts outcomes, and on a busy machine the end-to-end tests
    // (child processes, servers, PostgreSQL) take two to three times their idle duration — the
    // cluster test 41 s idle, 83–95 s beside four CPU burners, past a 120 s bound with four workers.
    // A bound a slow machine can reach is a flake; one a hung test reaches costs two minutes.
    testTimeout: 120_000,
    hookTimeout: 120_000,
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
