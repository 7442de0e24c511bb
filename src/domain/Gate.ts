/**
 * CI gates on a run's headline metrics (run and report): `--fail-under name=value,…` fails the
 * command (exit 1) when a metric is below its value, `--fail-over name=value,…` when it is above.
 *
 * A gate reads on the scale the summary prints, because it is checked against the metric's own
 * declaration (`MetricSpec`: name, range, direction, unit — `summary.json` carries them):
 * - the name is a declared one (exact; or the only one equal to it ignoring case; or a criterion's
 *   last segment, `clarity` for `rag-answers/clarity`); otherwise exit 2 with the nearest names;
 * - the value lies in the metric's range: a rate is a fraction (0–1) and may be written as a
 *   percentage with an explicit `%` (`highlyRelevantRate=50%` is 0.5); a bare `50` for a rate, a `%`
 *   on a score, or `groundedness=3` on a 0–2 rubric is exit 2, saying the scale;
 * - the flag follows the direction: `--fail-under` on a lower-is-better metric (`irrelevantRate`,
 *   `failed`) is refused naming `--fail-over`, and the other way round.
 * The CLI parses gates before the run; the runner resolves them against the pipeline's declared
 * metrics before any judge call (a mistake costs nothing), and the command checks them against
 * `summary.json` after every file is written: an unmet gate is exit 1 with one line each.
 */
import * as Effect from "effect/Effect"
import { GateFailed, UsageError } from "./Errors.js"
import { directionText, type MetricSpec, rangeText } from "./Metric.js"
import { nearest } from "./Nearest.js"

export type GateFlag = "--fail-under" | "--fail-over"

/** One gate as typed: `--fail-under composite=0.7`. */
export interface Threshold {
  readonly flag: GateFlag
  /** The metric as typed. */
  readonly metric: string
  /** The number as typed (50 for `50%`). */
  readonly value: number
  /** Written with `%`: the value is a percentage of a fraction metric. */
  readonly percent: boolean
}

/** `composite=0.7,ndcg@10=0.5` → thresholds; the names and scales are checked later, against the run's metrics. */
export const parseGates = (flag: GateFlag, text: string): Effect.Effect<ReadonlyArray<Threshold>, UsageError> => {
  const out: Array<Threshold> = []
  for (const raw of text.split(",")) {
    const part = raw.trim()
    if (part === "") continue
    const eq = part.lastIndexOf("=")
    const metric = eq === -1 ? "" : part.slice(0, eq).trim()
    const typed = eq === -1 ? "" : part.slice(eq + 1).trim()
    const percent = typed.endsWith("%")
    const number = percent ? typed.slice(0, -1).trim() : typed
    const value = Number(number)
    if (metric === "" || number === "" || !Number.isFinite(value)) {
      return Effect.fail(
        new UsageError({
          problem: `${flag}: "${part}" is not metric=number (e.g. ${flag} ${
            flag === "--fail-under" ? "composite=0.7,ndcg@10=0.5" : "irrelevantRate=0.1"
          }; a rate may be written 10%)`
        })
      )
    }
    out.push({ flag, metric, value, percent })
  }
  if (out.length === 0) return Effect.fail(new UsageError({ problem: `${flag}: give at least one metric=number` }))
  return Effect.succeed(out)
}

/** Both flags' gates, in the order given (undefined when neither is given). */
export const parseAllGates = (
  failUnder: string | undefined,
  failOver: string | undefined
): Effect.Effect<ReadonlyArray<Threshold> | undefined, UsageError> =>
  Effect.gen(function*() {
    if (failUnder === undefined && failOver === undefined) return undefined
    return [
      ...(failUnder === undefined ? [] : yield* parseGates("--fail-under", failUnder)),
      ...(failOver === undefined ? [] : yield* parseGates("--fail-over", failOver))
    ]
  })

/** A gate resolved against the metric it names. */
export interface Gate {
  readonly threshold: Threshold
  readonly metric: MetricSpec
  /** The limit on the metric's own scale (a percentage divided by 100). */
  readonly limit: number
}

/** The threshold as typed: `0.7`, `50%`. */
export const typedValue = (t: Threshold): string => `${t.value}${t.percent ? "%" : ""}`

const describeSpec = (m: MetricSpec): string =>
  `${m.name} (${m.unit === "fraction" ? "a fraction, 0–1" : rangeText(m)}${
    m.direction === "none" ? "" : `, ${directionText(m)}`
  })`

const lastSegment = (name: string) => name.slice(name.lastIndexOf("/") + 1)

