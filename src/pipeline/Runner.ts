/**
 * The runner drives a pipeline: validate → load → retrieve → judge → score → aggregate → report.
 *
 * - All input is validated (structure, columns, every case) before the first judge call.
 * - Judgments are appended to the run's journal as each finishes; a re-run of the same command
 *   derives the same run id and skips what the journal already holds.
 * - Cases are processed concurrently but records leave in input order, so reports and CSVs are
 *   stable; records are streamed to disk and aggregated online (memory is flat in the case count).
 */
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { EvalCase } from "../domain/Case.js"
import { InputError, OutputError, TooManyFailures, UsageError } from "../domain/Errors.js"
import type { Judgment, JudgeTask } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import { Judge } from "../judges/Judge.js"
import { loadRubric, sha256 } from "../judges/Prompt.js"
import { scanInput } from "../load/Rows.js"
import { readJsonLines, writeJsonAtomic } from "../report/Files.js"
import { Progress, type ProgressState } from "../report/Progress.js"
import { Reporters } from "../report/Reporter.js"
import { JudgmentJournal } from "../store/JudgmentJournal.js"
import type { Pipeline, RunInfo } from "./Pipeline.js"
import { Retriever } from "./Retriever.js"

export interface RunOptions {
  readonly input: string
  /** Output root; the run writes to `<outRoot>/<pipeline>/<run-id>/`. */
  readonly outRoot: string
  readonly limit?: number | undefined
  readonly iterations: number
  readonly concurrency: number
  readonly maxFailures: number
  /** The command line, recorded in the manifest. */
  readonly command: string
  readonly pipelineFile?: string | undefined
  readonly runId?: string | undefined
  readonly fresh: boolean
  readonly retryFailed: boolean
  readonly promptsDir?: string | undefined
  /** Column/field renames from `--columns`. */
  readonly columns?: Readonly<Record<string, string>> | undefined
  /** Extra facts for the manifest (tool versions…). */
  readonly manifestExtra?: Readonly<Record<string, unknown>> | undefined
}

export interface RunOutcome<S> {
  readonly info: RunInfo
  readonly summaries: ReadonlyArray<S>
  readonly judgments: { readonly total: number; readonly ok: number; readonly failed: number; readonly reused: number }
  readonly tokens: { readonly input: number; readonly output: number }
  readonly files: ReadonlyArray<string>
}

/** A canonical JSON (sorted keys) so identical settings always hash the same. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v)

/** Key of one judgment: everything that could change its verdict. Also the cache key across runs. */
export const judgmentKey = (parts: {
  readonly pipeline: string
  readonly caseId: string
  readonly iteration: number
  readonly criterion: string
  readonly target: string
  readonly promptHash: string
  readonly provider: string
  readonly model: string
  readonly params: Readonly<Record<string, unknown>>
}): string => sha256(canonicalJson(parts)).slice(0, 32)

interface Validated {
  readonly rows: number
  readonly sha256: string
  readonly columns: ReadonlyArray<string>
  readonly cases: number
  readonly tasks: number
}

const loadContext = (options: RunOptions) => ({ file: options.input, columns: options.columns })

/** Validate everything about the input before any judge is called. */
const validate = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions, rubrics: ReadonlyMap<string, Rubric>) =>
  Effect.gen(function*() {
    const scan = yield* scanInput(options.input)
    yield* pipeline.load.checkColumns(loadContext(options), scan.columns)
    const seen = new Map<string, number>()
    const counts = yield* limitCases(pipeline.load.cases(loadContext(options)), options.limit).pipe(
      Stream.runFoldEffect({ cases: 0, tasks: 0 }, (acc, c): Effect.Effect<{ cases: number; tasks: number }, InputError | UsageError> => {
        const earlier = seen.get(c.id)
        if (earlier !== undefined) {
          return Effect.fail(new InputError({ file: options.input, line: c.line, field: "id", problem: `duplicate case id "${c.id}" (first on line ${earlier})` }))
        }
        seen.set(c.id, c.line)
        const specs = pipeline.judge.tasks(c)
        const unknown = specs.find((s) => !rubrics.has(s.rubric))
        if (unknown !== undefined) {
          return Effect.fail(new UsageError({ problem: `pipeline ${pipeline.name} asks for rubric "${unknown.rubric}", which it does not list in judge.rubrics` }))
        }
        acc.cases++
        acc.tasks += specs.length
        return Effect.succeed(acc)
      })
    )
    if (counts.cases === 0) {
      return yield* new InputError({ file: options.input, problem: "no cases to evaluate" })
    }
    return { rows: scan.rows, sha256: scan.sha256, columns: scan.columns, cases: counts.cases, tasks: counts.tasks } satisfies Validated
  })

const limitCases = <E, R>(cases: Stream.Stream<EvalCase, E, R>, limit: number | undefined) =>
  limit === undefined ? cases : Stream.take(cases, limit)

