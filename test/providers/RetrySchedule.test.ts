import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Either, Exit, Fiber, Schedule, TestClock } from "effect"
import * as RetrySchedule from "../../src/providers/RetrySchedule.js"

describe("retryAfterFailure", () => {
  /** An effect failing `failures` times (with the attempt number), then succeeding; attempts are timed. */
  const flaky = (failures: number) => {
    const at: Array<number> = []
    const effect = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      at.push(now)
      return at.length <= failures ? Effect.fail(at.length) : Effect.succeed("done")
    })
    return { effect, at }
  }
  const schedule = Schedule.exponential("100 millis").pipe(Schedule.intersect(Schedule.recurs(3)))

  for (const failures of [0, 1, 3, 4]) {
    it.effect(`behaves as Effect.retry with ${failures} failure(s): same attempts, same delays, same outcome`, () =>
      Effect.gen(function*() {
        const ours = flaky(failures)
        const theirs = flaky(failures)
        const a = yield* Effect.fork(Effect.either(RetrySchedule.retryAfterFailure(ours.effect, schedule)))
        const b = yield* Effect.fork(Effect.either(Effect.retry(theirs.effect, schedule)))
        yield* TestClock.adjust(10_000)
        const [ra, rb] = [yield* Fiber.join(a), yield* Fiber.join(b)]
        expect(ra).toEqual(rb)
        expect(ours.at).toEqual(theirs.at)
        expect(ours.at).toHaveLength(Math.min(failures, 4) + (failures <= 3 ? 1 : 0))
      }))
  }

  it.effect("the schedule's first input is the first failure", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const recordInputs = Schedule.recurs(5).pipe(
        Schedule.tapInput((e: number) => Effect.sync(() => void seen.push(e)))
      )
      const { effect } = flaky(2)
      expect(yield* RetrySchedule.retryAfterFailure(effect, recordInputs)).toBe("done")
      expect(seen).toEqual([1, 2])
    }))
})

describe("the retry schedule's output: why it gave up (TestClock)", () => {
  type Failure = { readonly how: RetrySchedule.RetryClass }
  const policy: RetrySchedule.RetryPolicy = { ...RetrySchedule.defaultPolicy, maxRetries: 2, maxWaitMs: 60_000 }
  /** A call failing with `failures` in turn (then the last one forever), retried; the Clock time of each attempt and the outcome. */
  const run = (failures: ReadonlyArray<Failure>, p: RetrySchedule.RetryPolicy = policy) =>
    Effect.gen(function*() {
      const at: Array<number> = []
      const call = Effect.flatMap(Clock.currentTimeMillis, (now) => {
        at.push(now)
        return Effect.fail(failures[Math.min(at.length, failures.length) - 1]!)
      })
      const fiber = yield* Effect.fork(Effect.exit(RetrySchedule.retryAfterFailure(
        call,
        RetrySchedule.retrySchedule(p, (f: Failure) => f.how),
        { giveUp: (f, why) => ({ ...f, why }) }
      )))
      yield* TestClock.adjust(3_600_000)
      const exit = yield* Fiber.join(fiber)
      return { at, error: Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined }
    })

  it.effect("transient failures: `after N attempts`, maxRetries + 1 attempts", () =>
    Effect.gen(function*() {
      const { at, error } = yield* run([{ how: RetrySchedule.backoff }])
      expect(at).toHaveLength(3)
      expect(error).toMatchObject({ why: "after 3 attempts" })
    }))

  it.effect("429s past the wait budget: `still rate-limited after waiting … (--max-wait 1 min)`, never past it", () =>
    Effect.gen(function*() {
      const { at, error } = yield* run([{ how: RetrySchedule.wait(20_000) }])
      expect(error).toMatchObject({ why: "still rate-limited after waiting 1 min (--max-wait 1 min)" })
      // The last attempt is made when the budget runs out, not later.
      expect(at.at(-1)).toBe(60_000)
    }))

  it.effect("429s do not count against maxRetries; a final failure gives no reason of the schedule's", () =>
    Effect.gen(function*() {
      const { at, error } = yield* run([
        { how: RetrySchedule.wait(1_000) },
        { how: RetrySchedule.wait(1_000) },
        { how: RetrySchedule.wait(1_000) },
        { how: RetrySchedule.backoff },
        { how: RetrySchedule.final }
      ])
      expect(at).toHaveLength(5)
      expect(error).toMatchObject({ how: RetrySchedule.final, why: undefined })
    }))

  it.effect("behind a gate that pauses everyone, a 429 is asked again at once", () =>
    Effect.gen(function*() {
      const { at } = yield* run(
        [{ how: RetrySchedule.wait(5_000) }, { how: RetrySchedule.wait(5_000) }, { how: RetrySchedule.final }],
        { ...policy, gatePauses: true }
      )
      expect(at).toEqual([0, 0, 0])
    }))

  it.effect("a wait budget shared with the gate: the earlier first 429 counts, and is written back", () =>
    Effect.gen(function*() {
      const budget = { maxWaitMs: 60_000, since: undefined as number | undefined }
      yield* TestClock.adjust(30_000)
      budget.since = 0
      const fiber = yield* Effect.fork(Effect.either(RetrySchedule.retryAfterFailure(
        Effect.fail({ how: RetrySchedule.wait(10_000) }),
        RetrySchedule.retrySchedule({ ...policy, gatePauses: false }, (f: Failure) => f.how, budget),
        { giveUp: (_f, why) => why }
      )))
      yield* TestClock.adjust(3_600_000)
      const result = yield* Fiber.join(fiber)
      expect(result).toEqual(Either.left("still rate-limited after waiting 1 min (--max-wait 1 min)"))
      expect(budget.since).toBe(0)
    }))
})
