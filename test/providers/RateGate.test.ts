import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, TestClock } from "effect"
import * as RateGate from "../../src/providers/RateGate.js"

/** Start times (TestClock millis) of every call let through the gate. */
const recorder = () => {
  const starts: Array<number> = []
  const record = Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => starts.push(now)))
  return { starts, record }
}

describe("RateGate", () => {
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
        }).pipe(Effect.zipRight(Effect.sleep("1 second")), Effect.ensuring(Effect.sync(() => running--)))
      )
      const fiber = yield* Effect.fork(Effect.all(Array.from({ length: 10 }, () => call), { concurrency: "unbounded" }))
      yield* TestClock.adjust("10 millis")
      expect(yield* gate.stats).toEqual({ inFlight: 3, waiting: 7, pausedUntil: 0 })
      yield* TestClock.adjust("4 seconds")
      yield* Fiber.join(fiber)
      expect(most).toBe(3)
      expect(yield* gate.stats).toEqual({ inFlight: 0, waiting: 0, pausedUntil: 0 })
    }))

  it.effect("rpm 60: the 61st call waits until the minute is over", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 100, rpm: 60 })
      const { record, starts } = recorder()
      const fiber = yield* Effect.fork(
        Effect.all(Array.from({ length: 61 }, () => gate.run(1, record)), { concurrency: "unbounded" })
      )
      yield* TestClock.adjust("59999 millis")
      expect(starts.length).toBe(60)
      expect(starts.every((t) => t === 0)).toBe(true)
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(fiber)
      expect(starts[60]).toBe(60_000)
    }))

  it.effect("rpm is a sliding window: never more than rpm starts in any 60 s", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 4, rpm: 10 })
      const { record, starts } = recorder()
      const call = gate.run(1, Effect.zipRight(record, Effect.sleep("7 seconds")))
      const fiber = yield* Effect.fork(Effect.all(Array.from({ length: 35 }, () => call), { concurrency: "unbounded" }))
      yield* TestClock.adjust("10 minutes")
      yield* Fiber.join(fiber)
      expect(starts.length).toBe(35)
      for (const t of starts) {
        expect(starts.filter((s) => s >= t && s < t + 60_000).length).toBeLessThanOrEqual(10)
      }
    }))

  it.effect("tpm: estimated tokens are the cost", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 10, tpm: 1_000 })
      const { record, starts } = recorder()
      const fiber = yield* Effect.fork(
        Effect.all([gate.run(400, record), gate.run(400, record), gate.run(400, record), gate.run(5_000, record)], {
          concurrency: "unbounded"
        })
      )
      yield* TestClock.adjust("1 millis")
      expect(starts).toEqual([0, 0])
      yield* TestClock.adjust("60 seconds")
      expect(starts).toEqual([0, 0, 60_000])
      // A call larger than the whole budget gets a window to itself instead of never running.
      yield* TestClock.adjust("60 seconds")
      yield* Fiber.join(fiber)
      expect(starts).toEqual([0, 0, 60_000, 120_000])
    }))

  it.effect("one shared pause: after a 429 nobody starts a call until Retry-After has passed", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 8 })
      const { record, starts } = recorder()
      let rateLimited = false
      // 8 workers, 3 calls each; the very first call gets a 429 with Retry-After 10 s.
      const worker = (id: number) =>
        Effect.forEach([0, 1, 2], (n) =>
          gate.run(
            1,
            Effect.gen(function*() {
              yield* record
              if (id === 0 && n === 0 && !rateLimited) {
                rateLimited = true
                yield* Effect.sleep("200 millis")
                yield* gate.pause("10 seconds")
                return
              }
              yield* Effect.sleep("1 second")
            })
          ), { discard: true })
      const fiber = yield* Effect.fork(Effect.forEach([0, 1, 2, 3, 4, 5, 6, 7], worker, { concurrency: "unbounded" }))
      yield* TestClock.adjust("10199 millis")
      expect(starts.length).toBe(8)
      expect((yield* gate.stats).pausedUntil).toBe(10_200)
      expect((yield* gate.stats).inFlight).toBe(0)
      expect((yield* gate.stats).waiting).toBe(8)
      yield* TestClock.adjust("1 millis")
      expect(starts.length).toBe(16)
      yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(fiber)
      expect(starts.length).toBe(24)
      expect(starts.filter((t) => t > 0 && t < 10_200)).toEqual([])
    }))

  it.effect("a shorter pause never shortens the current one", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make()
      yield* gate.pause("10 seconds")
      yield* gate.pause("2 seconds")
      expect((yield* gate.stats).pausedUntil).toBe(10_000)
      const { record, starts } = recorder()
      const fiber = yield* Effect.fork(gate.run(1, record))
      yield* TestClock.adjust("9 seconds")
      expect(starts).toEqual([])
      yield* TestClock.adjust("1 seconds")
      yield* Fiber.join(fiber)
      expect(starts).toEqual([10_000])
    }))

  it.effect("a pause set while a caller waits for a permit holds it back too", () =>
    Effect.gen(function*() {
      const gate = yield* RateGate.make({ concurrency: 1 })
      const { record, starts } = recorder()
      const first = yield* Effect.fork(gate.run(1, Effect.zipRight(record, Effect.sleep("1 second"))))
      const second = yield* Effect.fork(gate.run(1, record))
      yield* TestClock.adjust("500 millis")
      yield* gate.pause("5 seconds")
      yield* TestClock.adjust("1 second")
      expect(starts).toEqual([0])
      yield* TestClock.adjust("4 seconds")
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      expect(starts).toEqual([0, 5_500])
    }))
})
