/**
 * Two runs over the same cases, compared metric by metric (SPEC §7): mean A, mean B, delta
 * (B − A), paired t-test, sign-flip randomisation test, 95% percentile-bootstrap CI of the mean
 * difference, and wins / ties / losses from B's side — then a one-line verdict.
 *
 * - Runs over different cases are refused: the tests are paired, a case missing on one side has
 *   nothing to be paired with.
 * - A case with a null (or missing) value in either run is left out of that metric only; the
 *   number left out is reported.
 * - Runs of different pipelines are refused (their metrics mean different things: NDCG with linear
 *   or exponential gain, different grade scales).
 * - By default the pipeline's quality metrics are compared (its per-case metrics with a direction);
 *   counts that are neither better nor worse (courses retrieved) only when `--metrics` names them.
 * - Significance at α = 0.05 is decided by one test, the randomisation test (no normality
 *   assumption); the verdict states both p-values, and says so when the paired t-test or the
 *   bootstrap CI (whether it excludes 0) disagrees with it.
 * - Which way is better is each metric's declared direction (`irrelevantRate`: lower), as the run's
 *   manifest records it.
 * - Randomness is seeded per metric and test from `seed` alone, so a metric's numbers do not
 *   depend on which other metrics are compared.
 */
import * as Effect from "effect/Effect"
import { UsageError } from "../domain/Errors.js"
import { code, inline } from "../domain/Markdown.js"
import { thousands } from "../domain/Numbers.js"
import {
  type BootstrapCi,
  bootstrapCi,
  defaultPermutations,
  defaultResamples,
  pairedTTest,
  type RandomisationTest,
  randomisationTest,
  type TTest,
  winsTiesLosses
} from "../stats/Paired.js"
import type { RunCases, RunDescription } from "./RunCases.js"

export interface CompareOptions {
  /** Comma-separated metric names; default every metric both runs have. */
  readonly metrics?: string | undefined
  readonly seed?: number | undefined
  readonly permutations?: number | undefined
  readonly resamples?: number | undefined
  /** Significance level (default 0.05). */
  readonly alpha?: number | undefined
  /** Metrics compared in addition to the selection (`--fail-if-worse`'s), by full or short name. */
  readonly include?: ReadonlyArray<string> | undefined
  /** Told as each metric's tests start (the 0-based index of `total`, over `cases` paired cases): for progress. */
  readonly onMetric?: ((metric: string, index: number, total: number, cases: number) => Effect.Effect<void>) | undefined
  /** Told each metric's result as its tests end, in the order compared (`--format jsonl`, the review). */
  readonly onResult?: ((result: MetricComparison) => Effect.Effect<void>) | undefined
}

export type Winner = "A" | "B" | "none" | "too-few"

export interface MetricComparison {
  readonly metric: string
  readonly lowerIsBetter: boolean
  /** Cases with a value in both runs. */
  readonly n: number
  /** Cases left out: null or missing in either run. */
  readonly excluded: number
  readonly meanA: number | null
  readonly meanB: number | null
  /** meanB − meanA (= mean of the per-case differences). */
  readonly delta: number | null
  readonly tTest: TTest
  readonly randomisation: RandomisationTest
  readonly bootstrap: BootstrapCi
  readonly wins: number
  readonly ties: number
  readonly losses: number
  readonly winner: Winner
  readonly verdict: string
}

export interface Comparison {
  readonly runA: RunDescription
  readonly runB: RunDescription
  /** Cases in both runs. */
  readonly cases: number
  readonly seed: number
  readonly permutations: number
  readonly resamples: number
  readonly alpha: number
  readonly metrics: ReadonlyArray<MetricComparison>
  /** Metrics present in only one run (not compared). */
  readonly onlyInA: ReadonlyArray<string>
  readonly onlyInB: ReadonlyArray<string>
}

export const defaultSeed = 42
export const defaultAlpha = 0.05

