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
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as FifoSemaphore from "../providers/FifoSemaphore.js"

/** What an item needs: its tasks (run by the workers, in order of `tasks`), then `finish`. */
export interface Work<E, R> {
  readonly tasks: ReadonlyArray<Effect.Effect<void, E, R>>
  readonly finish: Effect.Effect<void, E, R>
}

interface Unit<E, R> {
  readonly work: Work<E, R>
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
    /** Completed (and replaced) each time the head moves on: workers waiting for room wake up. */
    let advanced = Deferred.unsafeMake<void>(FiberId.none)
    const reading = FifoSemaphore.make(1)

    const inFlight = () => units.length - head
    const lastHasTasks = () => {
      const last = units[units.length - 1]
      return last !== undefined && last.next < last.work.tasks.length
    }

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
      return unit.work.finish.pipe(
        Effect.ensuring(Effect.sync(() => {
          finishing = false
          const done = advanced
          advanced = Deferred.unsafeMake<void>(FiberId.none)
          Deferred.unsafeDone(done, Effect.void)
        })),
        Effect.zipRight(finishHead)
      )
    })

    /** Hands out the newest unit's next task, if it has one left. */
    const nextTask = (): Effect.Effect<void, E2, R2> | undefined => {
      if (!lastHasTasks()) return undefined
      const last = units[units.length - 1]!
      const task = last.work.tasks[last.next++]!
      return task.pipe(Effect.zipRight(Effect.suspend(() => {
        last.left--
        return finishHead
      })))
    }

    /** Start the next item (reading the stream when needed); under the reading lock. */
    const startNext: Effect.Effect<void, E | E2, R | R2> = Effect.suspend((): Effect.Effect<void, E | E2, R | R2> => {
      if (bufferedAt < buffered.length) {
        const item = buffered[bufferedAt++]!
        return Effect.flatMap(options.start(item), (work) => {
          units.push({ work, next: 0, left: work.tasks.length })
          return work.tasks.length === 0 ? finishHead : Effect.void
        })
      }
      return pull.pipe(
        Effect.matchEffect({
          onFailure: (e) => Option.match(e, { onNone: () => Effect.sync(() => void (exhausted = true)), onSome: Effect.fail }),
          onSuccess: (chunk) =>
            Effect.sync(() => {
              buffered = Array.from(chunk)
              bufferedAt = 0
            })
        })
      )
    })

    /** The next task for a worker; none when everything is handed out or the run is stopping. */
    const take: Effect.Effect<Effect.Effect<void, E2, R2> | undefined, E | E2, R | R2> = Effect.suspend(() => {
      if (options.stopping()) return Effect.succeed(undefined)
      const task = nextTask()
      if (task !== undefined) return Effect.succeed(task)
      if (exhausted) return Effect.succeed(undefined)
      if (inFlight() >= window) return Effect.zipRight(Deferred.await(advanced), take)
      return reading.withPermit(Effect.suspend(() =>
        // Another worker may have started items (or read the end) while this one waited.
        exhausted || inFlight() >= window || lastHasTasks() ? Effect.void : startNext
      )).pipe(Effect.zipRight(take))
    })

    const worker: Effect.Effect<void, E | E2, R | R2> = Effect.flatMap(take, (task) => task === undefined ? Effect.void : Effect.zipRight(task, worker))

    yield* Effect.all(Array.from({ length: Math.max(1, options.workers) }, () => worker), { concurrency: "unbounded", discard: true })
  }))
