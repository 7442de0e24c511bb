import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as OrderedPool from "../../src/engine/OrderedPool.js"

/** Item i has `tasksOf(i)` tasks; task j of item i sleeps `delay(i, j)` ms. */
const scenario = (options: {
  readonly items: number
  readonly workers: number
  readonly window: number
  readonly tasksOf?: (i: number) => number
  readonly delay?: (i: number, j: number) => number
  readonly stopping?: () => boolean
}) => {
  const finished: Array<number> = []
  let running = 0
  let maxRunning = 0
  let started = 0
  let maxOpen = 0
  const open = new Set<number>()
  const tasksOf = options.tasksOf ?? (() => 3)
  const delay = options.delay ?? ((i, j) => ((i * 7 + j * 13) % 5) * 10)
  const run = OrderedPool.run(Stream.range(0, options.items - 1).pipe(Stream.rechunk(4)), {
    workers: options.workers,
    window: options.window,
    stopping: options.stopping ?? (() => false),
    start: (i) =>
      Effect.sync(() => {
        open.add(i)
        maxOpen = Math.max(maxOpen, open.size)
        return {
          tasks: Array.from({ length: tasksOf(i) }, (_, j) =>
            Effect.suspend(() => {
              started++
              running++
              maxRunning = Math.max(maxRunning, running)
              return Effect.sleep(delay(i, j)).pipe(Effect.ensuring(Effect.sync(() => running--)))
            })),
          finish: Effect.sync(() => {
            open.delete(i)
            finished.push(i)
          })
        }
      })
  })
  return { run, finished, stats: () => ({ maxRunning, maxOpen, started }) }
}

describe("OrderedPool", () => {
  it.effect("a task may add tasks to its item (a next round): they run before the item finishes, in input order, every worker busy to the end", () =>
    Effect.gen(function*() {
      // Each item: one task (10 ms) which adds two more (10 ms each), the last of which adds one more.
      const finished: Array<number> = []
      const ran: Array<string> = []
      let running = 0
      let maxRunning = 0
      const task = (
        i: number,
        name: string,
        more: () => ReadonlyArray<OrderedPool.Task<never, never>>
      ): OrderedPool.Task<never, never> =>
        Effect.suspend(() => {
          running++
          maxRunning = Math.max(maxRunning, running)
          return Effect.sleep(10).pipe(
            Effect.ensuring(Effect.sync(() => running--)),
            Effect.map(() => {
              ran.push(`${i}:${name}`)
              return more()
            })
          )
        })
      const run = OrderedPool.run(Stream.range(0, 9), {
        workers: 4,
        window: 4,
        stopping: () => false,
        start: (i) =>
          Effect.sync(() => {
            let left = 2
            const second = (name: string) => task(i, name, () => --left === 0 ? [task(i, "third", () => [])] : [])
            return {
              tasks: [task(i, "first", () => [second("second-a"), second("second-b")])],
              finish: Effect.sync(() => {
                expect(ran.filter((r) => r.startsWith(`${i}:`)).sort()).toEqual([
                  `${i}:first`,
                  `${i}:second-a`,
                  `${i}:second-b`,
                  `${i}:third`
                ])
                finished.push(i)
              })
            }
          })
      })
      const fiber = yield* Effect.fork(run)
      yield* TestClock.adjust(10_000)
      yield* Fiber.join(fiber)
      expect(finished).toEqual(Array.from({ length: 10 }, (_, i) => i))
      expect(ran).toHaveLength(40)
      expect(maxRunning).toBe(4)
    }))

  it.effect("finishes every item once, in input order, with at most `workers` tasks at a time", () =>
    Effect.gen(function*() {
      const s = scenario({ items: 50, workers: 4, window: 8 })
      const fiber = yield* Effect.fork(s.run)
      yield* TestClock.adjust(100_000)
      yield* Fiber.join(fiber)
      expect(s.finished).toEqual(Array.from({ length: 50 }, (_, i) => i))
      expect(s.stats().maxRunning).toBe(4)
      expect(s.stats().started).toBe(150)
    }))

  it.effect("items without tasks (all reused) finish in their place", () =>
    Effect.gen(function*() {
      const s = scenario({ items: 20, workers: 3, window: 6, tasksOf: (i) => (i % 3 === 0 ? 0 : 2) })
      const fiber = yield* Effect.fork(s.run)
      yield* TestClock.adjust(100_000)
      yield* Fiber.join(fiber)
      expect(s.finished).toEqual(Array.from({ length: 20 }, (_, i) => i))
    }))

  it.effect("a slow item at the head lets the workers run ahead by the window, no further", () =>
    Effect.gen(function*() {
      // Item 0's task takes 10 s; every other task 1 ms.
      const s = scenario({ items: 40, workers: 2, window: 5, tasksOf: () => 1, delay: (i) => (i === 0 ? 10_000 : 1) })
      const fiber = yield* Effect.fork(s.run)
      yield* TestClock.adjust(1_000)
      // Items 0–4 are open (the window); the free worker finished 1–4 but may not start item 5.
      expect(s.finished).toEqual([])
      expect(s.stats().maxOpen).toBe(5)
      expect(s.stats().started).toBe(5)
      yield* TestClock.adjust(100_000)
      yield* Fiber.join(fiber)
      expect(s.finished).toEqual(Array.from({ length: 40 }, (_, i) => i))
      expect(s.stats().maxOpen).toBe(5)
    }))

  it.effect("stopping: no new task starts, the running ones finish, unfinished items are never finished", () =>
    Effect.gen(function*() {
      let stop = false
      const s = scenario({ items: 30, workers: 3, window: 6, tasksOf: () => 2, delay: () => 10, stopping: () => stop })
      const fiber = yield* Effect.fork(s.run)
      yield* TestClock.adjust(25)
      stop = true
      const startedAtStop = s.stats().started
      yield* TestClock.adjust(1_000)
      yield* Fiber.join(fiber)
      // The three tasks running when the stop came finished; nothing started after them.
      expect(s.stats().started).toBe(startedAtStop)
      expect(s.finished.length).toBeLessThan(30)
      expect(s.finished).toEqual(Array.from({ length: s.finished.length }, (_, i) => i))
    }))

  it.effect("a failing task fails the pool and interrupts the other workers", () =>
    Effect.gen(function*() {
      let interrupted = 0
      const pool = OrderedPool.run(Stream.range(0, 9), {
        workers: 3,
        window: 4,
        stopping: () => false,
        start: (i) =>
          Effect.succeed({
            tasks: [
              i === 2
                ? Effect.zipRight(Effect.sleep(5), Effect.fail(`task of item ${i} failed`))
                : Effect.sleep(1_000).pipe(Effect.onInterrupt(() => Effect.sync(() => interrupted++)))
            ],
            finish: Effect.void
          })
      })
      const fiber = yield* Effect.fork(Effect.flip(pool))
      yield* TestClock.adjust(10)
      expect(yield* Fiber.join(fiber)).toBe("task of item 2 failed")
      expect(interrupted).toBe(2)
    }))

  it.effect("a failing stream fails the pool after the items before the failure", () =>
    Effect.gen(function*() {
      const finished: Array<number> = []
      const items = Stream.concat(Stream.make(1, 2, 3), Stream.fail("unreadable line 4"))
      const error = yield* Effect.flip(OrderedPool.run(items, {
        workers: 2,
        window: 4,
        stopping: () => false,
        start: (i) => Effect.succeed({ tasks: [Effect.void], finish: Effect.sync(() => finished.push(i)) })
      }))
      expect(error).toBe("unreadable line 4")
      expect(finished).toEqual([1, 2, 3])
    }))
})
