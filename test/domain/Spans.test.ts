import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { describe, expect, it } from "vitest"
import { annotateSpan, traced } from "../../src/domain/Spans.js"

/** The name of the span the effect runs in, if any (a no-op span has none to find). */
const spanName = Effect.map(Effect.option(Effect.currentSpan), Option.map((s) => s.name))

describe("traced and annotateSpan", () => {
  it("with tracing on: the effect runs in its span, which gets the options' and the annotations' attributes", async () => {
    const seen = await Effect.runPromise(
      Effect.all([
        spanName,
        annotateSpan({ "a.b": 1, "a.c": "x" }),
        annotateSpan("d", true),
        Effect.map(Effect.currentSpan, (s) => Object.fromEntries(s.attributes))
      ]).pipe(traced("Work.step", { attributes: { "a.e": 2 } }))
    )
    expect(seen[0]).toEqual(Option.some("Work.step"))
    expect(seen[3]).toMatchObject({ "a.b": 1, "a.c": "x", d: true, "a.e": 2 })
  })

  it("with tracing off: the effect runs as it is, in no new span, and annotating does nothing and never fails", async () => {
    const outer = await Effect.runPromise(spanName.pipe(Effect.withTracerEnabled(false)))
    const [inner, annotated] = await Effect.runPromise(
      Effect.all([spanName, Effect.exit(annotateSpan("x", 1))]).pipe(
        traced("Work.step"),
        Effect.withTracerEnabled(false)
      )
    )
    expect(inner).toEqual(outer)
    expect(annotated._tag).toBe("Success")
    // Effect.withSpan would have put its (no-op) span there.
    const plain = await Effect.runPromise(
      spanName.pipe(Effect.withSpan("Work.step"), Effect.withTracerEnabled(false))
    )
    expect(plain).not.toEqual(outer)
  })
})
