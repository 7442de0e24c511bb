/**
 * Diagnosis of the permit gate, without touching src/:
 *
 * - `makeFifoSemaphore`: a bench-only FIFO semaphore that hands a released permit straight to the
 *   oldest waiter (one wake-up per release). It is the shape of the fix recommended for the
 *   runner's `permits` (src/pipeline/Runner.ts) and `RateGate`'s permits (src/providers/RateGate.ts),
 *   which use `Effect.makeSemaphore`.
 * - `semaphoreMicro`: cost per acquisition of `Effect.makeSemaphore(32)` vs the FIFO one, with 32
 *   and with many fibers waiting. Each holder keeps its permit across one macrotask
 *   (`setImmediate`), as an HTTP call does.
 *
 * Effect 3's Semaphore keeps waiters in a Set; a release schedules a task that calls waiters while
 * `free > 0` — but `free` only drops when a woken fiber actually runs, so one release wakes every
 * waiter, one of them wins and the rest re-register: O(waiters) fiber resumptions per release.
 */
import { Effect, Layer } from "effect"
import { performance } from "node:perf_hooks"
import { RateGate } from "../src/providers/RateGate.js"

export interface FifoSemaphore {
  readonly withPermit: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export const makeFifoSemaphore = (permits: number): FifoSemaphore => {
  let free = permits
  interface Waiter {
    granted: boolean
    readonly resume: (effect: Effect.Effect<void>) => void
  }
  const queue: Array<Waiter | undefined> = []
  let head = 0
  const release = () => {
    while (head < queue.length) {
      const next = queue[head]
      queue[head++] = undefined
      if (head > 1024 && head * 2 > queue.length) {
        queue.splice(0, head)
        head = 0
      }
      if (next !== undefined) {
        next.granted = true
        next.resume(Effect.void)
        return
      }
    }
    free++
  }
  const take = Effect.async<void>((resume) => {
    if (free > 0) {
      free--
      resume(Effect.void)
      return
    }
    const waiter: Waiter = { granted: false, resume }
    queue.push(waiter)
    return Effect.sync(() => {
      // Interrupted while waiting: leave the queue; if the permit was already handed over, pass it on.
      if (waiter.granted) release()
      else {
        const i = queue.indexOf(waiter, head)
        if (i !== -1) queue[i] = undefined
      }
    })
  })
  return {
    withPermit: (self) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(restore(take), Effect.ensuring(restore(self), Effect.sync(release)))
      )
  }
}

/** A RateGate with only the concurrency limit, on the FIFO semaphore (no rpm/tpm, pause is a no-op). */
export const fifoRateGateLayer = (concurrency: number): Layer.Layer<RateGate> =>
  Layer.sync(RateGate, () => {
    const semaphore = makeFifoSemaphore(concurrency)
    return RateGate.of({
      run: (_tokens, effect) => semaphore.withPermit(effect),
      pause: () => Effect.void,
      stats: Effect.succeed({ inFlight: 0, waiting: 0, pausedUntil: 0 })
    })
  })

const holdOneMacrotask = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

export interface SemaphoreResult {
  readonly label: string
  readonly acquisitions: number
  readonly usPerAcquisition: number
}

export const semaphoreMicro = async (acquisitions: number, permits: number): Promise<Array<SemaphoreResult>> => {
  const results: Array<SemaphoreResult> = []
  const measure = async (label: string, fibers: number, withPermit: FifoSemaphore["withPermit"]) => {
    const items = Array.from({ length: acquisitions }, (_, i) => i)
    const program = Effect.forEach(items, () => withPermit(holdOneMacrotask), { concurrency: fibers, discard: true })
    await Effect.runPromise(Effect.forEach(items.slice(0, 2000), () => withPermit(holdOneMacrotask), { concurrency: fibers, discard: true }))
    const start = performance.now()
    await Effect.runPromise(program)
    results.push({ label, acquisitions, usPerAcquisition: ((performance.now() - start) * 1000) / acquisitions })
  }
  for (const fibers of [permits, permits * 12]) {
    const effectSemaphore = Effect.runSync(Effect.makeSemaphore(permits))
    await measure(`Effect.makeSemaphore(${permits}), ${fibers} fibers`, fibers, effectSemaphore.withPermits(1))
    await measure(`FIFO semaphore(${permits}),        ${fibers} fibers`, fibers, makeFifoSemaphore(permits).withPermit)
  }
  return results
}