const listSome = (ids: ReadonlyArray<string>, max = 5) =>
  ids.length <= max ? ids.join(", ") : `${ids.slice(0, max).join(", ")}, … (${ids.length - max} more)`

/** Refuses runs over different cases; returns the shared case ids in A's order. */
export const pairCases = (a: RunCases, b: RunCases): Effect.Effect<ReadonlyArray<string>, UsageError> => {
  const onlyA = [...a.cases.keys()].filter((id) => !b.cases.has(id))
  const onlyB = [...b.cases.keys()].filter((id) => !a.cases.has(id))
  if (onlyA.length === 0 && onlyB.length === 0) {
    if (a.cases.size === 0) return Effect.fail(new UsageError({ problem: `run ${a.run.dir} has no cases to compare` }))
    return Effect.succeed([...a.cases.keys()])
  }
  const parts = [
    onlyA.length > 0 ? `${onlyA.length} case(s) only in A (${listSome(onlyA)})` : "",
    onlyB.length > 0 ? `${onlyB.length} case(s) only in B (${listSome(onlyB)})` : ""
  ].filter((p) => p !== "")
  return Effect.fail(
    new UsageError({
      problem: `the runs are over different queries, so they cannot be compared case by case: ${parts.join("; ")}. ` +
        `Compare runs made on the same test set (and the same --limit).`
    })
  )
}

