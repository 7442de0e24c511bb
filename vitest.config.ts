import * as os from "node:os"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/**
 * The files that take longest start first. vitest orders files by their last run's durations, kept in
 * node_modules/.vite; a fresh clone has none, and vitest then starts the largest files first — which
 * started e2e/Cluster.test.ts (a small file, 40–120 s) after two minutes, and the run ended with it
 * (2026-11-29, fresh caches: started at 124 s, ended at 245 s, the run's last file). e2e/Package.test.ts
 * (npm packs and installs the package: 50–80 s) was the last file to end in every fresh clone of
 * 2026-11-30 but one — the other workers idle beside it once the small files were done. With a last
 * run's durations this changes little: these are its longest files then too.
 */
const startFirst = [
  "test/e2e/Cluster.test.ts",
  "test/e2e/Package.test.ts",
  "test/docs/Examples.test.ts",
  "test/e2e/RateLimits.test.ts",
  "test/e2e/HtmlBrowser.test.ts",
  "test/ui/Browser.test.ts",
  "test/cluster/Protocol.test.ts"
]
class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>) {
    const rank = (f: TestSpecification) => {
      const i = startFirst.findIndex((p) => f.moduleId.endsWith(p))
      return i === -1 ? startFirst.length : i
    }
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}

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
    // expect.poll's default bound is 1 s of real time: a busy machine reached it (test/ui/Browser.test.ts
    // saw 4 of 5 labels after 1 s with four workers beside other load). Polls wait for an outcome; the
    // bound only ends a stuck test, like Playwright's own 30 s for `waitFor`.
    expect: { poll: { timeout: 30_000 } },
    pool: "forks",
    setupFiles: ["test/support/Setup.ts"],
    // The run's temp files in one directory of its own, removed at the end (test/support/TempRoot.ts).
    globalSetup: ["test/support/TempRoot.ts"],
    // Worker processes live for the whole run (`isolate: false`: processes are kept, not started per
    // file — ~0.7 CPU-s of start-up each, ~115 of the suite's CPU-seconds), and the test files a worker
    // runs share its modules: vite's module cache — the sources and test/support — is kept from file to
    // file (each test file and test/support/Setup.ts still run afresh). Fresh sources per file cost
    // ~0.4 CPU-s of imports where a file imports the CLI: 31–68 CPU-s a suite run (three alternated
    // pairs, 2026-11-30). What a file leaves that the next could see is undone or checked by
    // test/support/Setup.ts before and after every file: the children it started, the cwd, a
    // TestClock in Effect's default services, @effect/vitest's testers on vitest's shared `it` (a
    // `layer()` leaves its block's runtime and TestClock there: the clock that kept processes once
    // shared between files, test/support/EffectTesters.ts), a `runCli` still running. The sources'
    // own module state is caches keyed by what they hold (a judgment may not depend on the ones
    // before it: a `serve` process judges request after request on the same modules); the one
    // collection a process makes before a large input is tested on a collector of its own
    // (test/engine/Memory.test.ts). The project below inherits the setting (`extends: true`).
    poolOptions: { forks: { isolate: false } },
    projects: [{ extends: true, test: { name: "suite", include: ["test/**/*.test.ts"] } }],
    // One worker more than the cores: most end-to-end files spend their time waiting on child
    // processes, servers and rate limits, so a third file on 2 cores fills the idle CPU (vitest's
    // default, cores − 1, ran them one after another). On the 2-core machine from a fresh clone:
    // 1 worker 11 min 53 s, 2 workers 7 min 46 s, 3 workers 6 min 15 s, 4 workers 6 min 45 s (and the
    // cluster test past its old 120 s bound).
    maxWorkers: os.availableParallelism() + 1,
    // As many kept as at most run: with fewer, tinypool stops an idle worker of a shared pool while it
    // is handed a file, and vitest 3.2 reports "Terminating worker thread" and loses that file's
    // results (seen on this machine: 3 workers and minWorkers 1 failed every run, 2 or 3 passed).
    minWorkers: os.availableParallelism() + 1,
    sequence: { sequencer: LongestFirst }
  }
})
