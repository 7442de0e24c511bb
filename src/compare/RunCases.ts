/**
 * A finished run read back as per-case numbers, for `rag-eval compare`: its manifest and, for each
 * case (by `caseId`), every numeric per-case metric of its records.
 *
 * Which fields are metrics (read generically, so new pipelines need no change here):
 * 1. every top-level field of a record holding a number or null, except the bookkeeping fields
 *    `ordinal`, `line`, `iteration` and failure counts (`failed`, `failedJudgments`, any `failed…`)
 *    — e.g. `composite`; answer-synthesis's `faithfulness`, `completeness`, `overall`;
 * 2. every number-or-null field of a nested object named `metrics`, `values` or `scores`, under its
 *    own name — the retrieval pipelines' per-query values (`GradedRecord.metrics`: `ndcg@10`…; a
 *    `metrics: null` record, whose retrieval failed, has none, so it is left out of every metric);
 *    other nested objects (`tokens`, `latency`, `retrieval`) are not compared;
 * 3. each entry of `dimensions` (rubric pipelines) as its `normalised` score (0–1) under its
 *    criterion id (`rag-answers/clarity`) — unless the record also has a top-level field named like
 *    the criterion's last segment (answer-synthesis's `faithfulness`: the same judgment on its own
 *    1–5 scale), so a judgment is not compared twice.
 * `composite` is left out when the record has `overall` (answer-synthesis: composite = overall / 5).
 * null stays null: a failed judgment is not a score.
 *
 * Iterations: by default every `records-iteration-N.jsonl` of the run (N = 1 … manifest
 * `iterations`) is read and each case's value is the mean of its non-null values across
 * iterations (null when null in all), which damps judge noise; `iteration` picks one file instead.
 */
import * as Effect from "effect/Effect"
import { isRecord } from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import * as readline from "node:readline"
import { InputError, UsageError } from "../domain/Errors.js"

const Manifest = Schema.Struct({
  runId: Schema.String,
  pipeline: Schema.Struct({ name: Schema.String }),
  iterations: Schema.Number,
  status: Schema.optional(Schema.String),
  judge: Schema.optional(Schema.Struct({ label: Schema.optional(Schema.String) })),
  input: Schema.optional(Schema.Struct({ path: Schema.optional(Schema.String) }))
})

export interface RunDescription {
  readonly dir: string
  readonly runId: string
  readonly pipeline: string
  readonly judge: string | undefined
  readonly input: string | undefined
  readonly status: string | undefined
  /** The iterations whose records were read. */
  readonly iterations: ReadonlyArray<number>
}

export interface RunCases {
  readonly run: RunDescription
  /** caseId → metric name → value (mean over the iterations read); cases in file order. */
  readonly cases: ReadonlyMap<string, Readonly<Record<string, number | null>>>
  /** Metric names in the order first seen. */
  readonly metrics: ReadonlyArray<string>
}

const bookkeeping: ReadonlySet<string> = new Set(["ordinal", "line", "iteration"])
const containers: ReadonlyArray<string> = ["metrics", "values", "scores"]
const isBookkeeping = (key: string) => bookkeeping.has(key) || key.startsWith("failed") || containers.includes(key)
const isMetricValue = (x: unknown): x is number | null => x === null || (typeof x === "number" && Number.isFinite(x))

/** The numeric per-case metrics of one record (see the module comment for the rules). */
export const recordMetrics = (record: Readonly<Record<string, unknown>>): Record<string, number | null> => {
  const out: Record<string, number | null> = {}
  const dimensions = record["dimensions"]
  if (Array.isArray(dimensions)) {
    for (const d of dimensions) {
      if (!isRecord(d) || typeof d["criterion"] !== "string" || !isMetricValue(d["normalised"])) continue
      const criterion = d["criterion"]
      const short = criterion.slice(criterion.lastIndexOf("/") + 1)
      if (short in record) continue
      out[criterion] = d["normalised"]
    }
  }
  for (const [key, value] of Object.entries(record)) {
    if (isBookkeeping(key) || !isMetricValue(value)) continue
    if (key === "composite" && "overall" in record) continue
    out[key] = value
  }
  for (const container of containers) {
    const nested = record[container]
    if (!isRecord(nested)) continue
    for (const [key, value] of Object.entries(nested)) {
      if (isMetricValue(value) && !(key in out)) out[key] = value
    }
  }
  return out
}

