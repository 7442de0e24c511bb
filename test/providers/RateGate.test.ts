import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Either, Fiber, TestClock } from "effect"
import { type ChatResponse, ProviderError } from "../../src/providers/LlmProvider.js"
import * as RateGate from "../../src/providers/RateGate.js"
import type { RateLimitInfo } from "../../src/providers/RateLimitHeaders.js"

const reply = (rateLimit?: RateLimitInfo): ChatResponse => ({
  text: "{}",
  usage: { inputTokens: 0, outputTokens: 0 },
  rateLimit
})
const limited = (retryAfterMs?: number) =>
  new ProviderError({ kind: "rate_limited", status: 429, retryAfterMs, detail: "Rate limit reached for requests" })

/** Start times (TestClock millis) of every call let through the gate; each call answers `answer()`. */
const recorder = (
  answer: (n: number) => Effect.Effect<ChatResponse, ProviderError> = () => Effect.succeed(reply())
) => {
  const starts: Array<number> = []
  const call = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.suspend(() => {
      starts.push(now)
      return answer(starts.length)
    }))
  return { starts, call }
}

const runAll = <A, E>(effects: ReadonlyArray<Effect.Effect<A, E>>) =>
  Effect.fork(Effect.all(effects.map(Effect.either), { concurrency: "unbounded" }))

describe("RateGate: concurrency", () => {
  it.scoped("caps calls in flight at `concurrency`", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 3 })
      let running = 0
      let most = 0
      const call = gate.run(
        1,
        Effect.sync(() => {
          running++
          most = Math.max(most, running)
        }).pipe(
          Effect.zipRight(Effect.sleep("1 second")),
          Effect.ensuring(Effect.sync(() => running--)),
          Effect.as(reply())
        )
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

  it.scoped("AIMD: a 429 halves the limit once per episode; a window of successes adds one back", () =>
    Effect.gen(function*() {
      // (No rate learned: this is the concurrency alone, as a cluster runner's own gate runs it.)
      const gate = yield* RateGate.make({ concurrency: 16, learnRate: false })
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

  it.scoped("--adaptive false pins the limit", () =>
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
  it.scoped("rpm 600, burst 10: nine starts at once (one kept as slack), then one every 60 s / (600 × 0.95)", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 100, rpm: 600, burst: 10 })
      const { call, starts } = recorder()
      const fiber = yield* runAll(Array.from({ length: 30 }, () => gate.run(1, call)))
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(fiber)
      const interval = 60_000 / (600 * RateGate.PACE_MARGIN)
      expect(starts.slice(0, 9)).toEqual(Array(9).fill(0))
      for (let i = 9; i < 30; i++) expect(starts[i]).toBeCloseTo((i - 8) * interval, -1)
    }))

  it.scoped("without --burst, starts are spread evenly from the first one: one every 60 s / (600 × 0.95)", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 100, rpm: 600 })
      const { call, starts } = recorder()
      const fiber = yield* runAll(Array.from({ length: 12 }, () => gate.run(1, call)))
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(fiber)
      const interval = 60_000 / (600 * RateGate.PACE_MARGIN)
      for (let i = 0; i < 12; i++) expect(starts[i]).toBeCloseTo(i * interval, -1)
    }))

  it.scoped("after a quiet spell the bucket is full again: a whole burst may start at once", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 100, rpm: 600, burst: 10 })
      const { call, starts } = recorder()
      yield* gate.run(1, call)
      yield* TestClock.adjust("5 seconds")
      const fiber = yield* runAll(Array.from({ length: 12 }, () => gate.run(1, call)))
      yield* TestClock.adjust("1 millis")
      expect(starts.filter((t) => t === 5_000).length).toBe(10)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
    }))

  it.scoped("never more than burst + rate × t starts in any window, for any arrival pattern", () =>
    Effect.gen(function*() {
      const rpm = 120
      const burst = 3
      const gate = yield* RateGate.make({ concurrency: 4, rpm, burst })
      const { call, starts } = recorder()
      // Calls of varying length arriving in clumps.
      const calls = Array.from(
        { length: 40 },
        (_, i) =>
          Effect.zipRight(
            Effect.sleep(`${(i % 7) * 900} millis`),
            gate.run(1, Effect.zipLeft(call, Effect.sleep(`${(i % 5) * 300} millis`)))
          )
      )
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

  it.scoped("tpm: estimated tokens are the cost; a call larger than the bucket waits for a full one", () =>
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

  it.scoped("a 429 empties the bucket: after its pause one start goes at once, the rest at the pace (no burst, no slot handed back)", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 10, rpm: 60, burst: 5, adaptive: false })
      const { call, starts } = recorder((n) => n === 1 ? Effect.fail(limited(2_000)) : Effect.succeed(reply()))
      const first = yield* Effect.either(gate.run(1, call))
      expect(Either.isLeft(first)).toBe(true)
      const fiber = yield* runAll(Array.from({ length: 3 }, () => gate.run(1, call)))
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(fiber)
      const interval = 60_000 / (60 * RateGate.PACE_MARGIN)
      expect(starts.slice(1)).toEqual([2_000, 2_000 + interval, 2_000 + 2 * interval].map((t) => expect.closeTo(t, 0)))
    }))
})

