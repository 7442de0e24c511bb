/**
 * How `run` and `report` end: the `wrote …` lines (or, with `--json`, one JSON summary object on
 * stdout), then the CI gates — `--max-failures` and `--fail-under` — after every file is written.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import { type InputError, OutputError } from "../domain/Errors.js"
import { enforceGates, evaluateGates, type GateResult, resolveGates, type Threshold } from "../domain/Gate.js"
import { headlineOf, readJsonFile, Summary } from "../domain/RunFiles.js"
import { checkFailures } from "../engine/Runner.js"
import type { RunOutcome } from "../engine/RunTypes.js"
import { displayPath } from "./Display.js"

export interface FinishOptions {
  readonly json: boolean
  /** `--fail-under` and `--fail-over`, as parsed. */
  readonly thresholds: ReadonlyArray<Threshold> | undefined
  /** `--max-failures` (run); undefined: not checked (report). */
  readonly maxFailures: number | undefined
  readonly partial?: boolean | undefined
}

/** The run's headline metrics (mean over iterations) and their declarations, as `summary.json` holds them. */
export const headlineMetrics = (runDir: string): Effect.Effect<Summary, OutputError> =>
  readJsonFile(Summary, Path.join(runDir, "summary.json"), "a rag-eval summary").pipe(
    Effect.mapError((e: InputError) => new OutputError({ path: e.file, problem: e.problem }))
  )

/** The object `run --json` prints: one line of JSON on stdout. */
export const jsonSummary = <S>(
  outcome: RunOutcome<S>,
  metrics: Readonly<Record<string, number | null>>,
  gate: ReadonlyArray<GateResult> | undefined,
  options: FinishOptions
) => ({
  runDir: Path.resolve(outcome.info.runDir),
  runId: outcome.info.runId,
  pipeline: outcome.info.pipeline,
  judge: outcome.info.judge.label,
  partial: options.partial === true,
  cases: outcome.info.input.cases,
  judgments: outcome.judgments,
  tokens: outcome.tokens,
  cost: outcome.cost,
  metrics,
  thresholds: gate === undefined ? null : {
    met: gate.every((g) => g.met) &&
      (options.maxFailures === undefined || outcome.judgments.failed <= options.maxFailures),
    // `limit` is on the metric's scale (a percentage given as 50% is 0.5 here).
    results: gate.map((g) => ({
      flag: g.gate.threshold.flag,
      metric: g.gate.metric.name,
      limit: g.gate.limit,
      value: g.value,
      met: g.met
    }))
  },
  failuresAllowed: options.maxFailures ?? null,
  files: outcome.files.map((f) => Path.resolve(f))
})

export const finishRun = <S>(outcome: RunOutcome<S>, options: FinishOptions) =>
  Effect.gen(function*() {
    const summary = yield* headlineMetrics(outcome.info.runDir)
    // The runner resolved the gates against the pipeline's declarations before judging; the
    // summary's own declarations are what they are checked against now.
    const gates = options.thresholds === undefined
      ? undefined
      : yield* resolveGates(options.thresholds, summary.metricSpecs)
    const values = headlineOf(summary)
    const gate = gates === undefined ? undefined : evaluateGates(gates, values)
    if (options.json) {
      yield* Console.log(JSON.stringify(jsonSummary(outcome, values, gate, options)))
    } else {
      for (const f of outcome.files) yield* Console.log(`wrote ${displayPath(f)}`)
      yield* Console.log(`run: ${displayPath(outcome.info.runDir)}`)
    }
    if (options.maxFailures !== undefined) yield* checkFailures(outcome, options.maxFailures)
    if (gate !== undefined) yield* enforceGates(gate)
  })