/** The declared metric a typed name means, if exactly one. */
export const findMetric = (name: string, specs: ReadonlyArray<MetricSpec>): MetricSpec | undefined => {
  const exact = specs.find((m) => m.name === name)
  if (exact !== undefined) return exact
  const lower = name.toLowerCase()
  const folded = specs.filter((m) => m.name.toLowerCase() === lower)
  if (folded.length === 1) return folded[0]
  const short = specs.filter((m) => lastSegment(m.name).toLowerCase() === lower)
  return short.length === 1 ? short[0] : undefined
}

/** One gate against the run's declared metrics: the name, the direction and the scale (see the module comment). */
const resolveOne = (t: Threshold, specs: ReadonlyArray<MetricSpec>): Effect.Effect<Gate, UsageError> => {
  const fail = (problem: string) =>
    Effect.fail(new UsageError({ problem: `${t.flag} ${t.metric}=${typedValue(t)}: ${problem}` }))
  if (specs.length === 0) return fail("this pipeline declares no headline metrics to gate on")
  const m = findMetric(t.metric, specs)
  if (m === undefined) {
    const names = specs.map((s) => s.name)
    const near = nearest(t.metric, [...names, ...names.map(lastSegment)].filter((n, i, all) => all.indexOf(n) === i))
    const meant = near.map((n) => names.find((full) => full === n || lastSegment(full) === n)!).filter((n, i, all) =>
      all.indexOf(n) === i
    )
    return fail(
      `no metric "${t.metric}" in this run${meant.length === 0 ? "" : ` (did you mean ${meant.join(" or ")}?)`}; ` +
        `its metrics: ${specs.map(describeSpec).join(", ")}`
    )
  }
  if (t.flag === "--fail-under" && m.direction === "lower") {
    return fail(`lower is better for ${m.name}, so its gate is --fail-over ${m.name}=… (exit 1 when it is above)`)
  }
  if (t.flag === "--fail-over" && m.direction === "higher") {
    return fail(`higher is better for ${m.name}, so its gate is --fail-under ${m.name}=… (exit 1 when it is below)`)
  }
  if (t.percent && m.unit !== "fraction") {
    return fail(
      `${m.name} is ${
        m.unit === "score"
          ? `a score on ${rangeText(m)}`
          : `a ${m.unit === "usd" ? "cost in USD" : m.unit} (${rangeText(m)})`
      }, not a rate: give it without %`
    )
  }
  const limit = t.percent ? t.value / 100 : t.value
  if (limit < m.min || (m.max !== null && limit > m.max)) {
    const hint = m.unit === "fraction" && !t.percent && t.value > 1 && t.value <= 100
      ? `; write ${t.value / 100} or ${t.value}%`
      : specs.some((s) => s.name === `${m.name}.normalised`)
      ? ` (or gate ${m.name}.normalised, on 0–1)`
      : ""
    return fail(
      `${m.name} is ${m.unit === "fraction" ? "a fraction, 0–1 (a percentage needs %)" : `on ${rangeText(m)}`}${hint}`
    )
  }
  return Effect.succeed({ threshold: t, metric: m, limit })
}

/** Every gate against the run's declared metrics; the first mistake is a usage error (exit 2). */
export const resolveGates = (
  thresholds: ReadonlyArray<Threshold>,
  specs: ReadonlyArray<MetricSpec>
): Effect.Effect<ReadonlyArray<Gate>, UsageError> => Effect.forEach(thresholds, (t) => resolveOne(t, specs))

export interface GateResult {
  readonly gate: Gate
  /** The metric's value (summary.json); null when it has none. */
  readonly value: number | null
  readonly met: boolean
}

/** Each gate against the run's metrics. A metric with no value (every judgment failed) meets no gate. */
export const evaluateGates = (
  gates: ReadonlyArray<Gate>,
  metrics: Readonly<Record<string, number | null>>
): ReadonlyArray<GateResult> =>
  gates.map((gate) => {
    const value = metrics[gate.metric.name] ?? null
    const met = value !== null && (gate.threshold.flag === "--fail-under" ? value >= gate.limit : value <= gate.limit)
    return { gate, value, met }
  })

const round = (x: number) => String(Math.round(x * 10000) / 10000)

/** The value as the gate was written: a percentage when the gate was. */
const shown = (r: GateResult) =>
  r.value === null ? "no value" : r.gate.threshold.percent ? `${Math.round(r.value * 10000) / 100}%` : round(r.value)

/** Exit 1 with one line per unmet gate. */
export const enforceGates = (results: ReadonlyArray<GateResult>): Effect.Effect<void, GateFailed> => {
  const unmet = results.filter((r) => !r.met)
  return unmet.length === 0
    ? Effect.void
    : Effect.fail(
      new GateFailed({
        failures: unmet.map((r) =>
          `${r.gate.threshold.flag}: ${r.gate.metric.name} = ${shown(r)}, ${
            r.gate.threshold.flag === "--fail-under" ? "below" : "above"
          } ${typedValue(r.gate.threshold)}`
        )
      })
    )
}