describe("RateGate: the shared pause", () => {
  it.scoped("after a 429 nobody starts before Retry-After; then the waiting calls restart spread out, not in one tick", () =>
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

  it.scoped("a 429 without Retry-After pauses 1 s, doubling while pauses follow each other", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 4, adaptive: false })
      yield* Effect.either(gate.run(1, Effect.fail(limited())))
      expect((yield* gate.stats).pausedUntil).toBe(1_000)
      yield* TestClock.adjust("3 seconds")
      yield* Effect.either(gate.run(1, Effect.fail(limited())))
      const now = yield* Clock.currentTimeMillis
      expect((yield* gate.stats).pausedUntil).toBe(now + 2_000)
    }))

  it.scoped("Retry-After is capped (--max-wait), and a shorter pause never shortens the current one", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 4, adaptive: false, maxPauseMs: 60_000 })
      yield* Effect.either(gate.run(1, Effect.fail(limited(3_600_000))))
      expect((yield* gate.stats).pausedUntil).toBe(60_000)
      yield* gate.pause("1 second")
      expect((yield* gate.stats).pausedUntil).toBe(60_000)
    }))

  it.scoped("a 429 arriving while a call waits for the pace holds it back too", () =>
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

describe("RateGate: learning the server's limit (the policy itself: RatePolicy.test.ts)", () => {
  it.scoped("no limit, no pace: until a 429 nothing is paced; after the first (unpaced) one the pace is discovered from one a second", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 8 })
      for (let i = 0; i < 10; i++) yield* gate.run(1, Effect.succeed(reply()))
      expect((yield* gate.stats).rpm).toBeUndefined()
      yield* Effect.either(gate.run(1, Effect.fail(limited(0))))
      expect((yield* gate.stats).rpm).toBeCloseTo(60, 6)
    }))

  it.scoped("x-ratelimit headers set the pace before any 429: (capacity − remaining) ÷ reset, 3% under", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 8 })
      // A bucket of 10 with 9 left, full again in 100 ms: one request per 100 ms.
      yield* gate.run(1, Effect.succeed(reply({ requests: { limit: 10, remaining: 9, resetMs: 100 } })))
      expect((yield* gate.stats).rpm).toBeCloseTo(600 * 0.97, 6)
    }))

  it.scoped("a server announcing a per-minute limit larger than the bucket it refills: the capacity is never taken above the highest remaining seen plus one", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 8 })
      // Announces 600 a minute, refills 10 a second into a bucket of 10: read as 600 − 4 tokens
      // short it would claim ~1,000 a second; read by the bucket it has shown (≤ 10), 10 a second.
      yield* gate.run(1, Effect.succeed(reply({ requests: { limit: 600, remaining: 9, resetMs: 100 } })))
      yield* gate.run(1, Effect.succeed(reply({ requests: { limit: 600, remaining: 4, resetMs: 600 } })))
      expect((yield* gate.stats).rpm).toBeCloseTo(600 * 0.97, 6)
    }))

  it.scoped("headers: new starts wait for the level the server reported, less the calls it had not counted yet", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 8 })
      const { call, starts } = recorder()
      // A first reply: a bucket of 10 with 9 left, one back every 100 ms (paced 3% under).
      yield* gate.run(1, Effect.succeed(reply({ requests: { limit: 10, remaining: 9, resetMs: 100 } })))
      // A call at 0 that answers at 10 ms "2 left"; three more started at 1 ms, still in flight then.
      const first = yield* Effect.fork(
        gate.run(
          1,
          Effect.zipRight(
            Effect.sleep("10 millis"),
            Effect.succeed(reply({ requests: { limit: 10, remaining: 2, resetMs: 800 } }))
          )
        )
      )
      yield* TestClock.adjust("1 millis")
      const slow = Effect.zipLeft(call, Effect.sleep("1 second"))
      const others = yield* runAll([gate.run(1, slow), gate.run(1, slow), gate.run(1, slow)])
      yield* TestClock.adjust("9 millis")
      yield* Fiber.join(first)
      const next = yield* Effect.fork(gate.run(1, call))
      yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(next)
      yield* Fiber.join(others)
      // At 10 ms: 2 reported − 3 not counted + 10 ms of refill; the next start waits for one token.
      const interval = 60_000 / (600 * 0.97)
      const level = 2 - 3 + 10 / interval
      expect(starts.slice(0, 3)).toEqual([1, 1, 1])
      expect(starts[3]).toBeCloseTo(10 + (1 - level) * interval, 3)
      expect((yield* gate.stats).rateLimited).toBe(0)
    }))
})

