import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Either, Fiber, TestClock } from "effect"
import { type ChatResponse, ProviderError } from "../../src/providers/LlmProvider.js"
import * as RateGate from "../../src/providers/RateGate.js"
import type { RateLimitInfo } from "../../src/providers/RateLimitHeaders.js"

const reply = (rateLimit?: RateLimitInfo): ChatResponse => ({ text: "{}", usage: { inputTokens: 0, outputTokens: 0 }, rateLimit })
const limited = (retryAfterMs?: number) => new ProviderError({ kind: "rate_limited", status: 429, retryAfterMs, detail: "Rate limit reached for requests" })

/** Start times (TestClock millis) of every call let through the gate; each call answers `answer()`. */
const recorder = (answer: (n: number) => Effect.Effect<ChatResponse, ProviderError> = () => Effect.succeed(reply())) => {
  const starts: Array<number> = []
  const call = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.suspend(() => {
      starts.push(now)
      return answer(starts.length)
    }))
  return { starts, call }
}

const runAll = <A, E>(effects: ReadonlyArray<Effect.Effect<A, E>>) => Effect.fork(Effect.all(effects.map(Effect.either), { concurrency: "unbounded" }))

describe("RateGate: concurrency", () => {
  it.effect("caps calls in flight at `concurrency`", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 3 })
      let running = 0
      let most = 0
      const call = gate.run(
        1,
        Effect.sync(() => {
          running++
          most = Math.max(most, running)
        }).pipe(Effect.zipRight(Effect.sleep("1 second")), Effect.ensuring(Effect.sync(() => running--)), Effect.as(reply()))
      )
      const fiber = yield* runAll(Array.from({ length: 10 }, () => call))
      yield* TestClock.adjust("10 millis")
      const stats = yield* gate.stats
      expect([stats.inFlight, stats.waiting]).toEqual([3, 7])
      yield* TestClock.adjust("4 seconds")
      yield* Fiber.join(fiber)
      expect(most).toBe(3)
      expect((yield* gate.stats).inFlight).toBe(0)
    }))

  it.effect("AIMD: a 429 halves the limit once per episode; a window of successes adds one back", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 16 })
      // A wave of 8 calls that all meet the same empty bucket: one cut, not eight.
      const wave = yield* runAll(Array.from({ length: 8 }, () => gate.run(1, Effect.fail(limited(0)))))
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(wave)
      expect((yield* gate.stats).concurrency).toEqual({ current: 8, min: 8, max: 16 })
      // Without a success since the cut, another 429 says nothing new: no second cut.
      yield* Effect.either(gate.run(1, Effect.fail(limited(0))))
      expect((yield* gate.stats).concurrency.current).toBe(8)
      // 8 successes (a window as wide as the limit) add one.
      for (let i = 0; i < 8; i++) yield* gate.run(1, Effect.succeed(reply()))
      expect((yield* gate.stats).concurrency.current).toBe(9)
      // After a success, a new 429 cuts again.
      yield* Effect.either(gate.run(1, Effect.fail(limited(0))))
      expect((yield* gate.stats).concurrency).toEqual({ current: 4, min: 4, max: 16 })
    }))

  it.effect("--adaptive false pins the limit", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 16, adaptive: false })
      yield* Effect.either(gate.run(1, Effect.fail(limited(0))))
      const stats = yield* gate.stats
      expect(stats.concurrency).toEqual({ current: 16, min: 16, max: 16 })
      expect(stats.rpm).toBeUndefined()
      expect(stats.rateLimited).toBe(1)
    }))
})

