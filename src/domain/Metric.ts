/**
 * A metric, declared once: its name, what it means, its range and which way is better. Summaries,
 * reports, `compare` and CI gates all use the same declaration, so a metric has one name and one
 * scale everywhere. Rates are fractions (0–1; reports may print them as percentages, saying so);
 * rubric scores keep their rubric's native scale, and have a normalised 0–1 form beside them.
 */
import * as Schema from "effect/Schema"

export const Direction = Schema.Literal("higher", "lower", "none")
export type Direction = typeof Direction.Type

export const Unit = Schema.Literal("fraction", "score", "count", "usd", "ms")
export type Unit = typeof Unit.Type

export const MetricSpec = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  /** The lowest value it can take. */
  min: Schema.Number,
  /** The highest value it can take; null when unbounded (counts, costs, latencies). */
  max: Schema.NullOr(Schema.Number),
  /** Which way is better: `none` for figures that are neither (a count of items). */
  direction: Direction,
  unit: Unit
})
export type MetricSpec = typeof MetricSpec.Type

/** A rate or a normalised score, 0–1. */
export const fraction = (name: string, description: string, direction: Direction = "higher"): MetricSpec => ({
  name,
  description,
  min: 0,
  max: 1,
  direction,
  unit: "fraction"
})

/** A score on a native scale (a rubric's, a relevance grade's). */
export const score = (name: string, description: string, min: number, max: number): MetricSpec => ({
  name,
  description,
  min,
  max,
  direction: "higher",
  unit: "score"
})

/** A count: of failures (lower is better) or of items (neither). */
export const count = (name: string, description: string, direction: Direction = "lower"): MetricSpec => ({
  name,
  description,
  min: 0,
  max: null,
  direction,
  unit: "count"
})

export const usd = (name: string, description: string): MetricSpec => ({
  name,
  description,
  min: 0,
  max: null,
  direction: "lower",
  unit: "usd"
})

/** The range as text: "0–1", "1–5", "≥ 0". */
export const rangeText = (m: MetricSpec): string => (m.max === null ? `≥ ${m.min}` : `${m.min}–${m.max}`)

/** "higher is better" / "lower is better" / "" */
export const directionText = (m: MetricSpec): string => (m.direction === "none" ? "" : `${m.direction} is better`)

/** A duration in milliseconds (a latency): lower is better, unbounded. */
export const ms = (name: string, description: string): MetricSpec => ({
  name,
  description,
  min: 0,
  max: null,
  direction: "lower",
  unit: "ms"
})

const digitsOf = (m: MetricSpec, x: number, integers = true): number =>
  integers && Number.isInteger(x)
    ? 0
    : m.unit === "fraction"
    ? 3
    : m.unit === "usd"
    ? 4
    : m.unit === "ms"
    ? (x < 100 ? 1 : 0)
    : 2

/**
 * The number alone, with the digits its unit prints (`0.620`, `2.40`, `812`; a whole number without
 * decimals unless `integers` is false, as for the ends of an interval); `—` for unknown.
 */
export const numberText = (m: MetricSpec, x: number | null | undefined, integers = true): string =>
  x === null || x === undefined || !Number.isFinite(x) ? "—" : x.toFixed(digitsOf(m, x, integers))

/**
 * A value with its unit and range, as every page that prints a headline value shows it: a
 * fraction `0.620 (0–1)`, a score `2.40 (0–3)`, a count `6.50 (count, ≥ 0)`, `$0.0120 (USD)`,
 * `812 ms`. Null is `—` (unknown, never 0). A fraction is never printed as a percentage here: a
 * gate takes the value as printed.
 */
export const valueText = (m: MetricSpec, x: number | null | undefined): string => {
  if (x === null || x === undefined || !Number.isFinite(x)) return "—"
  const v = numberText(m, x)
  switch (m.unit) {
    case "fraction":
    case "score":
      return `${v} (${rangeText(m)})`
    case "count":
      return `${v} (count, ${rangeText(m)})`
    case "usd":
      return `$${v} (USD)`
    case "ms":
      return `${v} ms`
  }
}
