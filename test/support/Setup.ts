/**
 * Run before every test file (vitest's `setupFiles`). Test files run one after another in worker
 * processes that live for the whole run (vitest.config.ts; each file gets fresh modules), so what a
 * file must not leave to the next in its process is undone here, after each file — not by hooks of
 * a test-support module, which belong to the file that imported it:
 *
 * - child processes the file started (`ChildCli.ts`, `Serve.ts`) and left running are killed;
 * - the working directory is the repository root again (`runCli` restores it; a test may not);
 * - the live clock is Effect's default: a `TestClock` leaking out of a test into the default
 *   services would move the time every later file sees — the file that leaked it fails here, by name;
 * - `@effect/vitest`'s testers on vitest's shared `it` are the package's own, before the file is
 *   collected and after it: a `layer()` block leaves its own there, which ran the tests of the next
 *   files in the process on that block's one runtime and one `TestClock` (`EffectTesters.ts`);
 * - no in-process command (`runCli`) is still running: the file that left one fails here, by name.
 *
 * The files of a worker share its modules (vitest.config.ts): this file runs afresh for each, and the
 * state of the modules it imports is what the checks above look at.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { afterAll } from "vitest"
import { inProcessLeft, killChildren } from "./Children.js"
import { restoreTesters } from "./EffectTesters.js"

const home = process.cwd()
restoreTesters()

afterAll(() => {
  killChildren()
  const running = inProcessLeft()
  restoreTesters()
  if (process.cwd() !== home) process.chdir(home)
  const skew = Math.abs(Effect.runSync(Clock.currentTimeMillis) - Date.now())
  if (skew > 60_000) {
    throw new Error(
      `Effect's default Clock is ${skew} ms off the system clock after this file: a TestClock leaked out of a test`
    )
  }
  if (running > 0) {
    throw new Error(`${running} in-process command(s) (runCli) still running after this file: a test did not await one`)
  }
})
