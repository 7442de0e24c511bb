/**
 * Spans on the paths that run once per judge call. Tracing is off unless `--trace-otlp` is given
 * (`Effect.withTracerEnabled(false)`), and then what Effect still does per span costs more than the
 * span is worth: `Effect.withSpan` captures its call site as an Error, and puts the (no-op) span in
 * the fiber's context for the duration — an acquire/use/release and two context comparisons —
 * and `Effect.annotateCurrentSpan` finds no span to annotate and fails inside: an Error built,
 * stack trace and all, then dropped. These helpers look at the tracer switch first and, off, run
 * the effect as it is (issue #35: about a tenth of the runner's own CPU per LLM call).
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"

/** `Effect.withSpan(name, options)` when tracing is on (without a call-site stack trace); the effect alone when off. */
export const traced = (name: string, options?: Tracer.SpanOptions) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    FiberRef.get(FiberRef.currentTracerEnabled),
    (on): Effect.Effect<A, E, R> => on ? Effect.withSpan(self, name, { ...options, captureStackTrace: false }) : self
  )

/** `Effect.annotateCurrentSpan`, and nothing at all when tracing is off. */
export const annotateSpan: {
  (key: string, value: unknown): Effect.Effect<void>
  (values: Record<string, unknown>): Effect.Effect<void>
} = (...args: [string, unknown] | [Record<string, unknown>]) =>
  Effect.flatMap(
    FiberRef.get(FiberRef.currentTracerEnabled),
    (on) =>
      on ?
        (args.length === 2 ? Effect.annotateCurrentSpan(args[0], args[1]) : Effect.annotateCurrentSpan(args[0])) :
        Effect.void
  )
