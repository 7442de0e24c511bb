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
 *
 * Memory: the values are kept as columns (per metric, a sum and a count per case in typed arrays:
 * 12 bytes a case and metric, up to twice that while they grow) beside the case ids, and a case's row
 * is made when asked (`caseRows`). A map of every case's metrics held ~3 KB a case: two
 * 100,000-case runs of 18 metrics peaked at 625 MB, and two runs of a million cases would not have
 * fit in Node's default heap (~4 GB).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, UsageError } from "../domain/Errors.js"
import { f64, Growing, u32 } from "../domain/Growing.js"
import type { MetricSpec } from "../domain/Metric.js"
import { CaseMetrics, caseMetricsFile, describeIssues, readManifest } from "../domain/RunFiles.js"
import { readLines } from "../io/Files.js"
import { runWhileSync } from "../io/Streams.js"

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

/** The iterations' values, as columns: case i's sum and count of non-null values of each metric. */
class Columns {
  /** caseId → its position, in the order the cases were first read. */
  readonly position = new Map<string, number>()
  /** metric → its column. */
  readonly metric = new Map<string, number>()
  readonly sums: Array<Growing<Float64Array>> = []
  readonly counts: Array<Growing<Uint32Array>> = []
  /** The iteration file that last gave each case a row (a case twice in one file is refused). */
  readonly lastRead = new Growing(u32(1024), u32)

  /** The case's position, made for a case not read before. */
  positionOf(caseId: string): number {
    let i = this.position.get(caseId)
    if (i === undefined) {
      i = this.position.size
      this.position.set(caseId, i)
      this.lastRead.push(0)
      for (let m = 0; m < this.sums.length; m++) {
        this.sums[m]!.push(0)
        this.counts[m]!.push(0)
      }
    }
    return i
  }

  columnOf(metric: string): number {
    let m = this.metric.get(metric)
    if (m === undefined) {
      m = this.sums.length
      this.metric.set(metric, m)
      const n = this.position.size
      this.sums.push(new Growing(f64(Math.max(1024, n)), f64))
      this.counts.push(new Growing(u32(Math.max(1024, n)), u32))
      this.sums[m]!.length = n
      this.counts[m]!.length = n
    }
    return m
  }

  /** Case i's value of a metric: the mean of its non-null values, null when it has none. */
  value(i: number, metric: string): number | null {
    const m = this.metric.get(metric)
    if (m === undefined) return null
    const count = this.counts[m]!.get(i)
    return count === 0 ? null : this.sums[m]!.get(i) / count
  }

  /** Whether any case has a value of the metric. */
  valued(metric: string): boolean {
    const m = this.metric.get(metric)
    if (m === undefined) return false
    const counts = this.counts[m]!
    for (let i = 0; i < counts.length; i++) if (counts.get(i) > 0) return true
    return false
  }
}

type Row = Readonly<Record<string, number | null>>

/**
 * The cases of a run by id, each row made when asked (`get`): a Map to `compare`'s code, holding only
 * the ids' positions. Iterating entries or values makes them all.
 */
class CaseRows extends Map<string, Row> {
  constructor(private readonly position: ReadonlyMap<string, number>, private readonly row: (i: number) => Row) {
    super()
  }
  override get size() {
    return this.position.size
  }
  override get(id: string) {
    const i = this.position.get(id)
    return i === undefined ? undefined : this.row(i)
  }
  override has(id: string) {
    return this.position.has(id)
  }
  override keys() {
    return this.position.keys()
  }
  private all() {
    return new Map([...this.position].map(([id, i]) => [id, this.row(i)] as const))
  }
  override entries() {
    return this.all().entries()
  }
  override values() {
    return this.all().values()
  }
  override forEach(f: (value: Row, key: string, map: Map<string, Row>) => void) {
    this.all().forEach((value, key) => f(value, key, this))
  }
  override [Symbol.iterator]() {
    return this.entries()
  }
}

/**
 * `RunCases.cases` over values kept elsewhere (columns, the review's indexes): case `position`'s row
 * reads `valueOf(position, metric)` when a metric is asked of it — a Proxy, no values copied or kept.
 * Its keys are `metrics`.
 */
export const caseRows = (
  position: ReadonlyMap<string, number>,
  metrics: ReadonlyArray<string>,
  valueOf: (i: number, metric: string) => number | null
): ReadonlyMap<string, Row> => {
  const known = new Set(metrics)
  const handler: ProxyHandler<{ readonly i: number }> = {
    get: (target, metric) => (typeof metric === "string" ? valueOf(target.i, metric) : undefined),
    has: (_, metric) => typeof metric === "string" && known.has(metric),
    ownKeys: () => [...metrics],
    getOwnPropertyDescriptor: (target, metric) =>
      typeof metric === "string" && known.has(metric)
        ? { value: valueOf(target.i, metric), enumerable: true, configurable: true, writable: false }
        : undefined
  }
  return new CaseRows(position, (i) => new Proxy({ i }, handler) as unknown as Row)
}

const decodeCase = Schema.decodeUnknownEither(CaseMetrics)

/** Folds one case-metrics file into the columns, a chunk of lines at a time. */
const readCaseMetrics = (file: string, iteration: number, runId: string, columns: Columns) =>
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
    // A plain loop over each chunk of lines (io/Files.ts reads 64 KiB at a time, a line decoded on its
    // own), not an effect per line: two runs of a million cases compared (one metric) in 36 s instead of 79.
    let problem: InputError | undefined
    let line = 0
    yield* runWhileSync(readLines(file), (text) => {
      line++
      if (text.trim() === "") return true
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch (e) {
        problem = new InputError({
          file,
          line,
          problem: `not valid JSON: ${e instanceof Error ? e.message : String(e)}`
        })
        return false
      }
      const decoded = decodeCase(parsed)
      if (decoded._tag === "Left") {
        problem = new InputError({ file, line, problem: `not a case-metrics row: ${describeIssues(decoded.left)}` })
        return false
      }
      const { caseId, metrics } = decoded.right
      const i = columns.positionOf(caseId)
      if (columns.lastRead.get(i) === iteration) {
        problem = new InputError({ file, line, field: "caseId", problem: `duplicate caseId "${caseId}"` })
        return false
      }
      columns.lastRead.set(i, iteration)
      for (const metric in metrics) {
        const value = metrics[metric]
        const m = columns.columnOf(metric)
        if (value !== null && value !== undefined) {
          columns.sums[m]!.set(i, columns.sums[m]!.get(i) + value)
          columns.counts[m]!.set(i, columns.counts[m]!.get(i) + 1)
        }
      }
      return true
    }).pipe(Effect.mapError((e) => new InputError({ file, problem: e.problem })))
    if (problem !== undefined) return yield* problem
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
    const columns = new Columns()
    for (const iteration of iterations) {
      yield* readCaseMetrics(Path.join(dir, caseMetricsFile(iteration)), iteration, manifest.runId, columns)
    }
    // The declared metrics this run has a value of (a metric null for every case — one that needs a
    // reference the input did not give — has nothing to compare).
    const declared = manifest.caseMetricSpecs.filter((m) => columns.valued(m.name))
    const cases = caseRows(columns.position, [...columns.metric.keys()], (i, metric) => columns.value(i, metric))
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
