/**
 * Ordered work with a fixed number of workers: items come from a stream, each needs some tasks (judge
 * calls), `workers` fibers run the tasks — one at a time each, taken in input order — and an item's
 * `finish` runs once all its tasks are done, in input order.
 *
 * Why not `Stream.mapEffect(…, { concurrency })` with a fork per task: a fiber, a deferred and a
 * queue slot per element cost more CPU than a judge call's HTTP round trip to a local server. Here
 * the workers are forked once; taking the next task is a few synchronous steps.
 *
 * - At most `window` items are started and not yet finished: memory stays flat, and a slow item at
 *   the head (a call retried with backoff) lets the workers run ahead by that much, no more.
 * - When `stopping()` turns true no new task starts; the tasks running finish, and the pool returns.
 *   Items whose tasks did not all run are never finished.
 * - A failing task or `finish` fails the pool and interrupts the other workers.
 * - A task may give its item more tasks (work that depends on what it found, like the next round of
 *   a chained judgment): they are handed out like the first ones, the oldest item's first.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as FifoSemaphore from "../providers/FifoSemaphore.js"

/** A task of an item: done, or done with more tasks for the same item. */
export type Task<E, R> = Effect.Effect<void | ReadonlyArray<Task<E, R>>, E, R>

/** What an item needs: its tasks (run by the workers, in order of `tasks`), then `finish`. */
export interface Work<E, R> {
  readonly tasks: ReadonlyArray<Task<E, R>>
  readonly finish: Effect.Effect<void, E, R>
}

interface Unit<E, R> {
  readonly tasks: Array<Task<E, R>>
  readonly finish: Effect.Effect<void, E, R>
  /** Next task to hand out. */
  next: number
  /** Tasks not yet done. */
  left: number
}

export const run = <I, E, R, E2, R2>(
  items: Stream.Stream<I, E, R>,
  options: {
    readonly workers: number
    readonly window: number
    /** The work of an item, decided when the item is reached (in input order). */
    readonly start: (item: I) => Effect.Effect<Work<E2, R2>, E2, R2>
    readonly stopping: () => boolean
  }
): Effect.Effect<void, E | E2, R | R2> =>
  Effect.scoped(Effect.gen(function*() {
    const pull = yield* Stream.toPull(items)
    const window = Math.max(2, options.window)
    // Shared by the workers. They run on one thread and only yield between the steps below, so
    // plain variables suffice; only reading the stream (which suspends) is behind a lock.
    let units: Array<Unit<E2, R2> | undefined> = []
    let head = 0
    let buffered: ReadonlyArray<I> = []
    let bufferedAt = 0
    let exhausted = false
    let finishing = false
    /**
     * Completed (and replaced) each time the head moves on or an item gains tasks: workers waiting
     * for room, or for the tasks a running one may add, wake up.
     */
    let changed = Deferred.unsafeMake<void>(FiberId.none)
    const signal = () => {
      const done = changed
      changed = Deferred.unsafeMake<void>(FiberId.none)
      Deferred.unsafeDone(done, Effect.void)
    }
    const reading = FifoSemaphore.make(1)

    const inFlight = () => units.length - head
    /** Tasks of started items not yet handed out. */
    let waiting = 0

    /** Finish the units at the head whose tasks are all done, in order. */
    const finishHead: Effect.Effect<void, E2, R2> = Effect.suspend(() => {
      const unit = units[head]
      if (finishing || unit === undefined || unit.left > 0) return Effect.void
      finishing = true
      units[head++] = undefined
      if (head > 1024 && head * 2 > units.length) {
        units = units.slice(head)
        head = 0
      }
      return unit.finish.pipe(
        Effect.ensuring(Effect.sync(() => {
          finishing = false
          signal()
        })),
        Effect.zipRight(finishHead)
      )
    })

    /** Hands out the next task of the oldest unit that has one left. */
    const nextTask = (): Effect.Effect<void, E2, R2> | undefined => {
      if (waiting === 0) return undefined
      let unit: Unit<E2, R2> | undefined
      for (let i = head; i < units.length; i++) {
        const u = units[i]
        if (u !== undefined && u.next < u.tasks.length) {
          unit = u
          break
        }
      }
      if (unit === undefined) return undefined
      const owner = unit
      const task = owner.tasks[owner.next++]!
      waiting--
      return Effect.flatMap(task, (more) =>
        Effect.suspend(() => {
          if (more !== undefined && more.length > 0) {
            owner.tasks.push(...more)
            owner.left += more.length
            waiting += more.length
            signal()
          }
          owner.left--
          return finishHead
        }))
    }

    /** Start the next item (reading the stream when needed); under the reading lock. */
    const startNext: Effect.Effect<void, E | E2, R | R2> = Effect.suspend((): Effect.Effect<void, E | E2, R | R2> => {
      if (bufferedAt < buffered.length) {
        const item = buffered[bufferedAt++]!
        return Effect.flatMap(options.start(item), (work) => {
          units.push({ tasks: [...work.tasks], finish: work.finish, next: 0, left: work.tasks.length })
          waiting += work.tasks.length
          return work.tasks.length === 0 ? finishHead : Effect.void
        })
      }
      return pull.pipe(
        Effect.matchEffect({
          onFailure: (e) =>
            Option.match(e, { onNone: () => Effect.sync(() => void (exhausted = true)), onSome: Effect.fail }),
          onSuccess: (chunk) =>
            Effect.sync(() => {
              buffered = Array.from(chunk)
              bufferedAt = 0
            })
        })
      )
    })

    /** The next task for a worker; none when every item is finished or the run is stopping. */
    const take: Effect.Effect<Effect.Effect<void, E2, R2> | undefined, E | E2, R | R2> = Effect.suspend(() => {
      if (options.stopping()) return Effect.succeed(undefined)
      const task = nextTask()
      if (task !== undefined) return Effect.succeed(task)
      // Every item started: done when none is in flight, else a running task may still add some.
      if (exhausted) {
        return inFlight() === 0
          ? Effect.succeed(undefined)
          : Effect.zipRight(Deferred.await(changed), take)
      }
      if (inFlight() >= window) return Effect.zipRight(Deferred.await(changed), take)
      return reading.withPermit(Effect.suspend(() =>
        // Another worker may have started items (or read the end) while this one waited.
        exhausted || inFlight() >= window || waiting > 0 ? Effect.void : startNext
      )).pipe(Effect.zipRight(take))
    })

    const worker: Effect.Effect<void, E | E2, R | R2> = Effect.flatMap(
      take,
      (task) => task === undefined ? Effect.void : Effect.zipRight(task, worker)
    )

    yield* Effect.all(Array.from({ length: Math.max(1, options.workers) }, () => worker), {
      concurrency: "unbounded",
      discard: true
    })
  }))
