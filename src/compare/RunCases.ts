/**
 * A finished run read back as per-case numbers, for `rag-eval compare`: its manifest (with the
 * pipeline's declared per-case metrics: name, range, direction) and, for each case (by `caseId`),
 * its per-case metrics as the run wrote them (`case-metrics-iteration-N.jsonl`, schema
 * `RunFiles.CaseMetrics`). Nothing is guessed from the records' shape.
 *
 * Iterations: by default every iteration of the run (N = 1 … manifest `iterations`) is read and each
 * case's value is the mean of its non-null values across iterations (null when null in all), which
 * damps judge noise; `iteration` picks one file instead. null stays null: a failed judgment is not a
 * score.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import * as readline from "node:readline"
import { InputError, UsageError } from "../domain/Errors.js"
import type { MetricSpec } from "../domain/Metric.js"
import { CaseMetrics, caseMetricsFile, describeIssues, readManifest } from "../domain/RunFiles.js"

export interface RunDescription {
  readonly dir: string
  readonly runId: string
  readonly pipeline: string
  readonly judge: string | undefined
  readonly input: string | undefined
  readonly status: string | undefined
  /** The iterations whose case metrics were read. */
  readonly iterations: ReadonlyArray<number>
}

export interface RunCases {
  readonly run: RunDescription
  /** caseId → metric name → value (mean over the iterations read); cases in file order. */
  readonly cases: ReadonlyMap<string, Readonly<Record<string, number | null>>>
  /** Metric names, in the pipeline's declaration order. */
  readonly metrics: ReadonlyArray<string>
  /** What each metric is (range, direction). */
  readonly specs: ReadonlyMap<string, MetricSpec>
}

interface Accumulator {
  /** caseId → metric → [sum, non-null count]. */
  readonly sums: Map<string, Map<string, [number, number]>>
}

const decodeCase = Schema.decodeUnknownEither(CaseMetrics)

/** Folds one case-metrics file into the accumulator, streaming it line by line. */
const readCaseMetrics = (file: string, runId: string, acc: Accumulator) =>
  Effect.gen(function*() {
    if (!fs.existsSync(file)) {
      return yield* new InputError({
        file,
        problem:
          `not found: run ${runId} did not finish this iteration, or was made by an older rag-eval (rag-eval report ${
            Path.dirname(file)
          } writes it from the journal)`
      })
    }
    const seen = new Set<string>()
    const lines = Stream.suspend(() =>
      Stream.fromAsyncIterable(
        readline.createInterface({ input: fs.createReadStream(file, { encoding: "utf8" }), crlfDelay: Infinity }),
        (e) => new InputError({ file, problem: `cannot read: ${e instanceof Error ? e.message : String(e)}` })
      )
    )
    yield* lines.pipe(
      Stream.zipWithIndex,
      Stream.runForEach(([text, index]) =>
        Effect.gen(function*() {
          const line = index + 1
          if (text.trim() === "") return
          const parsed = yield* Effect.try({
            try: () => JSON.parse(text) as unknown,
            catch: (e) =>
              new InputError({ file, line, problem: `not valid JSON: ${e instanceof Error ? e.message : String(e)}` })
          })
          const decoded = decodeCase(parsed)
          if (decoded._tag === "Left") {
            return yield* new InputError({
              file,
              line,
              problem: `not a case-metrics row: ${describeIssues(decoded.left)}`
            })
          }
          const { caseId, metrics } = decoded.right
          if (seen.has(caseId)) {
            return yield* new InputError({ file, line, field: "caseId", problem: `duplicate caseId "${caseId}"` })
          }
          seen.add(caseId)
          let sums = acc.sums.get(caseId)
          if (sums === undefined) {
            sums = new Map()
            acc.sums.set(caseId, sums)
          }
          for (const [metric, value] of Object.entries(metrics)) {
            const cell = sums.get(metric) ?? [0, 0]
            if (value !== null) {
              cell[0] += value
              cell[1] += 1
            }
            sums.set(metric, cell)
          }
        })
      )
    )
  })

export interface LoadOptions {
  /** Read only this iteration (1-based); default: every iteration, averaged per case. */
  readonly iteration?: number | undefined
}

/** Reads a run directory (`out/<pipeline>/<run-id>`) into per-case metric values. */
export const loadRunCases = (
  dir: string,
  options: LoadOptions = {}
): Effect.Effect<RunCases, InputError | UsageError> =>
  Effect.gen(function*() {
    const manifest = yield* readManifest(dir)
    if (manifest.caseMetricSpecs === undefined || manifest.caseMetricSpecs.length === 0) {
      return yield* new UsageError({
        problem: `run ${manifest.runId} (${manifest.pipeline.name}) declares no per-case metrics${
          manifest.caseMetricSpecs === undefined
            ? ": it was made by an older rag-eval; run it again (the journal answers every judgment: nothing is paid twice)"
            : ", so its cases cannot be compared"
        }`
      })
    }
    const available = Math.max(1, Math.floor(manifest.iterations))
    if (
      options.iteration !== undefined &&
      (options.iteration < 1 || options.iteration > available || !Number.isInteger(options.iteration))
    ) {
      return yield* new UsageError({
        problem: `--iteration ${options.iteration}: run ${manifest.runId} has iteration(s) 1–${available}`
      })
    }
    const iterations = options.iteration === undefined
      ? Array.from({ length: available }, (_, i) => i + 1)
      : [options.iteration]
    const acc: Accumulator = { sums: new Map() }
    for (const iteration of iterations) {
      yield* readCaseMetrics(Path.join(dir, caseMetricsFile(iteration)), manifest.runId, acc)
    }
    const cases = new Map<string, Record<string, number | null>>()
    for (const [caseId, sums] of acc.sums) {
      const values: Record<string, number | null> = {}
      for (const [metric, [sum, count]] of sums) {
        values[metric] = count === 0 ? null : sum / count
      }
      cases.set(caseId, values)
    }
    // The declared metrics this run has a value of (a metric null for every case — one that needs a
    // reference the input did not give — has nothing to compare).
    const valued = new Set<string>()
    for (const values of cases.values()) {
      for (const [metric, value] of Object.entries(values)) if (value !== null) valued.add(metric)
    }
    const declared = manifest.caseMetricSpecs.filter((m) => valued.has(m.name))
    return {
      run: {
        dir,
        runId: manifest.runId,
        pipeline: manifest.pipeline.name,
        judge: manifest.judge.label,
        input: manifest.input.path,
        status: manifest.status,
        iterations
      },
      cases,
      metrics: declared.map((m) => m.name),
      specs: new Map(manifest.caseMetricSpecs.map((m) => [m.name, m]))
    }
  })
