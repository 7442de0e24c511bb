/**
 * Judge calls shared fairly between requests. At most `permits` calls run at once across all
 * requests (the server's `--concurrency`, so the judge's own gate never queues them), and a free
 * permit goes to the requests with calls waiting in turn — round-robin, one call each — rather than
 * to whichever call asked first. A request with 400 hits therefore cannot make a 1-hit request wait
 * for all of them: the small one waits for one call to finish, about one call's latency.
 *
 * Each request is a `Client`; its calls go through `client.run`. A waiting call that is interrupted
 * leaves the queue; a running one gives its permit back when it ends, however it ends.
 */
import * as Effect from "effect/Effect"

export interface Client {
  /** Run `effect` when this client's turn comes and a permit is free. */
  readonly run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export interface FairShare {
  /** A new client: one request. */
  readonly client: () => Client
  /** Calls running and waiting now (for /health and tests). */
  readonly stats: () => { readonly running: number; readonly waiting: number }
}

interface Waiter {
  granted: boolean
  readonly grant: () => void
}

interface Queue {
  readonly waiters: Array<Waiter>
  /** In `ready` (has waiters and waits for its turn). */
  queued: boolean
}

export const make = (permits: number): FairShare => {
  let running = 0
  let waiting = 0
  /** Clients with waiting calls, in turn order: the head gets the next permit, then goes to the back. */
  const ready: Array<Queue> = []

  const pump = () => {
    while (running < permits && ready.length > 0) {
      const queue = ready.shift()!
      const waiter = queue.waiters.shift()!
      if (queue.waiters.length > 0) ready.push(queue)
      else queue.queued = false
      running++
      waiting--
      waiter.granted = true
      waiter.grant()
    }
  }

  const release = Effect.sync(() => {
    running--
    pump()
  })

  /** Wait for a permit; interrupted while waiting → removed from the queue. */
  const acquire = (queue: Queue) =>
    Effect.async<void>((resume) => {
      const waiter: Waiter = { granted: false, grant: () => resume(Effect.void) }
      queue.waiters.push(waiter)
      waiting++
      if (!queue.queued) {
        queue.queued = true
        ready.push(queue)
      }
      pump()
      return Effect.sync(() => {
        // Granted, but interrupted before the grant was taken up: give the permit back.
        if (waiter.granted) {
          running--
          pump()
          return
        }
        const i = queue.waiters.indexOf(waiter)
        if (i !== -1) {
          queue.waiters.splice(i, 1)
          waiting--
        }
        if (queue.waiters.length === 0 && queue.queued) {
          queue.queued = false
          const r = ready.indexOf(queue)
          if (r !== -1) ready.splice(r, 1)
        }
      })
    })

  return {
    client: () => {
      const queue: Queue = { waiters: [], queued: false }
      return {
        run: (effect) => Effect.acquireUseRelease(Effect.interruptible(acquire(queue)), () => effect, () => release)
      }
    },
    stats: () => ({ running, waiting })
  }
}
