/**
 * `rag-eval compare <runA> <runB> [--metrics …] [--format markdown|json|jsonl] [--output FILE] [--seed N]
 * [--iteration N]` (SPEC §7): paired comparison of two runs over the same cases. Reading the runs
 * is `src/compare/RunCases.ts` (every iteration averaged per case unless `--iteration`), the
 * statistics `src/stats/Paired.ts`, the report `src/compare/Comparison.ts`.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import {
  compareRunCases,
  type Comparison,
  comparisonJson,
  comparisonMarkdown,
  defaultAlpha,
  defaultSeed,
  formatP,
  type MetricComparison,
  metricJson,
  worseLines
} from "../compare/Comparison.js"
import { loadRunCases } from "../compare/RunCases.js"
import { GateFailed, type InputError, type OutputError, UsageError } from "../domain/Errors.js"
import { thousands } from "../domain/Numbers.js"
import { writeFileAtomic } from "../io/Files.js"
import { minimumPairedCases, smallestRandomisationP } from "../stats/Paired.js"

/** `jsonl`: one line per metric (`metricJson`), printed as its tests end. */
export type CompareFormat = "markdown" | "json" | "jsonl"

export interface CompareArgs {
  readonly runA: string
  readonly runB: string
  /** Comma-separated metric names (default: every metric both runs have). */
  readonly metrics?: string | undefined
  readonly format?: CompareFormat | undefined
  /** Write the report here instead of printing it. */
  readonly output?: string | undefined
  readonly seed?: number | undefined
  /** Compare one iteration's records instead of the per-case mean over all iterations. */
  readonly iteration?: number | undefined
  readonly permutations?: number | undefined
  readonly resamples?: number | undefined
  /** `--fail-if-worse m1,m2`: fail (exit 1) when B is significantly worse than A on one of them. */
  readonly failIfWorse?: string | undefined
  /** Significance level (default 0.05). */
  readonly alpha?: number | undefined
  /** Told each metric's result as its tests end (`--format jsonl` prints it then). */
  readonly onResult?: ((result: MetricComparison) => Effect.Effect<void>) | undefined
}

export interface CompareResult {
  readonly comparison: Comparison
  /** The report in the chosen format. */
  readonly report: string
  /** `--fail-if-worse`: one line per gated metric on which B is significantly worse. */
  readonly worse: ReadonlyArray<string>
}

/** `--fail-if-worse` names (full, or a criterion's last segment) → compared metric keys. */
const resolveGate = (names: ReadonlyArray<string>, c: Comparison): Effect.Effect<ReadonlyArray<string>, UsageError> => {
  const compared = c.metrics.map((m) => m.metric)
  const out: Array<string> = []
  for (const name of names) {
    const lower = name.toLowerCase()
    const match = compared.find((m) => m.toLowerCase() === lower) ??
      compared.find((m) => m.toLowerCase().slice(m.lastIndexOf("/") + 1) === lower)
    if (match === undefined) {
      return Effect.fail(
        new UsageError({
          problem: `--fail-if-worse: metric "${name}" was not compared; compared: ${compared.join(", ")}`
        })
      )
    }
    out.push(match)
  }
  return Effect.succeed(out)
}

/**
 * A gate that could never fail is refused (exit 2) rather than passed silently: with too few
 * paired cases the randomisation test cannot reach p < α however much worse B is (5 cases, all
 * worse: p = 2/2⁵ = 0.0625). The count is per metric: cases with a null on either side are not paired.
 */
const gateCanFail = (c: Comparison, gated: ReadonlyArray<string>): Effect.Effect<void, UsageError> => {
  const needed = minimumPairedCases(c.alpha, c.permutations)
  for (const m of c.metrics) {
    if (!gated.includes(m.metric)) continue
    if (needed !== undefined && m.n >= needed) continue
    const smallest = formatP(smallestRandomisationP(m.n, c.permutations))
    return Effect.fail(
      new UsageError({
        problem:
          `--fail-if-worse cannot fail on ${m.metric}: the randomisation test needs at least ${
            needed ?? "more"
          } paired cases to reach p < ${c.alpha}, ` +
          `and these runs have ${m.n}${
            m.excluded > 0 ? ` (${m.excluded} left out: null in a run)` : ""
          } (its smallest p is then ${smallest}); ` +
          "compare runs over more cases"
      })
    )
  }
  return Effect.void
}

/** How long a comparison runs before it says, on stderr, which metric it is testing. */
export const PROGRESS_AFTER_MS = 5_000

/**
 * The line on stderr as a metric's tests start, once the comparison has run `PROGRESS_AFTER_MS`
 * (runs of 100,000 cases take seconds a metric, of a million minutes); none before, so a quick
 * comparison prints only its report.
 */
export const progressLine = (
  metric: string,
  index: number,
  total: number,
  cases: number,
  elapsedMs: number
): string | undefined =>
  elapsedMs < PROGRESS_AFTER_MS ?
    undefined :
    `compare: testing ${metric} (${index + 1} of ${total}) over ${thousands(cases)} paired cases; ${
      Math.round(elapsedMs / 1000)
    } s so far`

