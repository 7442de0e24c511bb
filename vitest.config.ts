import * as os from "node:os"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // Pipeline files import the library by its package name; in tests that is the TypeScript source.
    alias: { "rag-eval": fileURLToPath(new URL("./src/index.ts", import.meta.url)) }
  },
  test: {
    // Hang guards, not measures: a test asserts outcomes, and on a busy machine the end-to-end tests
    // (child processes, servers, PostgreSQL) take two to three times their idle duration — the
    // cluster test 41 s idle, 83–95 s beside four CPU burners, past a 120 s bound with four workers.
    // A bound a slow machine can reach is a flake; one a hung test reaches costs two minutes.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    setupFiles: ["test/support/Setup.ts"],
    poolOptions: {
      forks: {
        // The worker processes live for the whole run (not one per file): each file's isolation is
        // its project's (below), by resetting the module cache in the same process or not.
        isolate: false
      }
    },
    projects: [
      {
        extends: true,
        // Unit files share each worker's modules: a fresh module graph per file — effect, @effect/*,
        // the sources — cost ~0.7 CPU-s per file (128 files on the 2-core machine: 241 CPU-s in a
        // process each, 102 shared). What a file must not leave to the next (child processes, the cwd,
        // a TestClock in Effect's default services) is undone and checked after every file by
        // test/support/Setup.ts; a module of test/support registers no hooks of its own. (Isolation
        // was turned on once after a run beside CPU burners saw test/target/Retry.test.ts start at 5 h
        // on its TestClock; no leak was found since, and Setup.ts names a file that leaks one.)
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: ["test/e2e/**", "test/docs/**"],
          poolOptions: { forks: { isolate: false } }
        }
      },
      {
        extends: true,
        // End-to-end and docs files get fresh modules per file (the test supports' state, the
        // sources) in the shared worker process: their time is their runs', not their imports'.
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts", "test/docs/**/*.test.ts"],
          poolOptions: { forks: { isolate: true } }
        }
      }
    ],
    // One worker more than the cores: most end-to-end files spend their time waiting on child
    // processes, servers and rate limits, so a third file on 2 cores fills the idle CPU (vitest's
    // default, cores − 1, ran them one after another). On the 2-core machine from a fresh clone:
    // 1 worker 11 min 53 s, 2 workers 7 min 46 s, 3 workers 6 min 15 s, 4 workers 6 min 45 s (and the
    // cluster test past its old 120 s bound).
    maxWorkers: os.availableParallelism() + 1,
    // As many kept as at most run: with fewer, tinypool stops an idle worker of a shared pool while it
    // is handed a file, and vitest 3.2 reports "Terminating worker thread" and loses that file's
    // results (seen on this machine: 3 workers and minWorkers 1 failed every run, 2 or 3 passed).
    minWorkers: os.availableParallelism() + 1
  }
})