const ensureWritableDir = (dir: string) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(dir, { recursive: true })
      fs.accessSync(dir, fs.constants.W_OK)
    },
    catch: (e) => new OutputError({ path: dir, problem: `output directory is not writable: ${(e as Error).message}` })
  })

/** Buffered line writer for a records file, renamed into place when complete. */
const recordsWriter = (path: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => ({ fd: fs.openSync(`${path}.partial`, "w"), buffer: "" }),
      catch: (e) => new OutputError({ path, problem: `cannot write: ${(e as Error).message}` })
    }),
    (w, exit) =>
      Effect.sync(() => {
        if (w.buffer.length > 0 && exit._tag === "Success") fs.writeSync(w.fd, w.buffer)
        fs.closeSync(w.fd)
        if (exit._tag === "Success") fs.renameSync(`${path}.partial`, path)
      })
  ).pipe(Effect.map((w) => ({
    write: (line: string) =>
      Effect.sync(() => {
        w.buffer += line + "\n"
        if (w.buffer.length >= 1 << 16) {
          fs.writeSync(w.fd, w.buffer)
          w.buffer = ""
        }
      })
  })))

export const run = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions) =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const retriever = yield* Retriever
    const journals = yield* JudgmentJournal
    const reporters = yield* Reporters
    const progress = yield* Progress

    if (!Number.isInteger(options.iterations) || options.iterations < 1) {
      return yield* new UsageError({ problem: `--iterations must be a whole number ≥ 1 (got ${options.iterations})` })
    }
    const rubricList = yield* Effect.forEach(pipeline.judge.rubrics, (id) => loadRubric(id, options.promptsDir))
    const rubrics = new Map(rubricList.map((r) => [r.id, r]))
    const input = yield* validate(pipeline, options, rubrics)

    const identity = {
      pipeline: pipeline.name,
      input: input.sha256,
      limit: options.limit,
      iterations: options.iterations,
      provider: judge.provider,
      model: judge.model,
      params: judge.params,
      prompts: rubricList.map((r) => [r.id, r.hash]),
      retriever: { name: retriever.name, params: retriever.params }
    }
    const runId = options.runId ?? sha256(canonicalJson(identity)).slice(0, 12)
    const runDir = Path.join(options.outRoot, pipeline.name, runId)
    yield* ensureWritableDir(runDir)

    const info: RunInfo = {
      pipeline: pipeline.name,
      description: pipeline.description,
      runId,
      runDir,
      judge: { provider: judge.provider, model: judge.model, label: judge.label, params: judge.params },
      rubrics: rubricList,
      input: { path: options.input, sha256: input.sha256, rows: input.rows, cases: input.cases, columns: input.columns },
      iterations: options.iterations,
      concurrency: options.concurrency,
      limit: options.limit,
      retriever: { name: retriever.name, params: retriever.params }
    }

    const journal = yield* journals.open(runDir, { fresh: options.fresh })
    const total = input.tasks * options.iterations
    if (journal.done.size > 0) {
      yield* progress.note(`resuming run ${runId}: ${Math.min(journal.done.size, total).toLocaleString("en-US")} of ${total.toLocaleString("en-US")} judgments done`)
    }
    if (journal.tornLines > 0) {
      yield* progress.note(`journal: dropped a torn last line (written during a crash); that judgment is made again`)
    }

    const startedAt = new Date().toISOString()
    const manifestPath = Path.join(runDir, "manifest.json")
    const manifest = (extra: Record<string, unknown>) => ({
      tool: "rag-eval",
      ...options.manifestExtra,
      node: process.version,
      command: options.command,
      pipeline: { name: pipeline.name, file: options.pipelineFile },
      runId,
      input: info.input,
      limit: options.limit,
      iterations: options.iterations,
      concurrency: options.concurrency,
      judge: info.judge,
      retriever: info.retriever,
      prompts: rubricList.map((r) => ({ id: r.id, version: r.version, hash: r.hash, path: r.path })),
      startedAt,
      ...extra
    })
    yield* writeJsonAtomic(manifestPath, manifest({ status: "running" }))

    const tally = { total: 0, ok: 0, failed: 0, reused: 0, input: 0, output: 0 }

    const judgeOne = (c: EvalCase, iteration: number, spec: { rubric: string; target: string; vars: Readonly<Record<string, string>> }, state: ProgressState) => {
      const rubric = rubrics.get(spec.rubric)!
      const key = judgmentKey({
        pipeline: pipeline.name,
        caseId: c.id,
        iteration,
        criterion: rubric.id,
        target: spec.target,
        promptHash: rubric.hash,
        provider: judge.provider,
        model: judge.model,
        params: judge.params
      })
      const count = (j: Judgment, reused: boolean) => {
        state.done++
        tally.total++
        if (reused) {
          state.reused++
          tally.reused++
        } else {
          tally.input += j.usage.inputTokens
          tally.output += j.usage.outputTokens
        }
        if (j.status === "failed") {
          state.failed++
          tally.failed++
        } else tally.ok++
        return j
      }
      const prior = journal.done.get(key)
      if (prior !== undefined && !(options.retryFailed && prior.status === "failed")) {
        return Effect.succeed(count(prior, true))
      }
      const task: JudgeTask = { pipeline: pipeline.name, caseId: c.id, ordinal: c.ordinal, iteration, rubric, target: spec.target, vars: spec.vars }
      return Effect.gen(function*() {
        const started = performance.now()
        const v = yield* judge.judge(task)
        const j: Judgment = {
          key,
          caseId: c.id,
          ordinal: c.ordinal,
          iteration,
          criterion: rubric.id,
          target: spec.target,
          status: v.status,
          score: v.score,
          ...(v.confidence === undefined ? {} : { confidence: v.confidence }),
          reason: v.reason,
          ...(v.raw === undefined ? {} : { raw: v.raw }),
          usage: v.usage,
          attempts: v.attempts,
          latencyMs: Math.round(performance.now() - started),
          provider: judge.provider,
          model: judge.model
        }
        yield* journal.append([j])
        return count(j, false)
      })
    }

    const processCase = (c: EvalCase, iteration: number, state: ProgressState) =>
      Effect.gen(function*() {
        const retrieved = yield* retriever.retrieve(c)
        const judgments = yield* Effect.forEach(
          pipeline.judge.tasks(retrieved),
          (spec) => judgeOne(retrieved, iteration, spec, state),
          { concurrency: judge.local ? 1 : "unbounded" }
        )
        return pipeline.score.score(retrieved, judgments, iteration, rubrics)
      })

    // Local judges are synchronous: batch cases so per-element stream overhead does not dominate.
    // Remote judges: a window of cases in flight, wide enough to keep every permit of the rate gate busy.
    const window = Math.max(4, options.concurrency * 2)
    const records = (iteration: number, state: ProgressState) => {
      const cases = limitCases(pipeline.load.cases(loadContext(options)), options.limit)
      return judge.local
        ? cases.pipe(
          Stream.grouped(256),
          Stream.mapEffect((chunk) => Effect.forEach(chunk, (c) => processCase(c, iteration, state))),
          Stream.flattenIterables
        )
        : cases.pipe(Stream.mapEffect((c) => processCase(c, iteration, state), { concurrency: window }))
    }

    const summaries: Array<S> = []
    const files: Array<string> = [manifestPath]
    for (let iteration = 1; iteration <= options.iterations; iteration++) {
      const label = options.iterations === 1 ? pipeline.name : `${pipeline.name} ${iteration}/${options.iterations}`
      const recordsPath = Path.join(runDir, `records-iteration-${iteration}.jsonl`)
      const acc = yield* progress.track(label, input.tasks, (state) =>
        Effect.scoped(Effect.gen(function*() {
          const writer = yield* recordsWriter(recordsPath)
          return yield* records(iteration, state).pipe(
            Stream.runFoldEffect(pipeline.aggregate.init(info), (acc, record) =>
              writer.write(JSON.stringify(record)).pipe(Effect.as(pipeline.aggregate.add(acc, record))))
          )
        })))
      const summary = pipeline.aggregate.finish(acc, info)
      summaries.push(summary)
      files.push(recordsPath)
      const stem = options.iterations === 1 ? "report" : `report-iteration-${iteration}`
      for (const reporter of reporters) {
        const written = yield* reporter.write({
          info,
          summary,
          records: () => readJsonLines<R>(recordsPath),
          view: pipeline.report as never,
          stem
        })
        files.push(...written)
      }
    }

    const summaryPath = Path.join(runDir, "summary.json")
    yield* writeJsonAtomic(summaryPath, {
      run: info,
      judgments: { total: tally.total, ok: tally.ok, failed: tally.failed },
      iterations: summaries
    })
    files.push(summaryPath)
    const outcome: RunOutcome<S> = {
      info,
      summaries,
      judgments: { total: tally.total, ok: tally.ok, failed: tally.failed, reused: tally.reused },
      tokens: { input: tally.input, output: tally.output },
      files
    }
    yield* writeJsonAtomic(manifestPath, manifest({
      status: tally.failed > options.maxFailures ? "failed" : "complete",
      endedAt: new Date().toISOString(),
      counts: { cases: input.cases, judgments: tally.total, ok: tally.ok, failed: tally.failed, reusedFromJournal: tally.reused },
      tokens: outcome.tokens,
      maxFailures: options.maxFailures,
      files: files.map((f) => Path.relative(runDir, f))
    }))
    return outcome
  })

/** Fail with exit code 1 when more judgments failed than allowed (after every file is written). */
export const checkFailures = <S>(outcome: RunOutcome<S>, maxFailures: number) =>
  outcome.judgments.failed > maxFailures
    ? Effect.fail(new TooManyFailures({ failed: outcome.judgments.failed, allowed: maxFailures, runDir: outcome.info.runDir }))
    : Effect.succeed(outcome)

