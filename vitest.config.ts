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
    setupFiles: ["test/support/Setup.ts"],
    // A fresh process and module graph per test file (vitest's default). Keeping the processes for
    // the whole run saves ~0.7 CPU-s per file (effect and @effect/* loaded once per process: 22 unit
    // files 20.8 → 9.5 CPU-s, 8.8 sharing the sources too), but in three runs of the suite beside
    // other load it made a file's TestClock tests share one clock (test/target/Retry.test.ts at 5 h,
    // ReadBody.test.ts at 500 ms, RetrySchedule.test.ts at 15 h) — with the sources' modules fresh per
    // file too, so the state that leaks is in a package's module, not found yet. A flake blocks every
    // submission: isolation stays. test/support/Setup.ts checks what a file leaves behind.
    isolate: true,
    // One worker more than the cores: most end-to-end files spend their time waiting on child
    // processes, servers and rate limits, so a third file on 2 cores fills the idle CPU (vitest's
    // default, cores − 1, ran them one after another). On the 2-core machine from a fresh clone:
    // 1 worker 11 min 53 s, 2 workers 7 min 46 s, 3 workers 6 min 15 s, 4 workers 6 min 45 s (and the
    // cluster test past its old 120 s bound).
    maxWorkers: os.availableParallelism() + 1,
    minWorkers: 1
  }
})