/** The command's work, without printing or writing: load both runs, pair, test, render. */
export const compare = (args: CompareArgs): Effect.Effect<CompareResult, InputError | UsageError> =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const a = yield* loadRunCases(args.runA, { iteration: args.iteration })
    const b = yield* loadRunCases(args.runB, { iteration: args.iteration })
    const gate = args.failIfWorse === undefined
      ? []
      : args.failIfWorse.split(",").map((m) => m.trim()).filter((m) => m !== "")
    if (args.failIfWorse !== undefined && gate.length === 0) {
      return yield* new UsageError({ problem: "--fail-if-worse: give at least one metric name" })
    }
    const comparison = yield* compareRunCases(a, b, {
      metrics: args.metrics,
      // The gated metrics are compared whether or not --metrics (or the default) has them.
      include: gate,
      alpha: args.alpha,
      seed: args.seed,
      permutations: args.permutations,
      resamples: args.resamples,
      onResult: args.onResult,
      onMetric: (metric, index, total, cases) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const line = progressLine(metric, index, total, cases, now - started)
          return line === undefined ? Effect.void : Console.error(line)
        })
    })
    const gated = yield* resolveGate(gate, comparison)
    yield* gateCanFail(comparison, gated)
    const report = args.format === "json"
      ? JSON.stringify(comparisonJson(comparison), null, 2) + "\n"
      : args.format === "jsonl"
      ? comparison.metrics.map((m) => JSON.stringify(metricJson(m)) + "\n").join("")
      : comparisonMarkdown(comparison)
    return { comparison, report, worse: worseLines(comparison, gated) }
  })

/** Runs `compare`, then prints the report, or writes it to `--output` and prints the verdicts. */
export const compareAndPrint = (
  args: CompareArgs
): Effect.Effect<CompareResult, InputError | UsageError | OutputError | GateFailed> =>
  Effect.gen(function*() {
    // jsonl to the screen: each metric's line as its tests end (a long comparison shows them as they land).
    const streamed = args.format === "jsonl" && args.output === undefined
    const result = yield* compare(
      streamed ? { ...args, onResult: (m) => Console.log(JSON.stringify(metricJson(m))) } : args
    )
    if (args.output === undefined) {
      if (!streamed) yield* Console.log(result.report.replace(/\n$/, ""))
    } else {
      yield* writeFileAtomic(args.output, result.report)
      for (const m of result.comparison.metrics) yield* Console.log(m.verdict)
      yield* Console.log(`wrote ${args.output}`)
    }
    if (result.worse.length > 0) return yield* new GateFailed({ failures: [...result.worse] })
    return result
  })

export const compareCommand = Command.make(
  "compare",
  {
    runA: Args.text({ name: "runA" }).pipe(
      Args.withDescription("Run directory A (the baseline), out/<pipeline>/<run-id>")
    ),
    runB: Args.text({ name: "runB" }).pipe(Args.withDescription("Run directory B (the candidate); deltas are B − A")),
    metrics: Options.text("metrics").pipe(
      Options.withDescription(
        "Metrics to compare, comma-separated (default: the quality metrics both runs have — not cost, tokens, latency or counts; `clarity` matches rag-answers/clarity)"
      ),
      Options.optional
    ),
    format: Options.choice("format", ["markdown", "json", "jsonl"]).pipe(
      Options.withDescription(
        "Report format (default markdown); jsonl: one JSON object per metric (json's `metrics` entries), printed as each metric's tests end"
      ),
      Options.withDefault("markdown" as const)
    ),
    output: Options.text("output").pipe(
      Options.withDescription("Write the report to FILE and print only the verdicts"),
      Options.optional
    ),
    seed: Options.integer("seed").pipe(
      Options.withDescription(`Seed of the randomisation test and the bootstrap (default ${defaultSeed})`),
      Options.withDefault(defaultSeed)
    ),
    iteration: Options.integer("iteration").pipe(
      Options.withDescription("Compare only this iteration's records (default: each case's mean over all iterations)"),
      Options.optional
    ),
    failIfWorse: Options.text("fail-if-worse").pipe(
      Options.withDescription(
        "CI gate: exit 1 when B is significantly worse than A (randomisation test at --alpha) on one of these metrics, comma-separated; needs at least 6 paired cases at α = 0.05 (8 at 0.01), else exit 2"
      ),
      Options.optional
    ),
    alpha: Options.float("alpha").pipe(
      Options.withDescription(`Significance level (default ${defaultAlpha})`),
      Options.withDefault(defaultAlpha)
    )
  },
  (flags) =>
    compareAndPrint({
      runA: flags.runA,
      runB: flags.runB,
      metrics: Option.getOrUndefined(flags.metrics),
      format: flags.format,
      output: Option.getOrUndefined(flags.output),
      seed: flags.seed,
      iteration: Option.getOrUndefined(flags.iteration),
      failIfWorse: Option.getOrUndefined(flags.failIfWorse),
      alpha: flags.alpha
    })
).pipe(
  Command.withDescription(
    "Compare two runs over the same cases: paired t-test, randomisation test, bootstrap CI, wins/ties/losses per metric"
  )
)