describe("RateGate: pacing is a token bucket (GCRA)", () => {
  it.effect("rpm 600, burst 10: nine starts at once (one kept as slack), then one every 60 s / (600 × 0.95)", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 100, rpm: 600 })
      const { call, starts } = recorder()
      const fiber = yield* runAll(Array.from({ length: 30 }, () => gate.run(1, call)))
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(fiber)
      const interval = 60_000 / (600 * RateGate.PACE_MARGIN)
      expect(starts.slice(0, 9)).toEqual(Array(9).fill(0))
      for (let i = 9; i < 30; i++) expect(starts[i]).toBeCloseTo((i - 8) * interval, -1)
    }))

  it.effect("after a quiet spell the bucket is full again: a whole burst may start at once", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 100, rpm: 600 })
      const { call, starts } = recorder()
      yield* gate.run(1, call)
      yield* TestClock.adjust("5 seconds")
      const fiber = yield* runAll(Array.from({ length: 12 }, () => gate.run(1, call)))
      yield* TestClock.adjust("1 millis")
      expect(starts.filter((t) => t === 5_000).length).toBe(10)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
    }))

  it.effect("never more than burst + rate × t starts in any window, for any arrival pattern", () =>
    Effect.gen(function*() {
      const rpm = 120
      const burst = 3
      const gate = yield* RateGate.make({ concurrency: 4, rpm, burst })
      const { call, starts } = recorder()
      // Calls of varying length arriving in clumps.
      const calls = Array.from({ length: 40 }, (_, i) =>
        Effect.zipRight(Effect.sleep(`${(i % 7) * 900} millis`), gate.run(1, Effect.zipLeft(call, Effect.sleep(`${(i % 5) * 300} millis`)))))
      const fiber = yield* runAll(calls)
      yield* TestClock.adjust("5 minutes")
      yield* Fiber.join(fiber)
      expect(starts.length).toBe(40)
      const perMs = (rpm * RateGate.PACE_MARGIN) / 60_000
      for (const t of starts) {
        for (const window of [1, 1000, 5000, 30_000]) {
          const inWindow = starts.filter((s) => s >= t && s < t + window).length
          expect(inWindow).toBeLessThanOrEqual(Math.floor(burst + window * perMs) + 1)
        }
      }
    }))

  it.effect("tpm: estimated tokens are the cost; a call larger than the bucket waits for a full one", () =>
    Effect.gen(function*() {
      // 6,000 tpm: 100 tokens a second, a bucket of 100 (one second's worth); paced at 95%.
      const gate = yield* RateGate.make({ concurrency: 10, tpm: 6_000 })
      const { call, starts } = recorder()
      const fiber = yield* runAll([gate.run(40, call), gate.run(40, call), gate.run(40, call), gate.run(500, call)])
      yield* TestClock.adjust("1 millis")
      expect(starts).toEqual([0, 0])
      yield* TestClock.adjust("30 seconds")
      yield* Fiber.join(fiber)
      const perMs = (6_000 * RateGate.PACE_MARGIN) / 60_000
      // The third waits for 20 tokens more (the bucket had 100, two calls took 80); the fourth, larger
      // than the bucket, waits for it to be full again: the 120 tokens taken are back.
      expect(starts[2]).toBeCloseTo(20 / perMs, 0)
      expect(starts[3]).toBeCloseTo(120 / perMs, 0)
    }))

  it.effect("a 429'd attempt gives its start back", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 10, rpm: 60, burst: 1, adaptive: false })
      const { call, starts } = recorder((n) => n === 1 ? Effect.fail(limited(0)) : Effect.succeed(reply()))
      const first = yield* Effect.either(gate.run(1, call))
      expect(Either.isLeft(first)).toBe(true)
      // Its token came back: the next call starts at once, not a second later.
      yield* gate.run(1, call)
      expect(starts).toEqual([0, 0])
    }))
})

describe("RateGate: the shared pause", () => {
  it.effect("after a 429 nobody starts before Retry-After; then the waiting calls restart spread out, not in one tick", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 20, adaptive: false })
      const { call, starts } = recorder((n) => n === 1 ? Effect.fail(limited(2_000)) : Effect.succeed(reply()))
      yield* Effect.either(gate.run(1, call))
      expect((yield* gate.stats).pausedUntil).toBe(2_000)
      const fiber = yield* runAll(Array.from({ length: 10 }, () => gate.run(1, call)))
      yield* TestClock.adjust("1999 millis")
      expect(starts.length).toBe(1)
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(fiber)
      const restarts = starts.slice(1)
      expect(restarts.length).toBe(10)
      for (const t of restarts) {
        expect(t).toBeGreaterThanOrEqual(2_000)
        // The jitter window is the pause's length, at most a second.
        expect(t).toBeLessThanOrEqual(3_000)
      }
      expect(new Set(restarts).size).toBeGreaterThan(5)
    }))

  it.effect("a 429 without Retry-After pauses 1 s, doubling while pauses follow each other", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 4, adaptive: false })
      yield* Effect.either(gate.run(1, Effect.fail(limited())))
      expect((yield* gate.stats).pausedUntil).toBe(1_000)
      yield* TestClock.adjust("3 seconds")
      yield* Effect.either(gate.run(1, Effect.fail(limited())))
      const now = yield* Clock.currentTimeMillis
      expect((yield* gate.stats).pausedUntil).toBe(now + 2_000)
    }))

  it.effect("Retry-After is capped (--max-wait), and a shorter pause never shortens the current one", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 4, adaptive: false, maxPauseMs: 60_000 })
      yield* Effect.either(gate.run(1, Effect.fail(limited(3_600_000))))
      expect((yield* gate.stats).pausedUntil).toBe(60_000)
      yield* gate.pause("1 second")
      expect((yield* gate.stats).pausedUntil).toBe(60_000)
    }))

  it.effect("a 429 arriving while a call waits for the pace holds it back too", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 4, rpm: 60, burst: 1, adaptive: false })
      const { call, starts } = recorder()
      yield* gate.run(1, call)
      const next = yield* Effect.fork(gate.run(1, call))
      yield* TestClock.adjust("500 millis")
      yield* gate.pause("5 seconds")
      yield* TestClock.adjust("3 seconds")
      expect(starts.length).toBe(1)
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(next)
      expect(starts[1]).toBeGreaterThanOrEqual(5_500)
    }))
})

