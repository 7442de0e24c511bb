/**
 * Bounded evaluations: at most `concurrency` requests are judged at once and at most `queue` more
 * wait for a slot; beyond that a request is refused at once with 429 and a `Retry-After` estimate,
 * so a saturated server sheds load instead of queueing without end. (Judge calls inside an
 * evaluation are bounded separately, by the judge's own rate gate.) A batch is one evaluation.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { apiError, type TooManyRequests } from "./Domain.js"

export interface SlotsStats {
  readonly running: number
  readonly waiting: number
  readonly concurrency: number
  readonly queue: number
}

export class EvaluationSlots extends Context.Tag("rag-eval/server/EvaluationSlots")<EvaluationSlots, {
  /** Run `effect` in a slot, or fail with 429 when every slot and queue place is taken. */
  readonly run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | TooManyRequests, R>
  readonly stats: () => SlotsStats
  /** Seconds a refused client should wait: about one evaluation's time (≥ 1). */
  readonly retryAfterSeconds: () => number
}>() {}

export const make = (
  options: { readonly concurrency: number; readonly queue: number }
): Effect.Effect<EvaluationSlots["Type"]> =>
  Effect.gen(function*() {
    const semaphore = yield* Effect.makeSemaphore(options.concurrency)
    let admitted = 0
    let running = 0
    /** Moving average of an evaluation's duration (ms). */
    let averageMs = 1000
    const limit = options.concurrency + options.queue
    return EvaluationSlots.of({
      stats: () => ({ running, waiting: admitted - running, concurrency: options.concurrency, queue: options.queue }),
      retryAfterSeconds: () => {
        const rounds = 1 + Math.max(0, admitted - options.concurrency) / options.concurrency
        return Math.min(60, Math.max(1, Math.ceil((averageMs * rounds) / 1000)))
      },
      run: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            if (admitted >= limit) return false
            admitted++
            return true
          }),
          (ok): Effect.Effect<A, E | TooManyRequests, R> => {
            if (!ok) {
              const busy = `${options.concurrency} evaluation${options.concurrency === 1 ? "" : "s"} running${
                options.queue > 0 ? ` and ${options.queue} waiting` : ""
              }`
              return Effect.fail(
                apiError(
                  429,
                  "too_many_requests",
                  `the server is busy (${busy}); retry after the Retry-After header's seconds`
                )
              )
            }
            return semaphore.withPermits(1)(
              Effect.suspend(() => {
                running++
                const started = performance.now()
                return effect.pipe(
                  Effect.ensuring(Effect.sync(() => {
                    running--
                    averageMs = 0.8 * averageMs + 0.2 * (performance.now() - started)
                  }))
                )
              })
            )
          },
          (ok) =>
            Effect.sync(() => {
              if (ok) admitted--
            })
        )
    })
  })
