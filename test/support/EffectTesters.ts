/**
 * `@effect/vitest`'s testers on vitest's shared `it`, put back as the package defines them.
 *
 * `@effect/vitest` (0.30) adds `effect`, `scoped`, `live`… to vitest's own `it` object, and its
 * `layer(L)((it) => …)` gives the block that same object after assigning its own testers to it:
 * from then on `it.effect` runs every test on the block's one runtime — one `TestClock`, built once
 * and kept — not only inside the block but for every test registered later in that process. With a
 * process per test file that reaches only the rest of the file that called `layer()`; with worker
 * processes kept for the whole run (vitest.config.ts) it reached the files run after it in the same
 * worker, which then saw their tests share one clock (test/target/Retry.test.ts at 5 h,
 * ReadBody.test.ts at 500 ms, RetrySchedule.test.ts at 15 h: the clock the earlier tests had moved).
 * `test/support/Setup.ts` calls this before and after every file.
 * (Effect 4's `@effect/vitest` wraps the API in proxies instead: Effect-TS/effect-smol#2177.)
 */
import * as EffectVitest from "@effect/vitest"

const testers = {
  effect: EffectVitest.effect,
  scoped: EffectVitest.scoped,
  live: EffectVitest.live,
  scopedLive: EffectVitest.scopedLive,
  layer: EffectVitest.layer,
  flakyTest: EffectVitest.flakyTest,
  prop: EffectVitest.prop
}

/** Whether a `layer()` block (or anything else) left its own testers on the shared `it`. */
export const testersReplaced = (): boolean =>
  (Object.keys(testers) as Array<keyof typeof testers>).some((k) => EffectVitest.it[k] !== testers[k])

/** Puts the package's own testers back on the shared `it`. */
export const restoreTesters = (): void => {
  Object.assign(EffectVitest.it, testers)
}
