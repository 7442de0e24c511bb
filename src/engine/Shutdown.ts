/**
 * A graceful stop. The first Ctrl+C (SIGINT) or SIGTERM sets `stopping`: the runner starts no new
 * judge call, calls waiting (for a permit, the pace, a 429's pause or a backoff) end at once, calls
 * in flight finish and land in the journal, and the run ends with `Stopped`. A second signal
 * interrupts everything (`bin.ts`). Tests and library use get a signal that never fires.
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"

export class Shutdown extends Context.Tag("rag-eval/Shutdown")<Shutdown, {
  readonly stopping: () => boolean
  readonly request: Effect.Effect<void>
  /** Completes when a stop is requested (waits race it to end at once). */
  readonly requested: Effect.Effect<void>
}>() {}

export const make = (): Shutdown["Type"] => {
  let stopping = false
  const signal = Deferred.unsafeMake<void>(FiberId.none)
  return {
    stopping: () => stopping,
    request: Effect.suspend(() => {
      stopping = true
      return Deferred.succeed(signal, undefined)
    }).pipe(Effect.asVoid),
    requested: Deferred.await(signal)
  }
}

export const layerNever = Layer.succeed(Shutdown, {
  stopping: () => false,
  request: Effect.void,
  requested: Effect.never
})
