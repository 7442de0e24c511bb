/**
 * A graceful stop. The first Ctrl+C (SIGINT) or SIGTERM sets `stopping`: the runner starts no new
 * judge call, lets calls in flight finish and land in the journal, and ends with `Stopped`. A second
 * signal interrupts everything (`bin.ts`). Tests and library use get a signal that never fires.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export class Shutdown extends Context.Tag("rag-eval/Shutdown")<Shutdown, {
  readonly stopping: () => boolean
  readonly request: Effect.Effect<void>
}>() {}

export const make = (): Shutdown["Type"] => {
  let stopping = false
  return {
    stopping: () => stopping,
    request: Effect.sync(() => {
      stopping = true
    })
  }
}

export const layerNever = Layer.succeed(Shutdown, { stopping: () => false, request: Effect.void })
