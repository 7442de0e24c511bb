/**
 * How `run` and `report` end: the `wrote …` lines (or, with `--json`, one JSON summary object on
 * stdout), then the CI gates — `--max-failures` and `--fail-under` — after every file is written.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { OutputError } from "../domain/Errors.js"
import type { RunOutcome } from "../engine/RunTypes.js"
import { checkFailures } from "../engine/Runner.js"
import { enforceGate, evaluateGate, type GateResult, type Threshold } from "../report/Gate.js"
import { displayPath } from "./Display.js"

export interface FinishOptions {
  readonly json: boolean
  readonly thresholds: ReadonlyArray<Threshold> | undefined
  /** `--max-failures` (run); undefined: not checked (report). */
  readonly maxFailures: number | undefined
  readonly partial?: boolean | undefined
}

/** The run's headline metrics as `final-metrics.json` holds them (mean over iterations). */
export const headlineMetrics = (runDir: string): Effect.Effect<Record<string, number | null>, OutputError> =>
  Effect.try({
    try: () => {
      const final = JSON.parse(fs.readFileSync(Path.join(runDir, "final-metrics.json"), "utf8")) as { metrics?: Record<string, { mean: number | null }> }
      return Object.fromEntries(Object.entries(final.metrics ?? {}).map(([k, m]) => [k, m.mean]))
    },
    catch: (e) => new OutputError({ path: Path.join(runDir, "final-metrics.json"), problem: `cannot read: ${(e as Error).message}` })
  })

/** The object `run --json` prints: one line of JSON on stdout. */
export const jsonSummary = <S>(outcome: RunOutcome<S>, metrics: Record<string, number | null>, gate: ReadonlyArray<GateResult> | undefined, options: FinishOptions) => ({
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
    met: gate.every((g) => g.met) && (options.maxFailures === undefined || outcome.judgments.failed <= options.maxFailures),
    results: gate.map((g) => ({ metric: g.threshold.metric, minimum: g.threshold.minimum, value: g.value, met: g.met }))
  },
  failuresAllowed: options.maxFailures ?? null,
  files: outcome.files.map((f) => Path.resolve(f))
})

export const finishRun = <S>(outcome: RunOutcome<S>, options: FinishOptions) =>
  Effect.gen(function*() {
    const metrics = yield* headlineMetrics(outcome.info.runDir)
    // Unknown metric names are a usage error (exit 2), reported before anything else is printed.
    const gate = options.thresholds === undefined ? undefined : yield* evaluateGate(options.thresholds, metrics)
    if (options.json) {
      yield* Console.log(JSON.stringify(jsonSummary(outcome, metrics, gate, options)))
    } else {
      for (const f of outcome.files) yield* Console.log(`wrote ${displayPath(f)}`)
      yield* Console.log(`run: ${displayPath(outcome.info.runDir)}`)
    }
    if (options.maxFailures !== undefined) yield* checkFailures(outcome, options.maxFailures)
    if (gate !== undefined) yield* enforceGate(gate)
  })
