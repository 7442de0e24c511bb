/**
 * Two runs compared for the review, with `rag-eval compare`'s own code (`compare/Comparison.ts`):
 * the same pairing, metric selection, paired t-test, randomisation test, bootstrap CI and verdicts.
 *
 * Two things differ from the CLI:
 * - The runs are read through the review's indexes (`CaseIndex.ts`), which it holds already, not
 *   from their case-metrics files again: `RunCases` here is `caseRows` over the indexes' columns
 *   (each case's value the mean of its non-null values over the run's iterations, as
 *   `compare/RunCases.ts` computes it), holding only the case ids besides.
 * - The tests run in the background (the ordering metric first), by `rag-eval compare --format jsonl`
 *   itself in one child process that prints each metric's result as it ends — in this process when
 *   the comparison is small — and each answer carries the metrics done so far and those still
 *   `pending`: compare's bootstrap and randomisation test take about n × 10,000 draws each per
 *   metric (~10 s per metric that changed at 100,000 cases on the development VM), while the cases
 *   ordered by change are ready at once and the server keeps answering.
 */
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as Readline from "node:readline"
import { compareRunCases, type MetricComparison, metricJson } from "../compare/Comparison.js"
import { caseRows, type RunCases } from "../compare/RunCases.js"
import type { UsageError } from "../domain/Errors.js"
import type { MetricSpec } from "../domain/Metric.js"
import { type CaseIndex, sameCase } from "./CaseIndex.js"
import { metricColumn } from "./CaseQuery.js"
import type { MetricComparisonView } from "./Domain.js"
import type { RunEntry } from "./Runs.js"

/** A run's per-case values as `compare` reads them, over the run's indexes (one per iteration). */
export const runCasesOver = (
  run: RunEntry,
  indexes: ReadonlyArray<CaseIndex>,
  ids: ReadonlyArray<string>
): RunCases => {
  const first = indexes[0]!
  const specs = (run.manifest.caseMetricSpecs ?? []) as ReadonlyArray<MetricSpec>
  /** For each iteration, its case number of each case of the first. */
  const maps = indexes.map((index) => {
    if (index === first) return undefined
    const map = new Int32Array(first.cases)
    for (let i = 0; i < first.cases; i++) map[i] = sameCase(first, i, index)
    return map
  })
  const valueOf = (i: number, metric: string): number | null => {
    let sum = 0
    let count = 0
    indexes.forEach((index, k) => {
      const c = k === 0 ? i : maps[k]![i]!
      const column = metricColumn(index, metric)
      if (c < 0 || column < 0) return
      const v = index.columns[column * index.cases + c]!
      if (!Number.isNaN(v)) {
        sum += v
        count++
      }
    })
    return count === 0 ? null : sum / count
  }
  const position = new Map<string, number>()
  ids.forEach((id, i) => position.set(id, i))
  // A case's row reads the columns when asked: no values copied or kept.
  const cases = caseRows(position, specs.map((spec) => spec.name), valueOf)
  // The declared metrics the run has a value of (a metric null for every case has nothing to compare).
  const valued = specs.filter((spec) => {
    for (let i = 0; i < first.cases; i++) if (valueOf(i, spec.name) !== null) return true
    return false
  })
  const m = run.manifest
  return {
    run: {
      dir: run.dir,
      runId: m.runId,
      pipeline: m.pipeline.name,
      judge: m.judge.label,
      input: m.input.path,
      status: m.status,
      iterations: indexes.map((index) => index.iteration)
    },
    cases,
    metrics: valued.map((spec) => spec.name),
    specs: new Map(specs.map((spec) => [spec.name, spec]))
  }
}

export interface Progress {
  /** The metrics compare tests by default (or that were asked for), in its order. */
  readonly selected: ReadonlyArray<string>
  readonly done: Map<string, MetricResult>
  /** Why a metric's test failed. */
  readonly failed: Map<string, string>
  readonly onlyInA: ReadonlyArray<string>
  readonly onlyInB: ReadonlyArray<string>
  readonly cases: number
  readonly settings: { readonly seed: number; readonly alpha: number }
}

/**
 * What compare will test, without testing it (compare's own selection, run with one permutation and
 * one resample: a few milliseconds), or why the runs cannot be compared.
 */
export const plan = (a: RunCases, b: RunCases): Effect.Effect<Progress, UsageError> =>
  Effect.map(compareRunCases(a, b, { permutations: 1, resamples: 1 }), (c) => ({
    selected: c.metrics.map((m) => m.metric),
    done: new Map(),
    failed: new Map(),
    onlyInA: c.onlyInA,
    onlyInB: c.onlyInB,
    cases: c.cases,
    settings: { seed: c.seed, alpha: c.alpha }
  }))

