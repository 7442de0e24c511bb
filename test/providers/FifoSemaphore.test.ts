import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber } from "effect"
import * as FifoSemaphore from "../../src/providers/FifoSemaphore.js"

describe("FifoSemaphore", () => {
  it.effect("never lets more than N run, and serves waiters in arrival order", () =>
    Effect.gen(function*() {
      const sem = FifoSemaphore.make(2)
      const gates = yield* Effect.forEach([0, 1, 2, 3, 4], () => Deferred.make<void>())
      const started: Array<number> = []
      let running = 0
      let peak = 0
      const fibers = yield* Effect.forEach([0, 1, 2, 3, 4], (i) =>
        Effect.fork(sem.withPermit(Effect.gen(function*() {
          started.push(i)
          running++
          peak = Math.max(peak, running)
          yield* Deferred.await(gates[i]!)
          running--
        }))))
      yield* Effect.yieldNow()
      expect(started).toEqual([0, 1])
      expect(sem.waiting()).toBe(3)
      for (const i of [1, 0, 2, 3, 4]) {
        yield* Deferred.succeed(gates[i]!, undefined)
        yield* Effect.yieldNow()
      }
      yield* Fiber.joinAll(fibers)
      expect(started).toEqual([0, 1, 2, 3, 4])
      expect(peak).toBe(2)
      expect(sem.available()).toBe(2)
    }))

  it.effect("an interrupted waiter leaves the queue and no permit is lost", () =>
    Effect.gen(function*() {
      const sem = FifoSemaphore.make(1)
      const hold = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(sem.withPermit(Deferred.await(hold)))
      yield* Effect.yieldNow()
      const waiter = yield* Effect.fork(sem.withPermit(Effect.void))
      yield* Effect.yieldNow()
      expect(sem.waiting()).toBe(1)
      yield* Fiber.interrupt(waiter)
      expect(sem.waiting()).toBe(0)
      yield* Deferred.succeed(hold, undefined)
      yield* Fiber.join(holder)
      expect(sem.available()).toBe(1)
      // A failing or interrupted holder releases its permit too.
      yield* Effect.exit(sem.withPermit(Effect.fail("boom")))
      expect(sem.available()).toBe(1)
    }))

  it.effect("a moving limit: more permits wake waiters at once; fewer take effect as permits come back", () =>
    Effect.gen(function*() {
      const sem = FifoSemaphore.make(1)
      const hold = yield* Deferred.make<void>()
      const fibers = yield* Effect.forEach([0, 1, 2, 3], () => Effect.fork(sem.withPermit(Deferred.await(hold))))
      yield* Effect.yieldNow()
      expect(sem.waiting()).toBe(3)
      sem.setLimit(3)
      yield* Effect.yieldNow()
      expect(sem.waiting()).toBe(1)
      sem.setLimit(1)
      expect(sem.available()).toBe(0)
      yield* Deferred.succeed(hold, undefined)
      yield* Fiber.joinAll(fibers)
      expect(sem.available()).toBe(1)
    }))

  it.effect("close: every waiter, now and later, fails with the error; permits held are unaffected", () =>
    Effect.gen(function*() {
      const sem = FifoSemaphore.make<string>(1)
      const hold = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(sem.withPermit(Deferred.await(hold)))
      yield* Effect.yieldNow()
      const waiter = yield* Effect.fork(Effect.either(sem.withPermit(Effect.void)))
      yield* Effect.yieldNow()
      sem.close("closed")
      expect(yield* Fiber.join(waiter)).toEqual(Either.left("closed"))
      expect(yield* Effect.either(sem.take)).toEqual(Either.left("closed"))
      yield* Deferred.succeed(hold, undefined)
      yield* Fiber.join(holder)
    }))
})