describe("RateGate: --max-wait", () => {
  it.scoped("a call whose judgment met a 429 never waits past its budget: it ends with rate_limited when the pause outlasts it", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 4, adaptive: false, maxPauseMs: 3_600_000 })
      yield* Effect.either(gate.run(1, Effect.fail(limited(3_600_000))))
      const wait: RateGate.WaitBudget = { maxWaitMs: 20_000, since: undefined }
      const fiber = yield* Effect.fork(Effect.either(gate.run(1, Effect.succeed(reply()), wait)))
      yield* TestClock.adjust("19999 millis")
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 millis")
      const result = yield* Fiber.join(fiber)
      expect(Either.isLeft(result) && result.left._tag === "ProviderError" && result.left.kind).toBe("rate_limited")
      expect(wait.since).toBe(0)
    }))
})

describe("RateGate: --max-wait is a bound per judgment", () => {
  it.scoped("calls queued for a permit before the first 429 start their --max-wait at it: all end about --max-wait after it", () =>
    Effect.gen(function*() {
      // One slot. The call in it meets a 429 with Retry-After: 3600 at t = 1 s; four more were queued
      // behind it since t = 0. Each has its own 10 s budget (one judgment each).
      const gate = yield* RateGate.make({ concurrency: 1, adaptive: false, maxPauseMs: 3_600_000 })
      const budget = (): RateGate.WaitBudget => ({ maxWaitMs: 10_000, since: undefined })
      const first = yield* Effect.fork(
        Effect.either(gate.run(1, Effect.zipRight(Effect.sleep("1 second"), Effect.fail(limited(3_600_000))), budget()))
      )
      yield* TestClock.adjust("1 millis")
      const ended: Array<number> = []
      const queued = yield* Effect.forkAll(
        Array.from({ length: 4 }, () =>
          Effect.either(gate.run(1, Effect.succeed(reply()), budget())).pipe(
            Effect.zipLeft(Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sync(() => ended.push(t))))
          ))
      )
      yield* TestClock.adjust("999 millis")
      // t = 1 s: the first call's 429.
      expect(Either.isLeft(yield* Fiber.join(first))).toBe(true)
      yield* TestClock.adjust("9999 millis")
      expect(ended).toEqual([])
      yield* TestClock.adjust("1 millis")
      // Each ends with rate_limited at t = 1 s + 10 s (before: the k-th one at about k × 10 s).
      expect(ended).toEqual([11_000, 11_000, 11_000, 11_000])
      const results = yield* Fiber.join(queued)
      expect(
        results.every((r) => Either.isLeft(r) && r.left._tag === "ProviderError" && r.left.kind === "rate_limited")
      )
        .toBe(true)
    }))
})

describe("RateGate: stopping", () => {
  it.scoped("when the run stops, calls still waiting end at once with GateStopped; calls in flight finish", () =>
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

  it.scoped("halt (a fatal error) does the same", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 1 })
      const fiber = yield* runAll(
        Array.from({ length: 3 }, () => gate.run(1, Effect.zipRight(Effect.sleep("1 second"), Effect.succeed(reply()))))
      )
      yield* TestClock.adjust("1 millis")
      yield* gate.halt
      yield* TestClock.adjust("2 seconds")
      const results = yield* Fiber.join(fiber)
      expect(results.map((r) => Either.isRight(r) ? "ok" : r.left._tag)).toEqual(["ok", "GateStopped", "GateStopped"])
    }))
})

