import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, TestClock } from "effect"
import { type RetryOptions, withRetries } from "../../src/target/Retry.js"
import { TargetError, type TargetErrorKind } from "../../src/target/TargetError.js"

const error = (kind: TargetErrorKind, retryAfterMs?: number) =>
  new TargetError({ kind, target: "http://127.0.0.1:8000/ask", detail: kind, retryAfterMs })

/**
 * Runs a call that fails with `errors` in turn (then succeeds), with retries, on the TestClock moved
 * by `horizonMs`; gives the Clock time of every attempt and the outcome.
 */
const run = (errors: ReadonlyArray<TargetError>, options: RetryOptions, horizonMs = 3_600_000) =>
  Effect.gen(function*() {
    const queue = [...errors]
    const times: Array<number> = []
    const call = Effect.gen(function*() {
      times.push(yield* Clock.currentTimeMillis)
      const next = queue.shift()
      if (next !== undefined) return yield* Effect.fail(next)
      return "answered"
    })
    const fiber = yield* Effect.fork(Effect.exit(withRetries(call, options)))
    yield* TestClock.adjust(horizonMs)
    const exit = yield* Fiber.join(fiber)
    return { times, exit }
  })

const gaps = (times: ReadonlyArray<number>) => times.slice(1).map((t, i) => t - times[i]!)

describe("the target's retry schedule (TestClock)", () => {
  it.effect("server errors, timeouts, network errors: exponential backoff 500 · 2ⁿ ± 20 %", () =>
    Effect.gen(function*() {
      const { times, exit } = yield* run([error("server"), error("timeout"), error("network")], {})
      expect(Exit.isSuccess(exit) && exit.value).toBe("answered")
      expect(times[0]).toBe(0)
      const [a, b, c] = gaps(times)
      expect(a).toBeGreaterThanOrEqual(400)
      expect(a).toBeLessThanOrEqual(600)
      expect(b).toBeGreaterThanOrEqual(800)
      expect(b).toBeLessThanOrEqual(1200)
      expect(c).toBeGreaterThanOrEqual(1600)
      expect(c).toBeLessThanOrEqual(2400)
    }))

  it.effect("bounded: after maxRetries the last error stands", () =>
    Effect.gen(function*() {
      const { times, exit } = yield* run(Array.from({ length: 10 }, () => error("server")), { maxRetries: 2 })
      expect(times).toHaveLength(3)
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") expect(exit.cause.error.kind).toBe("server")
    }))

  it.effect("the cap: no wait longer than maxDelayMs", () =>
    Effect.gen(function*() {
      const { times } = yield* run(Array.from({ length: 8 }, () => error("server")), {
        maxRetries: 8,
        baseDelayMs: 1_000,
        maxDelayMs: 5_000
      })
      expect(times).toHaveLength(9)
      expect(Math.max(...gaps(times))).toBeLessThanOrEqual(5_000)
      expect(gaps(times).slice(-3)).toEqual([5_000, 5_000, 5_000])
    }))

  it.effect("a 429 waits its Retry-After (up to 20 % more, never less) and does not count against maxRetries", () =>
    Effect.gen(function*() {
      const { times, exit } = yield* run([
        error("rate_limited", 3_000),
        error("rate_limited", 3_000),
        error("rate_limited", 3_000)
      ], { maxRetries: 0 })
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(times).toHaveLength(4)
      for (const gap of gaps(times)) {
        expect(gap).toBeGreaterThanOrEqual(3_000)
        expect(gap).toBeLessThanOrEqual(3_600)
      }
    }))

  it.effect("a 429 without Retry-After backs off like a server error", () =>
    Effect.gen(function*() {
      const { times } = yield* run([error("rate_limited"), error("rate_limited")], {})
      const [a, b] = gaps(times)
      expect(a).toBeGreaterThanOrEqual(400)
      expect(a).toBeLessThanOrEqual(600)
      expect(b).toBeGreaterThanOrEqual(800)
      expect(b).toBeLessThanOrEqual(1200)
    }))

  it.effect("429s are waited out for maxWaitMs from the first, the last attempt made when it runs out", () =>
    Effect.gen(function*() {
      const { times, exit } = yield* run(Array.from({ length: 20 }, () => error("rate_limited", 60_000)), {
        maxWaitMs: 150_000
      })
      expect(times).toHaveLength(4)
      expect(times[3]).toBe(150_000)
      expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.kind).toBe("rate_limited")
    }))

  it.effect("behind a rate gate (gatePauses) a 429 is asked again at once", () =>
    Effect.gen(function*() {
      const { times, exit } = yield* run([error("rate_limited", 60_000), error("rate_limited", 60_000)], {
        gatePauses: true
      })
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(times).toEqual([0, 0, 0])
    }))

  it.effect("fatal and per-case failures: one attempt", () =>
    Effect.gen(function*() {
      for (
        const kind of ["unauthorized", "not_found", "moved", "unreachable", "rejected", "malformed", "shape"] as const
      ) {
        const { times, exit } = yield* run([error(kind)], {})
        expect(times).toHaveLength(1)
        expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.kind).toBe(kind)
      }
    }))
})