/**
 * A run directory's manifest decoded with `schema`: a missing directory, a file given instead, no
 * manifest, bad JSON or another shape each fail naming the path. `fileHint` is what to say when a
 * file is given (calibrate also takes a judge's qrels file).
 */
export const readRunManifest = <A, I>(dir: string, schema: Schema.Schema<A, I>, fileHint = "give a run directory, out/<pipeline>/<run-id>") =>
  Effect.gen(function*() {
    if (!fs.existsSync(dir)) return yield* new InputError({ file: dir, problem: "no such run directory" })
    if (!fs.statSync(dir).isDirectory()) {
      return yield* new UsageError({ problem: `${dir} is a file; ${fileHint}` })
    }
    const path = Path.join(dir, "manifest.json")
    if (!fs.existsSync(path)) {
      return yield* new UsageError({ problem: `${dir} is not a run directory (no manifest.json); give out/<pipeline>/<run-id>` })
    }
    const json = yield* Effect.try({
      try: () => JSON.parse(fs.readFileSync(path, "utf8")) as unknown,
      catch: (e) => new InputError({ file: path, problem: `not valid JSON: ${e instanceof Error ? e.message : String(e)}` })
    })
    return yield* Schema.decodeUnknown(schema)(json).pipe(
      Effect.mapError((e) => new InputError({ file: path, problem: `not a rag-eval manifest: ${e.message}` }))
    )
  })

const readManifest = (dir: string) => readRunManifest(dir, Manifest)

interface Accumulator {
  /** caseId → metric → [sum, non-null count]. */
  readonly sums: Map<string, Map<string, [number, number]>>
  readonly metrics: Set<string>
}

/** Folds one records file into the accumulator, streaming it line by line. */
const readRecords = (file: string, acc: Accumulator) =>
  Effect.gen(function*() {
    if (!fs.existsSync(file)) {
      return yield* new InputError({ file, problem: "records file not found (was the run stopped before this iteration finished?)" })
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
            catch: (e) => new InputError({ file, line, problem: `not valid JSON: ${e instanceof Error ? e.message : String(e)}` })
          })
          if (!isRecord(parsed)) return yield* new InputError({ file, line, problem: "a record must be a JSON object" })
          const rawId = parsed["caseId"]
          if (typeof rawId !== "string" && typeof rawId !== "number") {
            return yield* new InputError({ file, line, field: "caseId", problem: "the record has no caseId" })
          }
          const caseId = String(rawId)
          if (seen.has(caseId)) return yield* new InputError({ file, line, field: "caseId", problem: `duplicate caseId "${caseId}"` })
          seen.add(caseId)
          let sums = acc.sums.get(caseId)
          if (sums === undefined) {
            sums = new Map()
            acc.sums.set(caseId, sums)
          }
          for (const [metric, value] of Object.entries(recordMetrics(parsed))) {
            acc.metrics.add(metric)
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
  /** Read only this iteration's records (1-based); default: every iteration, averaged per case. */
  readonly iteration?: number | undefined
}

/** Reads a run directory (`out/<pipeline>/<run-id>`) into per-case metric values. */
export const loadRunCases = (dir: string, options: LoadOptions = {}): Effect.Effect<RunCases, InputError | UsageError> =>
  Effect.gen(function*() {
    const manifest = yield* readManifest(dir)
    const available = Math.max(1, Math.floor(manifest.iterations))
    if (options.iteration !== undefined && (options.iteration < 1 || options.iteration > available || !Number.isInteger(options.iteration))) {
      return yield* new UsageError({ problem: `--iteration ${options.iteration}: run ${manifest.runId} has iteration(s) 1–${available}` })
    }
    const iterations = options.iteration === undefined ? Array.from({ length: available }, (_, i) => i + 1) : [options.iteration]
    const acc: Accumulator = { sums: new Map(), metrics: new Set() }
    for (const iteration of iterations) {
      yield* readRecords(Path.join(dir, `records-iteration-${iteration}.jsonl`), acc)
    }
    const cases = new Map<string, Record<string, number | null>>()
    for (const [caseId, sums] of acc.sums) {
      const values: Record<string, number | null> = {}
      for (const [metric, [sum, count]] of sums) values[metric] = count === 0 ? null : sum / count
      cases.set(caseId, values)
    }
    return {
      run: {
        dir,
        runId: manifest.runId,
        pipeline: manifest.pipeline.name,
        judge: manifest.judge?.label,
        input: manifest.input?.path,
        status: manifest.status,
        iterations
      },
      cases,
      metrics: [...acc.metrics]
    }
  })