describe("RateGate: the first wave against an unknown limit (no --rpm, no headers)", () => {
  /**
   * A server refilling `perMs` requests a ms into a bucket of `capacity` (full at 0; Infinity: no
   * limit): an accepted call answers after 100 ms, a refused one at once (1 ms) with Retry-After 1 s.
   */
  const bucketServer = (capacity: number, perMs: number) => {
    let level = capacity
    let at = 0
    const starts: Array<{ readonly at: number; readonly ok: boolean }> = []
    let inFlight = 0
    let mostInFlight = 0
    const call = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.suspend(() => {
        level = Math.min(capacity, level + (now - at) * perMs)
        at = now
        const ok = level >= 1
        if (ok) level -= 1
        starts.push({ at: now, ok })
        if (!ok) return Effect.zipRight(Effect.sleep("1 millis"), Effect.fail(limited(1000)))
        inFlight++
        mostInFlight = Math.max(mostInFlight, inFlight)
        return Effect.sleep("100 millis").pipe(
          Effect.ensuring(Effect.sync(() => inFlight--)),
          Effect.as(reply())
        )
      }))
    return { call, starts, mostInFlight: () => mostInFlight }
  }
  /** The preflight (alone, 0 → 100 ms), then `n` calls at once: every start until `until` ms. */
  const wave = (server: ReturnType<typeof bucketServer>, n: number, until: number) =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 32 })
      const preflight = yield* Effect.fork(gate.run(1, server.call))
      yield* TestClock.adjust("100 millis")
      yield* Fiber.join(preflight)
      const calls = yield* runAll(Array.from({ length: n }, () => gate.run(1, server.call)))
      yield* TestClock.adjust(`${until - 100} millis`)
      return { gate, calls }
    })
  const spacing = 100 / (4 * 32)

  it.scoped("600/min, burst 10, 32 calls after the preflight: 8 start at once, the rest one every latency ÷ (4 × 32); the first 429 stops the wave (2 refused, not 22)", () =>
    Effect.gen(function*() {
      const server = bucketServer(10, 600 / 60_000)
      const { calls } = yield* wave(server, 32, 1000)
      const wave1 = server.starts.slice(1)
      expect(wave1.slice(0, 8).map((s) => s.at)).toEqual(Array(8).fill(100))
      wave1.slice(8).forEach((s, i) => expect(s.at).toBeCloseTo(100 + (i + 1) * spacing, 6))
      // 10 in the bucket at 100 ms (the preflight's token refilled): 8 + 2 accepted; the next two
      // refused, the first of their 429s back at ~103.3 ms; nothing else starts during the pause.
      expect(wave1.map((s) => s.ok)).toEqual([...Array(10).fill(true), false, false])
      expect(server.starts.length).toBe(13)
      // The rest wait out the pause, then go at the pace discovered from one a second.
      yield* TestClock.adjust("10 seconds")
      const results = yield* Fiber.join(calls)
      expect(results.filter(Either.isLeft).length).toBe(server.starts.filter((s) => !s.ok).length)
    }))

  it.scoped("no limit: the whole wave is in flight within a quarter of the latency of its first start", () =>
    Effect.gen(function*() {
      const server = bucketServer(Number.POSITIVE_INFINITY, 0)
      const { calls, gate } = yield* wave(server, 32, 100 + 100 / 4)
      expect(server.starts.length).toBe(33)
      expect(server.starts[32]!.at).toBeLessThanOrEqual(100 + 100 / 4)
      expect(server.mostInFlight()).toBe(32)
      yield* TestClock.adjust("1 second")
      const results = yield* Fiber.join(calls)
      expect(results.every(Either.isRight)).toBe(true)
      // Once a call of the wave has answered, nothing is spread: 32 more start at once.
      const t = yield* Clock.currentTimeMillis
      const more = yield* runAll(Array.from({ length: 32 }, () => gate.run(1, server.call)))
      yield* TestClock.adjust("1 millis")
      expect(server.starts.slice(33).map((s) => s.at)).toEqual(Array(32).fill(t))
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(more)
    }))

  it.scoped("without an answer yet (no preflight, no latency known) the wave is not spread", () =>
    Effect.gen(function*() {
      const server = bucketServer(Number.POSITIVE_INFINITY, 0)
      const gate = yield* RateGate.make({ concurrency: 32 })
      const calls = yield* runAll(Array.from({ length: 32 }, () => gate.run(1, server.call)))
      yield* TestClock.adjust("1 millis")
      expect(server.starts.map((s) => s.at)).toEqual(Array(32).fill(0))
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(calls)
    }))
})
