/**
 * Diagnosis of the permit gate, without touching src/:
 *
 * - the FIFO semaphore the runner and RateGate use (src/providers/FifoSemaphore.ts), which hands a
 *   released permit straight to the oldest waiter (one wake-up per release).
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
import * as FifoSemaphore from "../src/providers/FifoSemaphore.js"
import { RateGate } from "../src/providers/RateGate.js"

/** The product's FIFO semaphore (src/providers/FifoSemaphore.ts), measured against Effect's. */
const makeFifoSemaphore = FifoSemaphore.make
type FifoSemaphore = FifoSemaphore.FifoSemaphore

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