/** One metric's result as the review shows it (the API's schema). */
export type MetricResult = typeof MetricComparisonView.Type

const num = (x: unknown): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null)

/** A metric of `rag-eval compare --format json` or `jsonl`, as the review shows it. */
const fromJson = (m: Record<string, any>): MetricResult => ({
  metric: String(m["metric"]),
  lowerIsBetter: m["lowerIsBetter"] === true,
  n: Number(m["n"]),
  excluded: Number(m["excluded"]),
  meanA: num(m["meanA"]),
  meanB: num(m["meanB"]),
  delta: num(m["delta"]),
  ci: { lower: num(m["bootstrap"]?.["lower"]), upper: num(m["bootstrap"]?.["upper"]) },
  pTTest: num(m["tTest"]?.["p"]),
  pRandomisation: num(m["randomisation"]?.["p"]),
  wins: Number(m["wins"]),
  ties: Number(m["ties"]),
  losses: Number(m["losses"]),
  winner: m["winner"],
  verdict: String(m["verdict"])
})

/** A metric compared in this process, as the review shows it: what the child's line of it gives. */
const resultOf = (m: MetricComparison): MetricResult => fromJson(metricJson(m))

/**
 * Up to how many case × metric values compare's tests run in this process (the review's default):
 * ~0.07 ms of CPU a value plus ~15 ms a metric set (10,000 resamples and permutations), so at most ~0.1 s
 * of the server's time on the development VM — where a child process costs ~1 CPU-s and ~0.7 s of wall
 * time to start and read both runs again before its first test (2026-11-30: two 12-case runs, 18
 * metrics, every one in after ~5 s through a child per batch, ~0.06–0.09 s here).
 */
export const IN_PROCESS_VALUES = 1_000

/**
 * The metrics' tests, in the order given, each result told to `onResult` as it ends (or why it has
 * none): by `rag-eval compare --format jsonl` itself, in one child process (`bin`: the installed CLI),
 * so the server keeps answering while it runs and its memory (every case of both runs) is the child's;
 * in this process when the comparison is small (at most `inProcessUpTo` case × metric values: it takes
 * milliseconds) or without the CLI (a library use).
 */
export const testMetrics = (
  bin: string | undefined,
  a: RunCases,
  b: RunCases,
  metrics: ReadonlyArray<string>,
  onResult: (metric: string, result: MetricResult | string) => void,
  inProcessUpTo: number = IN_PROCESS_VALUES
): Effect.Effect<void> => {
  const told = new Set<string>()
  const tell = (metric: string, result: MetricResult | string) => {
    told.add(metric)
    onResult(metric, result)
  }
  /** Every metric not told yet: why it has no result. */
  const rest = (why: string) => {
    for (const m of metrics) if (!told.has(m)) tell(m, why)
  }
  const values = Math.min(a.cases.size, b.cases.size) * metrics.length
  if (bin === undefined || values <= inProcessUpTo || !fs.existsSync(bin)) {
    return compareRunCases(a, b, {
      metrics: metrics.join(","),
      onResult: (m) => Effect.sync(() => tell(m.metric, resultOf(m)))
    }).pipe(
      Effect.match({ onFailure: (e) => rest(e.message), onSuccess: () => rest("not compared") })
    )
  }
  return Effect.async<void>((resume) => {
    const child = spawn(
      process.execPath,
      [bin, "compare", a.run.dir, b.run.dir, "--format", "jsonl", "--metrics", metrics.join(",")],
      { stdio: ["ignore", "pipe", "pipe"] }
    )
    let stderr = ""
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (d: string) => (stderr = (stderr + d).slice(-4_096)))
    const lines = Readline.createInterface({ input: child.stdout, crlfDelay: Infinity })
    lines.on("line", (line) => {
      try {
        const m = JSON.parse(line) as Record<string, any>
        tell(String(m["metric"]), fromJson(m))
      } catch {
        // Not a metric's line: the metrics it should have been are reported below.
      }
    })
    let failure: string | undefined
    child.on("error", (e) => (failure = e.message))
    // After the process ended and its output closed: every line has been read.
    child.on("close", (code, signal) => {
      const why = failure ?? (code === 0 ? undefined : `exit ${code ?? signal}`)
      rest(`rag-eval compare failed${why === undefined ? "" : ` (${why})`}: ${stderr.trim().split("\n").at(-1) ?? ""}`)
      resume(Effect.void)
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })
}
