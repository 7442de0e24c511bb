/**
 * `rag-eval compare <runA> <runB> [--metrics …] [--format markdown|json] [--output FILE] [--seed N]
 * [--iteration N]` (SPEC §7): paired comparison of two runs over the same cases. Reading the runs
 * is `src/compare/RunCases.ts` (every iteration averaged per case unless `--iteration`), the
 * statistics `src/stats/Paired.ts`, the report `src/compare/Comparison.ts`.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { InputError, OutputError, UsageError } from "../domain/Errors.js"
import { type Comparison, comparisonJson, comparisonMarkdown, compareRunCases, defaultSeed } from "../compare/Comparison.js"
import { loadRunCases } from "../compare/RunCases.js"
import { writeFileAtomic } from "../report/Files.js"

export type CompareFormat = "markdown" | "json"

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
}

export interface CompareResult {
  readonly comparison: Comparison
  /** The report in the chosen format. */
  readonly report: string
}

/** The command's work, without printing or writing: load both runs, pair, test, render. */
export const compare = (args: CompareArgs): Effect.Effect<CompareResult, InputError | UsageError> =>
  Effect.gen(function*() {
    const a = yield* loadRunCases(args.runA, { iteration: args.iteration })
    const b = yield* loadRunCases(args.runB, { iteration: args.iteration })
    const comparison = yield* compareRunCases(a, b, {
      metrics: args.metrics,
      seed: args.seed,
      permutations: args.permutations,
      resamples: args.resamples
    })
    const report = args.format === "json" ? JSON.stringify(comparisonJson(comparison), null, 2) + "\n" : comparisonMarkdown(comparison)
    return { comparison, report }
  })

/** Runs `compare`, then prints the report, or writes it to `--output` and prints the verdicts. */
export const compareAndPrint = (args: CompareArgs): Effect.Effect<CompareResult, InputError | UsageError | OutputError> =>
  Effect.gen(function*() {
    const result = yield* compare(args)
    if (args.output === undefined) {
      yield* Console.log(result.report.replace(/\n$/, ""))
    } else {
      yield* writeFileAtomic(args.output, result.report)
      for (const m of result.comparison.metrics) yield* Console.log(m.verdict)
      yield* Console.log(`wrote ${args.output}`)
    }
    return result
  })

export const compareCommand = Command.make(
  "compare",
  {
    runA: Args.text({ name: "runA" }).pipe(Args.withDescription("Run directory A (the baseline), out/<pipeline>/<run-id>")),
    runB: Args.text({ name: "runB" }).pipe(Args.withDescription("Run directory B (the candidate); deltas are B − A")),
    metrics: Options.text("metrics").pipe(
      Options.withDescription("Metrics to compare, comma-separated (default: every per-case metric both runs have; `clarity` matches rag-answers/clarity)"),
      Options.optional
    ),
    format: Options.choice("format", ["markdown", "json"]).pipe(
      Options.withDescription("Report format (default markdown)"),
      Options.withDefault("markdown" as const)
    ),
    output: Options.text("output").pipe(Options.withDescription("Write the report to FILE and print only the verdicts"), Options.optional),
    seed: Options.integer("seed").pipe(
      Options.withDescription(`Seed of the randomisation test and the bootstrap (default ${defaultSeed})`),
      Options.withDefault(defaultSeed)
    ),
    iteration: Options.integer("iteration").pipe(
      Options.withDescription("Compare only this iteration's records (default: each case's mean over all iterations)"),
      Options.optional
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
      iteration: Option.getOrUndefined(flags.iteration)
    })
).pipe(Command.withDescription("Compare two runs over the same cases: paired t-test, randomisation test, bootstrap CI, wins/ties/losses per metric"))
