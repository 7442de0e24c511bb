import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as FairShare from "../../src/server/FairShare.js"

/** Let forked fibers run until they block. */
const settle = Effect.repeatN(Effect.yieldNow(), 50)

describe("FairShare", () => {
  it.effect("permits go round-robin between clients, one call each, whatever order the calls were asked in", () =>
    Effect.gen(function*() {
      const fair = FairShare.make(1)
      const order: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const a = fair.client()
      const b = fair.client()
      const c = fair.client()
      // A holds the only permit until `gate` opens; then A asks 3 more, B 2, C 1 — in that order.
      const first = yield* Effect.fork(
        a.run(Effect.zipRight(Deferred.await(gate), Effect.sync(() => order.push("a0"))))
      )
      yield* settle
      const calls = [
        ...["a1", "a2", "a3"].map((n) => a.run(Effect.sync(() => order.push(n)))),
        ...["b1", "b2"].map((n) => b.run(Effect.sync(() => order.push(n)))),
        c.run(Effect.sync(() => order.push("c1")))
      ]
      const rest = yield* Effect.fork(Effect.all(calls, { concurrency: "unbounded" }))
      yield* settle
      expect(fair.stats()).toEqual({ running: 1, waiting: 6 })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(rest)
      expect(order).toEqual(["a0", "a1", "b1", "c1", "a2", "b2", "a3"])
      expect(fair.stats()).toEqual({ running: 0, waiting: 0 })
    }))

  it.effect("at most `permits` run at once; an interrupted waiter leaves the queue; a failed call gives its permit back", () =>
    Effect.gen(function*() {
      const fair = FairShare.make(2)
      const client = fair.client()
      const hold = yield* Deferred.make<void>()
      let peak = 0
      let now = 0
      const call = client.run(Effect.gen(function*() {
        now++
        peak = Math.max(peak, now)
        yield* Deferred.await(hold)
        now--
      }))
      const running = yield* Effect.fork(Effect.all([call, call, call, call], { concurrency: "unbounded" }))
      yield* settle
      expect(fair.stats()).toEqual({ running: 2, waiting: 2 })
      const waiter = yield* Effect.fork(fair.client().run(Effect.void))
      yield* settle
      expect(fair.stats().waiting).toBe(3)
      yield* Fiber.interrupt(waiter)
      expect(fair.stats().waiting).toBe(2)
      yield* Deferred.succeed(hold, undefined)
      yield* Fiber.join(running)
      expect(peak).toBe(2)
      expect(yield* Effect.either(client.run(Effect.fail("boom")))).toMatchObject({ _tag: "Left", left: "boom" })
      expect(fair.stats()).toEqual({ running: 0, waiting: 0 })
    }))
})
