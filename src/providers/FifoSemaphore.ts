/**
 * A FIFO semaphore: a released permit goes straight to the oldest waiter — one wake-up per release.
 * Its limit can move (the rate gate's adaptive concurrency), and it can be closed: every waiter,
 * now and later, then fails with the closing error. A waiter may carry a tag, by which it can be
 * made to fail and leave the queue (the rate gate ends a queued call whose --max-wait ran out).
 *
 * Why not `Effect.makeSemaphore`: in Effect 3 a release resumes every waiter while `free > 0`, but
 * `free` only drops when a woken fiber runs, so one release wakes all waiters and all but one
 * re-register. With hundreds of judgments waiting for 32 permits that cost ~4 ms of CPU per call
 * (measured in `npm run bench`); this queue keeps it constant.
 */
import * as Effect from "effect/Effect"

export interface FifoSemaphore<E = never, T = never> {
  readonly withPermit: <A, E2, R>(self: Effect.Effect<A, E2, R>) => Effect.Effect<A, E | E2, R>
  /** Take a permit (FIFO); pair with `release`. Interrupted while waiting: it leaves the queue. */
  readonly take: Effect.Effect<void, E>
  /** `take`, the waiter (if it has to wait) known by `tag` to `failWaiters`. */
  readonly takeTagged: (tag: T) => Effect.Effect<void, E>
  /** Every tagged waiter for which `error` gives an error leaves the queue and fails with it. */
  readonly failWaiters: (error: (tag: T) => E | undefined) => void
  /** The tags of the waiters queued now. */
  readonly tags: () => ReadonlyArray<T>
  readonly release: () => void
  /** Move the limit: more permits wake waiters at once; fewer take effect as permits come back. */
  readonly setLimit: (limit: number) => void
  readonly limit: () => number
  /** Every waiter, now and later, fails with `error`. */
  readonly close: (error: E) => void
  /** Permits not held right now. */
  readonly available: () => number
  /** Fibers waiting for a permit. */
  readonly waiting: () => number
}

interface Waiter<E, T> {
  granted: boolean
  readonly resume: (effect: Effect.Effect<void, E>) => void
  readonly tag?: T | undefined
}

export const make = <E = never, T = never>(permits: number): FifoSemaphore<E, T> => {
  let limit = permits
  let held = 0
  let closed: { readonly error: E } | undefined
  let queue: Array<Waiter<E, T> | undefined> = []
  let head = 0
  let waiting = 0
  const next = (): Waiter<E, T> | undefined => {
    while (head < queue.length) {
      const waiter = queue[head]
      queue[head++] = undefined
      if (head > 1024 && head * 2 > queue.length) {
        queue = queue.slice(head)
        head = 0
      }
      if (waiter !== undefined) {
        waiting--
        return waiter
      }
    }
    return undefined
  }
  const wake = () => {
    while (held < limit) {
      const waiter = next()
      if (waiter === undefined) return
      held++
      waiter.granted = true
      waiter.resume(Effect.void)
    }
  }
  const release = () => {
    held--
    wake()
  }
  const takeTagged = (tag: T | undefined) =>
    Effect.async<void, E>((resume) => {
      if (closed !== undefined) {
        resume(Effect.fail(closed.error))
        return
      }
      if (held < limit && waiting === 0) {
        held++
        resume(Effect.void)
        return
      }
      const waiter: Waiter<E, T> = { granted: false, resume, tag }
      queue.push(waiter)
      waiting++
      return Effect.sync(() => {
        // Interrupted while waiting: leave the queue; a permit already handed over is passed on.
        if (waiter.granted) {
          release()
        } else {
          const i = queue.indexOf(waiter, head)
          if (i !== -1) {
            queue[i] = undefined
            waiting--
          }
        }
      })
    })
  const take = takeTagged(undefined)
  return {
    withPermit: (self) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(restore(take), Effect.ensuring(restore(self), Effect.sync(release)))
      ),
    take,
    takeTagged,
    failWaiters: (error) => {
      for (let i = head; i < queue.length; i++) {
        const waiter = queue[i]
        if (waiter === undefined || waiter.tag === undefined) continue
        const e = error(waiter.tag)
        if (e === undefined) continue
        queue[i] = undefined
        waiting--
        waiter.resume(Effect.fail(e))
      }
    },
    tags: () => {
      const out: Array<T> = []
      for (let i = head; i < queue.length; i++) {
        const tag = queue[i]?.tag
        if (tag !== undefined) out.push(tag)
      }
      return out
    },
    release,
    setLimit: (n) => {
      limit = n
      wake()
    },
    limit: () => limit,
    close: (error) => {
      closed = { error }
      for (let waiter = next(); waiter !== undefined; waiter = next()) waiter.resume(Effect.fail(error))
    },
    available: () => Math.max(0, limit - held),
    waiting: () => waiting
  }
}