describe("RateGate: learning the server's limit", () => {
  it.effect("a server that says no without being asked for a rate gets one: what it let through, less 10%", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 8 })
      expect((yield* gate.stats).rpm).toBeUndefined()
      // 10 successes in the first second, then a 429.
      for (let i = 0; i < 10; i++) {
        yield* gate.run(1, Effect.succeed(reply()))
        yield* TestClock.adjust("100 millis")
      }
      yield* Effect.either(gate.run(1, Effect.fail(limited(0))))
      // 10 successful starts over the (minimum) one-second window: 600/min, less 10%.
      expect((yield* gate.stats).rpm).toBeCloseTo(540, 0)
    }))

  it.effect("x-ratelimit headers: when the server's bucket is about to run dry, new starts wait for it to refill", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 8 })
      const { call, starts } = recorder(() =>
        Effect.succeed(reply({ requests: { limit: 10, remaining: 0, resetMs: 1_000 } })))
      // The reply says: nothing left, full again in 1 s (10 requests), so one is back after 100 ms.
      yield* gate.run(1, call)
      expect((yield* gate.stats).pausedUntil).toBe(100)
      const next = yield* Effect.fork(gate.run(1, call))
      yield* TestClock.adjust("99 millis")
      expect(starts.length).toBe(1)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(next)
      expect(starts[1]).toBeGreaterThanOrEqual(100)
      expect((yield* gate.stats).rateLimited).toBe(0)
    }))

  it.effect("headers count the calls the server had not seen yet", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 8 })
      const slow = Effect.zipRight(Effect.sleep("1 second"), Effect.succeed(reply()))
      // Three calls in flight, started after the one that answers with 2 remaining.
      const first = yield* Effect.fork(gate.run(1, Effect.zipRight(Effect.sleep("10 millis"), Effect.succeed(reply({ requests: { limit: 10, remaining: 2, resetMs: 800 } })))))
      yield* TestClock.adjust("1 millis")
      const others = yield* runAll([gate.run(1, slow), gate.run(1, slow), gate.run(1, slow)])
      yield* TestClock.adjust("20 millis")
      yield* Fiber.join(first)
      // 2 remaining − 3 unseen = 1 short, plus the next call: 2 × (800 ms / 8) = 200 ms.
      const stats = yield* gate.stats
      expect(stats.pausedUntil).toBe(10 + 200)
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(others)
    }))
})

describe("RateGate: stopping", () => {
  it.effect("when the run stops, calls still waiting end at once with GateStopped; calls in flight finish", () =>
    Effect.gen(function*() {
      const stop = yield* Deferred.make<void>()
      const gate = yield* RateGate.make({ concurrency: 2, stop: Deferred.await(stop) })
      const long = gate.run(1, Effect.zipRight(Effect.sleep("10 seconds"), Effect.succeed(reply())))
      const fiber = yield* runAll(Array.from({ length: 5 }, () => long))
      yield* TestClock.adjust("1 millis")
      // And one waiting out a pause.
      yield* gate.pause("1 hour")
      const paused = yield* Effect.fork(Effect.either(gate.run(1, Effect.succeed(reply()))))
      yield* TestClock.adjust("1 second")
      yield* Deferred.succeed(stop, undefined)
      yield* TestClock.adjust("1 millis")
      const pausedResult = yield* Fiber.join(paused)
      expect(Either.isLeft(pausedResult) && pausedResult.left._tag).toBe("GateStopped")
      yield* TestClock.adjust("10 seconds")
      const results = yield* Fiber.join(fiber)
      expect(results.filter(Either.isRight).length).toBe(2)
      expect(results.filter((r) => Either.isLeft(r) && r.left._tag === "GateStopped").length).toBe(3)
      // And nothing starts afterwards.
      const after = yield* Effect.either(gate.run(1, Effect.succeed(reply())))
      expect(Either.isLeft(after)).toBe(true)
    }))

  it.effect("halt (a fatal error) does the same", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 1 })
      const fiber = yield* runAll(Array.from({ length: 3 }, () => gate.run(1, Effect.zipRight(Effect.sleep("1 second"), Effect.succeed(reply())))))
      yield* TestClock.adjust("1 millis")
      yield* gate.halt
      yield* TestClock.adjust("2 seconds")
      const results = yield* Fiber.join(fiber)
      expect(results.map((r) => Either.isRight(r) ? "ok" : r.left._tag)).toEqual(["ok", "GateStopped", "GateStopped"])
    }))
})
