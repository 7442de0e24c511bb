/**
 * `--fail-under name=value,…` (run and report): a CI gate on the run's headline metrics — the
 * metrics of `final-metrics.json` (`composite`, `faithfulnessPassRate`, `ndcg@10`…; with several
 * iterations, their mean). Parsed before the run (bad syntax: exit 2, nothing run); checked after
 * every file is written: an unknown name is exit 2 listing the valid ones, an unmet threshold exit 1
 * with one line each.
 */
import * as Effect from "effect/Effect"
import { GateFailed, UsageError } from "../domain/Errors.js"

export interface Threshold {
  readonly metric: string
  readonly minimum: number
}

/** `composite=0.7,ndcg@10=0.5` → thresholds; the metric names are checked later, against the run's. */
export const parseFailUnder = (text: string): Effect.Effect<ReadonlyArray<Threshold>, UsageError> => {
  const out: Array<Threshold> = []
  for (const raw of text.split(",")) {
    const part = raw.trim()
    if (part === "") continue
    const eq = part.lastIndexOf("=")
    const metric = eq === -1 ? "" : part.slice(0, eq).trim()
    const value = eq === -1 ? "" : part.slice(eq + 1).trim()
    const minimum = Number(value)
    if (metric === "" || value === "" || !Number.isFinite(minimum)) {
      return Effect.fail(new UsageError({ problem: `--fail-under: "${part}" is not metric=number (e.g. --fail-under composite=0.7,ndcg@10=0.5)` }))
    }
    out.push({ metric, minimum })
  }
  if (out.length === 0) return Effect.fail(new UsageError({ problem: "--fail-under: give at least one metric=number" }))
  return Effect.succeed(out)
}

export interface GateResult {
  readonly threshold: Threshold
  readonly value: number | null
  readonly met: boolean
}

/** Each threshold against the run's metrics; an unknown metric name is a usage error listing the valid ones. */
export const evaluateGate = (thresholds: ReadonlyArray<Threshold>, metrics: Readonly<Record<string, number | null>>): Effect.Effect<ReadonlyArray<GateResult>, UsageError> => {
  const names = Object.keys(metrics)
  // A criterion may be named by its last segment (`clarity` for `rag-answers/clarity`) when that is unique.
  const resolve = (name: string): string | undefined => {
    if (name in metrics) return name
    const short = names.filter((n) => n.slice(n.lastIndexOf("/") + 1) === name)
    return short.length === 1 ? short[0] : undefined
  }
  const unknown = thresholds.filter((t) => resolve(t.metric) === undefined)
  if (unknown.length > 0) {
    return Effect.fail(new UsageError({
      problem: `--fail-under: unknown metric ${unknown.map((t) => `"${t.metric}"`).join(", ")}; this run's metrics (final-metrics.json) are: ${names.join(", ")}`
    }))
  }
  // A metric with no value (every judgment failed) does not meet any threshold.
  return Effect.succeed(thresholds.map((t) => {
    const value = metrics[resolve(t.metric)!] ?? null
    return { threshold: t, value, met: value !== null && value >= t.minimum }
  }))
}

const show = (x: number | null) => (x === null ? "no value" : String(Math.round(x * 10000) / 10000))

/** Exit 1 with one line per unmet threshold. */
export const enforceGate = (results: ReadonlyArray<GateResult>): Effect.Effect<void, GateFailed> => {
  const unmet = results.filter((r) => !r.met)
  return unmet.length === 0
    ? Effect.void
    : Effect.fail(new GateFailed({ failures: unmet.map((r) => `--fail-under: ${r.threshold.metric} = ${show(r.value)}, below ${r.threshold.minimum}`) }))
}