/** `--metrics` names → metric keys: exact (case-insensitive), or a criterion's last segment (`clarity`). */
const selectMetrics = (
  requested: string | undefined,
  common: ReadonlyArray<string>,
  defaults: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<string>, UsageError> => {
  if (requested === undefined || requested.trim() === "") return Effect.succeed(defaults)
  const chosen: Array<string> = []
  for (const raw of requested.split(",")) {
    const name = raw.trim().toLowerCase()
    if (name === "") continue
    const exact = common.filter((m) => m.toLowerCase() === name)
    const matches = exact.length > 0
      ? exact
      : common.filter((m) => m.toLowerCase().slice(m.lastIndexOf("/") + 1) === name)
    if (matches.length === 0) {
      return Effect.fail(
        new UsageError({ problem: `metric "${raw.trim()}" is not in both runs; they have: ${common.join(", ")}` })
      )
    }
    if (matches.length > 1) {
      return Effect.fail(new UsageError({ problem: `metric "${raw.trim()}" is ambiguous: ${matches.join(", ")}` }))
    }
    if (!chosen.includes(matches[0]!)) chosen.push(matches[0]!)
  }
  return chosen.length === 0 ? Effect.succeed(defaults) : Effect.succeed(chosen)
}

/** A per-case number that is neither better nor worse (a count of items): compared only when `--metrics` names it. */
const notQuality = (run: RunCases, metric: string): boolean => run.specs.get(metric)?.direction === "none"

/**
 * `compare --fail-if-worse m1,m2`: the listed metrics on which B is significantly worse than A
 * (the randomisation test at α; "worse" follows the metric's direction), one line each.
 */
export const worseLines = (c: Comparison, names: ReadonlyArray<string>): ReadonlyArray<string> =>
  c.metrics.filter((m) => names.includes(m.metric) && m.winner === "A").map((m) =>
    `B is significantly worse than A on ${m.metric}: ${m.verdict}`
  )

/** p for verdicts: "0.41", "0.003", "< 0.001". */
export const formatP = (p: number | null): string => {
  if (p === null) return "n/a"
  if (p < 0.001) return "< 0.001"
  if (p < 0.1) return p.toFixed(3)
  return p.toFixed(2)
}

/** A signed value with 3 decimals: "+0.062", "−0.010" (ASCII minus). */
export const formatSigned = (x: number | null): string => {
  if (x === null) return "n/a"
  const digits = Math.abs(x).toFixed(3)
  // What rounds to zero is printed as 0.000, never -0.000 (nor +0.000).
  return Number(digits) === 0 ? "0.000" : `${x > 0 ? "+" : "-"}${digits}`
}

const pClause = (p: number | null) => (p === null || p < 0.001 ? `p ${formatP(p)}` : `p = ${formatP(p)}`)

const verdictOf = (
  metric: string,
  n: number,
  excluded: number,
  delta: number | null,
  t: TTest,
  r: RandomisationTest,
  ci: BootstrapCi,
  alpha: number,
  lower: boolean,
  allTied: boolean
): { readonly winner: Winner; readonly verdict: string } => {
  const left = excluded > 0 ? ` [${excluded} case(s) left out: null in a run]` : ""
  if (n < 2 || t.p === null || r.p === null || delta === null) {
    return { winner: "too-few", verdict: `not enough paired cases on ${metric} to test (n = ${n})${left}` }
  }
  if (allTied) return { winner: "none", verdict: `no difference on ${metric}: equal on all ${n} cases${left}` }
  const ps = `${pClause(t.p)} (t-test), ${formatP(r.p)} (randomisation)`
  // The randomisation test decides; the t-test and the bootstrap CI are reported beside it.
  const significant = r.p < alpha
  const ciExcludesZero = ci.lower !== null && ci.upper !== null && (ci.lower > 0 || ci.upper < 0)
  const notes: Array<string> = []
  if ((t.p < alpha) !== significant) {
    notes.push(`the t-test ${t.p < alpha ? "finds" : "does not find"} a significant difference`)
  }
  if (ciExcludesZero !== significant && ci.lower !== null && ci.upper !== null) {
    notes.push(
      `the 95% bootstrap CI [${formatSigned(ci.lower)}, ${formatSigned(ci.upper)}] ${
        ciExcludesZero ? "excludes" : "includes"
      } 0`
    )
  }
  const disagree = notes.length === 0 ? "" : `; but ${notes.join(" and ")}`
  if (significant) {
    const bBetter = lower ? delta < 0 : delta > 0
    const winner = bBetter ? "B" : "A"
    return {
      winner,
      verdict: `${winner} is better on ${metric}: ${formatSigned(delta)}, ${ps}${
        lower ? " (lower is better)" : ""
      }${disagree}${left}`
    }
  }
  return {
    winner: "none",
    verdict: `no significant difference on ${metric} by the randomisation test at α = ${alpha}: ${
      formatSigned(delta)
    }, ${ps}${disagree}${left}`
  }
}

const mean = (xs: ReadonlyArray<number>): number | null => {
  if (xs.length === 0) return null
  let s = 0
  for (const x of xs) s += x
  return s / xs.length
}

/** One metric over the paired cases. */
export const compareMetric = (
  metric: string,
  caseIds: ReadonlyArray<string>,
  a: RunCases,
  b: RunCases,
  options: { readonly seed: number; readonly permutations: number; readonly resamples: number; readonly alpha: number }
): MetricComparison => {
  const xs: Array<number> = []
  const ys: Array<number> = []
  for (const id of caseIds) {
    const x = a.cases.get(id)?.[metric]
    const y = b.cases.get(id)?.[metric]
    if (typeof x === "number" && typeof y === "number") {
      xs.push(x)
      ys.push(y)
    }
  }
  const n = xs.length
  const excluded = caseIds.length - n
  const tTest = pairedTTest(xs, ys)
  const randomisation = randomisationTest(xs, ys, { seed: options.seed, permutations: options.permutations })
  const bootstrap = bootstrapCi(xs, ys, { seed: options.seed, resamples: options.resamples })
  const wtl = winsTiesLosses(xs, ys)
  const meanA = mean(xs)
  const meanB = mean(ys)
  const delta = meanA === null || meanB === null ? null : meanB - meanA
  const lower = a.specs.get(metric)?.direction === "lower"
  const { verdict, winner } = verdictOf(
    metric,
    n,
    excluded,
    delta,
    tTest,
    randomisation,
    bootstrap,
    options.alpha,
    lower,
    n > 0 && wtl.ties === n
  )
  return {
    metric,
    lowerIsBetter: lower,
    n,
    excluded,
    meanA,
    meanB,
    delta,
    tTest,
    randomisation,
    bootstrap,
    ...wtl,
    winner,
    verdict
  }
}

/** Pairs the runs' cases and compares every selected metric. */
export const compareRunCases = (
  a: RunCases,
  b: RunCases,
  options: CompareOptions = {}
): Effect.Effect<Comparison, UsageError> =>
  Effect.gen(function*() {
    if (a.run.pipeline !== b.run.pipeline) {
      return yield* new UsageError({
        problem:
          `run A is ${a.run.pipeline} and run B is ${b.run.pipeline}: runs of different pipelines cannot be compared (their metrics are computed differently, e.g. NDCG with linear or exponential gain, on different grade scales)`
      })
    }
    const caseIds = yield* pairCases(a, b)
    const inB = new Set(b.metrics)
    const inA = new Set(a.metrics)
    const common = a.metrics.filter((m) => inB.has(m))
    const headline = common.filter((m) => !notQuality(a, m))
    if (common.length === 0) {
      return yield* new UsageError({
        problem: `runs A (${a.run.pipeline}) and B (${b.run.pipeline}) have no per-case metric in common; A has: ${
          a.metrics.join(", ") || "none"
        }; B has: ${b.metrics.join(", ") || "none"}`
      })
    }
    const chosen = yield* selectMetrics(options.metrics, common, headline.length > 0 ? headline : common)
    const extra = options.include === undefined || options.include.length === 0
      ? []
      : yield* selectMetrics(options.include.join(","), common, [])
    const selected = [...chosen, ...extra.filter((m) => !chosen.includes(m))]
    const settings = {
      seed: options.seed ?? defaultSeed,
      permutations: options.permutations ?? defaultPermutations,
      resamples: options.resamples ?? defaultResamples,
      alpha: options.alpha ?? defaultAlpha
    }
    if (!(settings.alpha > 0 && settings.alpha < 1)) {
      return yield* new UsageError({ problem: `alpha must be between 0 and 1, got ${settings.alpha}` })
    }
    const { onMetric, onResult } = options
    const metrics = yield* Effect.forEach(selected, (metric, i) =>
      Effect.zipRight(
        onMetric === undefined ? Effect.void : onMetric(metric, i, selected.length, caseIds.length),
        Effect.tap(
          Effect.sync(() => compareMetric(metric, caseIds, a, b, settings)),
          (result) => onResult === undefined ? Effect.void : onResult(result)
        )
      ))
    return {
      runA: a.run,
      runB: b.run,
      cases: caseIds.length,
      ...settings,
      metrics,
      onlyInA: a.metrics.filter((m) => !inB.has(m)),
      onlyInB: b.metrics.filter((m) => !inA.has(m))
    }
  })

/** A value with `digits` decimals; never -0.0000. */
const fmt = (x: number | null, digits = 4) => {
  if (x === null) return "n/a"
  const text = x.toFixed(digits)
  return Number(text) === 0 ? (0).toFixed(digits) : text
}

const describeRun = (label: string, r: RunDescription) =>
  `- **${label}**: ${code(r.dir)} — ${inline(r.pipeline)}, run ${inline(r.runId)}${
    r.judge === undefined ? "" : `, judge ${inline(r.judge)}`
  }` +
  `, iteration${
    r.iterations.length === 1 ? ` ${r.iterations[0]}` : `s ${r.iterations[0]}–${r.iterations.at(-1)} averaged per case`
  }` +
  `${r.status !== undefined && r.status !== "complete" ? ` (status: ${r.status})` : ""}`

/** The comparison as a markdown report: runs, settings, one table row per metric, verdicts. */
export const comparisonMarkdown = (c: Comparison): string => {
  const lines: Array<string> = [
    "# Run comparison (B − A)",
    "",
    describeRun("A", c.runA),
    describeRun("B", c.runB),
    `- ${c.cases} paired case(s); cases with a null in either run are left out of that metric (column "left out").`,
    `- Paired t-test (two-sided); sign-flip randomisation test (${
      thousands(c.permutations)
    } permutations, exact when 2ⁿ is fewer, seed ${c.seed}); ` +
    `95% percentile bootstrap CI of the mean difference (${
      thousands(c.resamples)
    } resamples, seed ${c.seed}); α = ${c.alpha}.`,
    "- W/T/L: cases where B is higher / equal / lower.",
    "- Significant: randomisation p < α (the verdict says when the t-test or the bootstrap CI disagrees).",
    "",
    "| metric | n | left out | mean A | mean B | Δ (B − A) | 95% CI | p (t-test) | p (randomisation) | W/T/L |",
    "|---|---:|---:|---:|---:|---:|---|---:|---:|---|"
  ]
  for (const m of c.metrics) {
    const ci = m.bootstrap.lower === null || m.bootstrap.upper === null
      ? "n/a"
      : `[${formatSigned(m.bootstrap.lower)}, ${formatSigned(m.bootstrap.upper)}]`
    lines.push(
      `| ${inline(m.metric, 200)} | ${m.n} | ${m.excluded} | ${fmt(m.meanA)} | ${fmt(m.meanB)} | ${
        formatSigned(m.delta)
      } | ${ci} | ${formatP(m.tTest.p)} | ${formatP(m.randomisation.p)} | ${m.wins}/${m.ties}/${m.losses} |`
    )
  }
  lines.push("", "## Verdicts", "", ...c.metrics.map((m) => `- ${m.verdict}`))
  if (c.onlyInA.length > 0 || c.onlyInB.length > 0) {
    lines.push(
      "",
      "Not compared (in one run only): " + [
        c.onlyInA.length > 0 ? `A: ${inline(c.onlyInA.join(", "), 2000)}` : "",
        c.onlyInB.length > 0 ? `B: ${inline(c.onlyInB.join(", "), 2000)}` : ""
      ].filter((p) => p !== "").join("; ")
    )
  }
  return lines.join("\n") + "\n"
}

/** JSON has no ±Infinity: a t of ±∞ (zero variance, constant shift) is written as a string. */
const jsonNumber = (x: number | null): number | string | null => (x === null || Number.isFinite(x) ? x : String(x))

/** One metric of `comparisonJson`: also a line of `--format jsonl`. */
export const metricJson = (m: MetricComparison) => ({
  metric: m.metric,
  lowerIsBetter: m.lowerIsBetter,
  n: m.n,
  excluded: m.excluded,
  meanA: m.meanA,
  meanB: m.meanB,
  delta: m.delta,
  tTest: { t: jsonNumber(m.tTest.t), df: m.tTest.df, sd: m.tTest.sdDifference, p: m.tTest.p },
  randomisation: { p: m.randomisation.p, permutations: m.randomisation.permutations, exact: m.randomisation.exact },
  bootstrap: {
    level: m.bootstrap.level,
    lower: m.bootstrap.lower,
    upper: m.bootstrap.upper,
    resamples: m.bootstrap.resamples
  },
  wins: m.wins,
  ties: m.ties,
  losses: m.losses,
  winner: m.winner,
  verdict: m.verdict
})

/** The comparison as JSON-ready data. */
export const comparisonJson = (c: Comparison) => ({
  runA: c.runA,
  runB: c.runB,
  cases: c.cases,
  seed: c.seed,
  permutations: c.permutations,
  resamples: c.resamples,
  alpha: c.alpha,
  metrics: c.metrics.map(metricJson),
  onlyInA: c.onlyInA,
  onlyInB: c.onlyInB
})
