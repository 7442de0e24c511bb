/**
 * The runner drives a pipeline: validate → load → retrieve → judge → score → aggregate → report.
 *
 * - All input is validated (structure, columns, every case) before the first judge call.
 * - Judgments are appended to the run's journal as each finishes; a re-run of the same command
 *   derives the same run id and skips what the journal already holds.
 * - Cases are processed concurrently but records leave in input order, so reports and CSVs are
 *   stable; records are streamed to disk and aggregated online (memory is flat in the case count).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { EvalCase } from "../domain/Case.js"
import { isRunId, runIdProblem } from "../domain/RunId.js"
import { type FatalJudgeError, InputError, OutputError, Stopped, TooManyFailures, UsageError } from "../domain/Errors.js"
import { type Judgment, type JudgeTask, type ListJudgeTask, noUsage, type RepairCheckpoint, type Verdict } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import { Judge, type JudgeStopped, type PreflightReport } from "../judges/Judge.js"
import { loadRubric, render, sha256 } from "../judges/Prompt.js"
import { cost, type Cost, formatUsd, type Price } from "../pricing/Prices.js"
import { JudgmentCache } from "../store/JudgmentCache.js"
import { finalMarkdown, finalMetrics } from "./Iterations.js"
import { Shutdown } from "./Shutdown.js"
import { hashInput, scanInput } from "../load/Rows.js"
import { readJsonLines, removeLeftovers, writeFileAtomic, writeFully, writeJsonAtomic, writeProblem } from "../report/Files.js"
import { Progress, type ProgressState } from "../report/Progress.js"
import { Reporters } from "../report/Reporter.js"
import { JudgmentJournal, readStates, State } from "../store/JudgmentJournal.js"
import { isListSpec, type JudgeSpec, type ListSpec, type Pipeline, type RunInfo, specJudgments, type TaskSpec } from "./Pipeline.js"
import { CaseIds } from "./CaseIds.js"
import * as OrderedPool from "./OrderedPool.js"
import { precomputed, Retriever } from "./Retriever.js"
import { thousands } from "../domain/Numbers.js"

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
  /** Price of the judge's model (undefined: unknown, reported as such). */
  readonly price?: Price | undefined
  /**
   * `rag-eval report`: rebuild records and reports from the journal only. Nothing is judged, the
   * journal and manifest are left as they are, and a judgment missing from the journal is an error.
   */
  readonly replay?: boolean | undefined
  /** Extra facts for the manifest (tool versions…). */
  readonly manifestExtra?: Readonly<Record<string, unknown>> | undefined
}

export interface RunOutcome<S> {
  readonly info: RunInfo
  readonly summaries: ReadonlyArray<S>
  /** `reused`: from this run's journal; `cached`: from the cache of earlier runs (no API call). */
  readonly judgments: { readonly total: number; readonly ok: number; readonly failed: number; readonly reused: number; readonly cached: number }
  /** Tokens spent by this invocation (reused judgments cost nothing again). */
  readonly tokens: { readonly input: number; readonly output: number }
  /** Cost of the whole run, every iteration (including judgments reused from the journal). */
  readonly cost: Cost
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
  /** Hash of the task's variables: an edited answer or passage is a new judgment, never a stale one. */
  readonly content: string
  readonly iteration: number
  readonly criterion: string
  readonly target: string
  readonly promptHash: string
  readonly provider: string
  readonly model: string
  readonly params: Readonly<Record<string, unknown>>
  /** The judge's server when it is not the provider's public API (see `Judge.endpoint`); absent otherwise. */
  readonly endpoint?: string | undefined
}): string => sha256(keyJson(parts)).slice(0, 32)

/** Judge params → canonical JSON, once per params object (a judge's params never change). */
const paramsJson = new WeakMap<object, string>()

/**
 * `canonicalJson(parts)` of a judgment key, built directly (keys in sorted order): the same string,
 * so keys stay what they were, at a fraction of the cost (it runs for every judgment).
 */
export const keyJson = (parts: Parameters<typeof judgmentKey>[0]): string => {
  let params = paramsJson.get(parts.params)
  if (params === undefined) paramsJson.set(parts.params, params = canonicalJson(parts.params))
  const str = JSON.stringify
  const endpoint = parts.endpoint === undefined ? "" : `"endpoint":${str(parts.endpoint)},`
  return `{"caseId":${str(parts.caseId)},"content":${str(parts.content)},"criterion":${str(parts.criterion)},${endpoint}"iteration":${str(parts.iteration)},"model":${str(parts.model)},"params":${params},"pipeline":${str(parts.pipeline)},"promptHash":${str(parts.promptHash)},"provider":${str(parts.provider)},"target":${str(parts.target)}}`
}

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
    const ids = new CaseIds()
    const cases = limitCases(pipeline.load.cases(loadContext(options)), options.limit)
    const counts = yield* cases.pipe(
      Stream.runFoldEffect({ cases: 0, tasks: 0 }, (acc, c): Effect.Effect<{ cases: number; tasks: number }, InputError | UsageError> => {
        const earlier = ids.add(c.id, c.ordinal, c.line)
        if (earlier !== undefined) {
          // The first one is known by its line, or (an id that is its row's number) by its position.
          const line = "line" in earlier
            ? Effect.succeed(earlier.line)
            : Effect.map(Stream.runHead(Stream.drop(cases, earlier.ordinal)), (first) => Option.match(first, { onNone: () => NaN, onSome: (f) => f.line }))
          return Effect.flatMap(line, (first) =>
            Effect.fail(new InputError({ file: options.input, line: c.line, field: "id", problem: `duplicate case id "${c.id}" (first on line ${first})` })))
        }
        const specs = pipeline.judge.tasks(c)
        for (const spec of specs) {
          const rubric = rubrics.get(spec.rubric)
          if (rubric === undefined) {
            return Effect.fail(new UsageError({ problem: `pipeline ${pipeline.name} asks for rubric "${spec.rubric}", which it does not list in judge.rubrics` }))
          }
          if (isListSpec(spec) !== (rubric.item !== undefined)) {
            return Effect.fail(new UsageError({
              problem: isListSpec(spec)
                ? `pipeline ${pipeline.name} judges a list with rubric "${rubric.id}", which has no item template (not a listwise rubric)`
                : `pipeline ${pipeline.name} judges one target with rubric "${rubric.id}", which is a listwise rubric`
            }))
          }
          acc.tasks += specJudgments(spec)
        }
        acc.cases++
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

/**
 * Buffered line writer for a records file: `<path>.partial`, every write checked, renamed into place
 * when complete (a failure or a stop removes it; a killed run's is removed at the next start).
 */
const recordsWriter = (path: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => ({ fd: fs.openSync(`${path}.partial`, "w"), buffer: "" }),
      catch: (e) => writeProblem(path, e)
    }),
    (w, exit) =>
      Effect.sync(() => {
        fs.closeSync(w.fd)
        if (exit._tag === "Failure") fs.rmSync(`${path}.partial`, { force: true })
      })
  ).pipe(Effect.map((w) => ({
    write: (line: string) =>
      Effect.try({
        try: () => {
          w.buffer += line + "\n"
          if (w.buffer.length >= 1 << 16) {
            writeFully(w.fd, w.buffer)
            w.buffer = ""
          }
        },
        catch: (e) => writeProblem(path, e)
      }),
    /** The rest of the buffer, then the file in place. */
    close: Effect.try({
      try: () => {
        if (w.buffer.length > 0) writeFully(w.fd, w.buffer)
        w.buffer = ""
        fs.renameSync(`${path}.partial`, path)
      },
      catch: (e) => writeProblem(path, e)
    })
  })))

/**
 * What a run directory's manifest says of its input when it is the same run (identity) over the same
 * bytes, and it was validated: rows, columns, cases, judgments per iteration. Undefined otherwise.
 */
const validatedBefore = (runDir: string, identityHash: string, sha: string): Validated | undefined => {
  try {
    const m = JSON.parse(fs.readFileSync(Path.join(runDir, "manifest.json"), "utf8")) as {
      identity?: unknown
      input?: { sha256?: unknown; rows?: unknown; cases?: unknown; columns?: unknown }
      judgmentsPerIteration?: unknown
    }
    const i = m.input
    if (m.identity !== identityHash || i?.sha256 !== sha) return undefined
    if (typeof i.rows !== "number" || typeof i.cases !== "number" || typeof m.judgmentsPerIteration !== "number" || !Array.isArray(i.columns)) return undefined
    return { rows: i.rows, sha256: sha, columns: i.columns as Array<string>, cases: i.cases, tasks: m.judgmentsPerIteration }
  } catch {
    return undefined
  }
}

/** Everything decided before the first judgment: validated input, rubrics, run identity. */
const prepare = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions) =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const retriever = yield* Retriever
    if (!Number.isInteger(options.iterations) || options.iterations < 1) {
      return yield* new UsageError({ problem: `--iterations must be a whole number ≥ 1 (got ${options.iterations})` })
    }
    const rubricList = yield* Effect.forEach(pipeline.judge.rubrics, (id) => loadRubric(id, options.promptsDir))
    const rubrics = new Map(rubricList.map((r) => [r.id, r]))
    const identityOf = (inputSha256: string) => sha256(canonicalJson({
      pipeline: pipeline.name,
      input: inputSha256,
      limit: options.limit,
      iterations: options.iterations,
      provider: judge.provider,
      model: judge.model,
      params: judge.params,
      endpoint: judge.endpoint,
      prompts: rubricList.map((r) => [r.id, r.hash]),
      retriever: { name: retriever.name, params: retriever.params },
      columns: options.columns
    }))
    // The CLI checks --run-id as it parses it; a library caller gets the same check.
    if (options.runId !== undefined && !isRunId(options.runId)) return yield* new UsageError({ problem: `run id ${runIdProblem(options.runId)}` })
    const runDirOf = (identityHash: string) => Path.join(options.outRoot, pipeline.name, options.runId ?? identityHash.slice(0, 12))
    // Resuming: the same bytes as a run that was validated give the same validation, so the run's
    // manifest answers instead of a second pass over a large input (a hash is ~1 s for 500 MB).
    const sha = options.fresh ? undefined : hashInput(options.input)
    const known = sha === undefined ? undefined : validatedBefore(runDirOf(identityOf(sha)), identityOf(sha), sha)
    const input: Validated = known ?? (yield* validate(pipeline, options, rubrics))
    const identityHash = identityOf(input.sha256)
    const runDir = runDirOf(identityHash)
    const runId = Path.basename(runDir)
    const info: RunInfo = {
      pipeline: pipeline.name,
      description: pipeline.description,
      runId,
      runDir,
      judge: { provider: judge.provider, model: judge.model, label: judge.label, params: judge.params, ...(judge.endpoint === undefined ? {} : { endpoint: judge.endpoint }) },
      rubrics: rubricList,
      input: { path: options.input, sha256: input.sha256, rows: input.rows, cases: input.cases, columns: input.columns },
      iterations: options.iterations,
      concurrency: options.concurrency,
      limit: options.limit,
      retriever: { name: retriever.name, params: retriever.params },
      price: options.price ?? null
    }
    return { judge, retriever, rubrics, rubricList, input, identityHash, info }
  })

/** Tasks of one case usually share one vars object: hash it once. */
const contentHashes = new WeakMap<object, string>()
const contentHash = (vars: Readonly<Record<string, string>>) => {
  let hash = contentHashes.get(vars)
  if (hash === undefined) contentHashes.set(vars, hash = sha256(stringRecordJson(vars) ?? canonicalJson(vars)).slice(0, 16))
  return hash
}

/** `canonicalJson` of a record of strings, written directly (the same text, several times faster); undefined for anything else. */
export const stringRecordJson = (vars: Readonly<Record<string, unknown>>): string | undefined => {
  const keys = Object.keys(vars).sort()
  let out = "{"
  for (const key of keys) {
    const value = vars[key]
    if (value === undefined) continue
    if (typeof value !== "string") return undefined
    out += `${out.length === 1 ? "" : ","}${JSON.stringify(key)}:${JSON.stringify(value)}`
  }
  return `${out}}`
}

/** The key of a judge task (also the cache key), as the CLI and `rag-eval serve` both compute it. */
export const taskKey = (judge: Pick<Judge["Type"], "provider" | "model" | "params" | "endpoint">, task: Pick<JudgeTask, "pipeline" | "caseId" | "iteration" | "rubric" | "target" | "vars">) =>
  judgmentKey({
    pipeline: task.pipeline,
    caseId: task.caseId,
    content: contentHash(task.vars),
    iteration: task.iteration,
    criterion: task.rubric.id,
    target: task.target,
    promptHash: task.rubric.hash,
    provider: judge.provider,
    model: judge.model,
    params: judge.params,
    endpoint: judge.endpoint
  })

const keyFor = (pipeline: string, judge: Judge["Type"], rubric: Rubric, c: EvalCase, iteration: number, spec: TaskSpec) =>
  taskKey(judge, { pipeline, caseId: c.id, iteration, rubric, target: spec.target, vars: spec.vars })

/** A list's content hash covers every item: a grade given in context changes with the context. */
const listContentHashes = new WeakMap<ListSpec, string>()
const listContentHash = (spec: ListSpec) => {
  let hash = listContentHashes.get(spec)
  if (hash === undefined) listContentHashes.set(spec, hash = sha256(canonicalJson({ vars: spec.vars, items: spec.items })).slice(0, 16))
  return hash
}

/** Keys of a list's items, one per target. */
const listKeys = (pipeline: string, judge: Judge["Type"], rubric: Rubric, c: EvalCase, iteration: number, spec: ListSpec) =>
  spec.items.map((item) =>
    judgmentKey({
      pipeline,
      caseId: c.id,
      content: listContentHash(spec),
      iteration,
      criterion: rubric.id,
      target: item.target,
      promptHash: rubric.hash,
      provider: judge.provider,
      model: judge.model,
      params: judge.params,
      endpoint: judge.endpoint
    }))

/** The prompt a spec renders to (for token estimates). */
const renderSpec = (rubric: Rubric, spec: JudgeSpec) =>
  isListSpec(spec) ? render(rubric, spec.vars, spec.items.map((i) => i.vars)) : render(rubric, spec.vars)

/** A judgment as journaled: the task's identity, the verdict, and who judged it. */
export const toJudgment = (key: string, task: Pick<JudgeTask, "caseId" | "ordinal" | "iteration" | "rubric" | "target">, v: Verdict, judge: Pick<Judge["Type"], "provider" | "model">, latencyMs: number): Judgment => {
  // Assigned in this order (the journal's line order), optional fields only when present.
  const j: Record<string, unknown> = {
    key,
    caseId: task.caseId,
    ordinal: task.ordinal,
    iteration: task.iteration,
    criterion: task.rubric.id,
    target: task.target,
    status: v.status
  }
  if (v.failure !== undefined) j.failure = v.failure
  j.score = v.score
  if (v.confidence !== undefined) j.confidence = v.confidence
  j.reason = v.reason
  if (v.raw !== undefined) j.raw = v.raw
  j.usage = v.usage
  j.attempts = v.attempts
  j.latencyMs = Math.round(latencyMs)
  j.provider = judge.provider
  j.model = judge.model
  return j as Judgment
}

type JudgeSync = NonNullable<Judge["Type"]["sync"]>

/** Stands in when a judge returned fewer verdicts than items (a bug in that judge), so the gap is visible. */
const missingVerdict: Verdict = { status: "failed", score: null, reason: "the judge returned no verdict for this item", usage: noUsage, attempts: 0 }

/** A run directory belongs to one run: refuse to mix another run's journal into it. */
const checkRunDir = (runDir: string, identityHash: string, fresh: boolean) =>
  Effect.gen(function*() {
    const path = Path.join(runDir, "manifest.json")
    if (fresh || !fs.existsSync(path)) return
    const previous = yield* Effect.try({
      try: () => JSON.parse(fs.readFileSync(path, "utf8")) as { readonly identity?: unknown },
      catch: () => new InputError({ file: path, problem: "manifest is not valid JSON; use --fresh to start this run over" })
    })
    if (previous.identity !== identityHash) {
      return yield* new UsageError({
        problem: `${runDir} holds a different run (its input, judge, prompts or settings differ), so its journal cannot be resumed here; use another --run-id, or --fresh to overwrite it`
      })
    }
  })

/** Cases judged together by a local judge: one stream element and one journal write per batch. */
const LOCAL_BATCH = 32

export interface Estimate {
  readonly calls: number
  /** Judgments those calls make (more than the calls when hits are judged listwise). */
  readonly judgments: number
  readonly alreadyDone: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cost: Cost
  readonly runDir: string
}

/** Output tokens assumed per judgment in estimates (a short reasoning and a score; a listwise call makes several). */
export const ESTIMATED_OUTPUT_TOKENS = 150

/** `--dry-run`: the calls a run would make and their estimated tokens and cost; nothing is called or written. */
export const estimate = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const { judge, retriever, rubrics, info } = yield* prepare(pipeline, options)
    const cache = yield* JudgmentCache
    const journalPath = Path.join(info.runDir, "judgments.jsonl")
    // Read as a run reads it: a torn last line, or a transport failure (asked again), is not done.
    const states = options.fresh ? undefined : yield* readStates(journalPath)
    const kept = (key: string) => {
      const state = states?.(key)
      return state === State.ok || (state === State.judgeFailed && !options.retryFailed)
    }
    let calls = 0
    let judgments = 0
    let alreadyDone = 0
    let inputTokens = 0
    yield* limitCases(pipeline.load.cases(loadContext(options)), options.limit).pipe(
      Stream.mapEffect((c) => retriever.retrieve(c)),
      Stream.runForEach((c) =>
        Effect.forEach(pipeline.judge.tasks(c), (spec) =>
          Effect.gen(function*() {
            const rubric = rubrics.get(spec.rubric)!
            const { system, user } = renderSpec(rubric, spec)
            for (let iteration = 1; iteration <= options.iterations; iteration++) {
              const keys = isListSpec(spec) ? listKeys(pipeline.name, judge, rubric, c, iteration, spec) : [keyFor(pipeline.name, judge, rubric, c, iteration, spec)]
              let present = 0
              for (const key of keys) if (kept(key) || Option.isSome(yield* cache.get(key))) present++
              // A list is one call, made again whole unless every item is already judged.
              if (present === keys.length) {
                alreadyDone += present
              } else {
                calls++
                judgments += keys.length
                inputTokens += Math.ceil((system.length + user.length) / 4)
              }
            }
          }), { discard: true }))
    )
    const outputTokens = judge.local ? 0 : judgments * ESTIMATED_OUTPUT_TOKENS
    const tokens = judge.local ? { input: 0, output: 0 } : { input: inputTokens, output: outputTokens }
    return {
      calls: judge.local ? 0 : calls,
      judgments: judge.local ? 0 : judgments,
      alreadyDone,
      inputTokens: tokens.input,
      outputTokens: tokens.output,
      cost: cost(tokens, options.price),
      runDir: info.runDir
    } satisfies Estimate
  }))

export const run = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions) =>
  Effect.gen(function*() {
    let preflight: PreflightReport | undefined
    const { judge, retriever, rubrics, rubricList, input, identityHash, info } = yield* prepare(pipeline, options)
    const { runId, runDir } = info
    const journals = yield* JudgmentJournal
    const cache = yield* JudgmentCache
    const reporters = yield* Reporters
    const progress = yield* Progress
    const shutdown = yield* Shutdown

    yield* ensureWritableDir(runDir)
    yield* checkRunDir(runDir, identityHash, options.fresh)
    const journal = yield* journals.open(runDir, { fresh: options.fresh })
    const total = input.tasks * options.iterations
    // What the journal holds that this run keeps: successes, and judge failures unless --retry-failed.
    // Transport failures (5xx, timeouts, rate limits past --max-wait) are always asked again.
    const keptOk = journal.stats.ok
    const keptFailed = options.retryFailed ? 0 : journal.stats.judgeFailed
    const leftovers = removeLeftovers(runDir)
    if (leftovers.length > 0) yield* progress.note(`removed what a killed run left behind: ${leftovers.join(", ")}`)
    // The preflight (one tiny request: key, model, URL, answer format) is sent once the input is
    // valid (bad input costs nothing) and only when something is left to judge; it runs while the
    // run starts up and is awaited before the first judge call.
    const preflightFiber = options.replay === true || judge.preflight === undefined || keptOk + keptFailed >= total
      ? undefined
      : yield* Effect.fork(judge.preflight)
    if (keptOk + keptFailed > 0) {
      const failedNote = keptFailed > 0 ? ` (${thousands(keptFailed)} failed judgment${keptFailed === 1 ? "" : "s"} kept; --retry-failed asks again)` : ""
      yield* progress.note(`resuming run ${runId}: ${thousands(Math.min(keptOk + keptFailed, total))} of ${thousands(total)} judgments done${failedNote}`)
    }
    if (journal.stats.damagedLines > 0) {
      yield* progress.note(`journal: skipped ${thousands(journal.stats.damagedLines)} damaged line(s) in the middle (torn by an older version on a full disk); their judgments are made again`)
    }
    if (journal.stats.tornLines > 0) {
      yield* progress.note(`journal: dropped a torn last line (written during a crash); that judgment is made again`)
    }

    const startedAt = new Date().toISOString()
    const manifestPath = Path.join(runDir, "manifest.json")
    const manifest = (extra: Record<string, unknown>) => ({
      tool: "rag-eval",
      ...options.manifestExtra,
      node: process.version,
      command: options.command,
      cwd: process.cwd(),
      pipeline: { name: pipeline.name, file: options.pipelineFile },
      runId,
      identity: identityHash,
      input: info.input,
      columns: options.columns,
      limit: options.limit,
      iterations: options.iterations,
      judgmentsPerIteration: input.tasks,
      concurrency: options.concurrency,
      maxFailures: options.maxFailures,
      judge: info.judge,
      retriever: info.retriever,
      price: options.price ?? null,
      prompts: rubricList.map((r) => ({ id: r.id, version: r.version, hash: r.hash, path: r.path })),
      ...(preflight === undefined ? {} : { preflight }),
      ...(judge.structuredOutput === undefined ? {} : { structuredOutput: judge.structuredOutput() }),
      startedAt,
      ...extra
    })
    const writeManifest = (value: unknown) => options.replay === true ? Effect.void : writeJsonAtomic(manifestPath, value)
    /** The progress line's view of the gate: the concurrency level, 429s met, the pace, a pause under way. */
    const gateDetail = judge.gate === undefined ? undefined : Effect.flatMap(judge.gate, (g) =>
      Effect.map(Clock.currentTimeMillis, (now) =>
        [
          `concurrency ${g.concurrency.current}/${g.concurrency.max}`,
          ...(g.rateLimited > 0 ? [`429s ${thousands(g.rateLimited)}`] : []),
          ...(g.rpm !== undefined ? [`pace ${thousands(Math.round(g.rpm))}/min`] : []),
          ...(g.pausedUntil > now ? [`waiting out a rate limit (${Math.ceil((g.pausedUntil - now) / 1000)} s)`] : [])
        ].join(" · ")))
    /** What the rate gate did (remote judges): the concurrency it settled on, the 429s it met, the pace. */
    const gateFigures = judge.gate === undefined ? Effect.succeed({}) : Effect.map(judge.gate, (g) => ({
      rateControl: {
        concurrency: { max: g.concurrency.max, min: g.concurrency.min, final: g.concurrency.current },
        rateLimited: g.rateLimited,
        ...(g.rpm === undefined ? {} : { pacedRpm: Math.round(g.rpm * 10) / 10 })
      }
    }))
    yield* writeManifest(manifest({ status: "running" }))

    const tally = { total: 0, ok: 0, failed: 0, reused: 0, cached: 0, input: 0, output: 0 }
    /** The first fatal provider error: no new call starts, and the run ends with it (exit 2). */
    let fatal: FatalJudgeError | undefined
    const stopping = () => fatal !== undefined || shutdown.stopping()
    /**
     * The preflight's outcome, awaited before the first judge call (not before: a run with nothing
     * left to judge never fails on it, and resumes offline). A fatal finding stops the run as a
     * fatal judgment would.
     */
    const awaitPreflight: Effect.Effect<boolean> = preflightFiber === undefined ? Effect.succeed(true) : Effect.suspend(() =>
      preflight !== undefined ? Effect.succeed(true) : Fiber.join(preflightFiber).pipe(
        Effect.map((report) => {
          // Several workers may be waiting for it: its tokens count once.
          if (preflight === undefined) {
            preflight = report
            // They are this invocation's spend too (the manifest shows them apart).
            tally.input += report.inputTokens
            tally.output += report.outputTokens
          }
          return true
        }),
        Effect.catchAll((e) => Effect.sync(() => {
          if (e._tag === "FatalJudgeError") fatal ??= e
          return false
        }))
      ))
    let localPending: Array<Judgment> = []
    const flushLocal = Effect.suspend(() => {
      const batch = localPending
      localPending = []
      return journal.append(batch)
    })

    const count = (state: ProgressState, iterTokens: { input: number; output: number }, j: Judgment, source: "journal" | "cache" | "judge") => {
      state.done++
      tally.total++
      if (source === "journal") {
        state.reused++
        tally.reused++
      } else if (source === "cache") {
        state.reused++
        tally.cached++
      } else {
        tally.input += j.usage.inputTokens
        tally.output += j.usage.outputTokens
      }
      iterTokens.input += j.usage.inputTokens
      iterTokens.output += j.usage.outputTokens
      if (j.status === "failed") {
        state.failed++
        tally.failed++
      } else tally.ok++
      return Option.some(j)
    }
    /** A journaled judgment this run keeps: a success, or a judge failure unless --retry-failed. */
    const usable = (state: State | undefined) => state === State.ok || (state === State.judgeFailed && !options.retryFailed)
    const missing = (rubric: Rubric, c: EvalCase, iteration: number) =>
      new UsageError({
        problem: `run ${runId} is incomplete: the ${rubric.name} judgment of case ${c.id} (iteration ${iteration}) is not in its journal; resume the run with its original command, then report`
      })

    /**
     * What judging one spec means, pointwise or listwise alike: its keys (one per judgment) and the
     * task a judge is asked (`ask`, `askSync`); `judgmentsOf` turns the verdicts (one per key) into
     * judgments. Plain data: a heuristic run plans 600k of them.
     */
    type Plan =
      | { readonly list: false; readonly rubric: Rubric; readonly keys: ReadonlyArray<string>; readonly task: JudgeTask }
      | { readonly list: true; readonly rubric: Rubric; readonly keys: ReadonlyArray<string>; readonly task: ListJudgeTask }
    const planSpec = (c: EvalCase, iteration: number, spec: JudgeSpec): Plan => {
      const rubric = rubrics.get(spec.rubric)!
      if (isListSpec(spec)) {
        return {
          list: true,
          rubric,
          keys: listKeys(pipeline.name, judge, rubric, c, iteration, spec),
          task: { pipeline: pipeline.name, caseId: c.id, ordinal: c.ordinal, iteration, rubric, vars: spec.vars, items: spec.items, pool: spec.pool }
        }
      }
      return {
        list: false,
        rubric,
        keys: [keyFor(pipeline.name, judge, rubric, c, iteration, spec)],
        task: { pipeline: pipeline.name, caseId: c.id, ordinal: c.ordinal, iteration, rubric, target: spec.target, vars: spec.vars, pool: spec.pool }
      }
    }
    const ask = (plan: Plan, repair?: RepairCheckpoint): Effect.Effect<ReadonlyArray<Verdict>, JudgeStopped | FatalJudgeError | OutputError> =>
      plan.list ? judge.judgeList({ ...plan.task, repair }) : Effect.map(judge.judge({ ...plan.task, repair }), (v) => [v])
    const askSync = (sync: JudgeSync, plan: Plan): ReadonlyArray<Verdict> =>
      plan.list ? sync.judgeList(plan.task) : [sync.judge(plan.task)]
    const judgmentsOf = (plan: Plan, verdicts: ReadonlyArray<Verdict>, latencyMs: number): Array<Judgment> => {
      if (!plan.list) return [toJudgment(plan.keys[0]!, plan.task, verdicts[0] ?? missingVerdict, judge, latencyMs)]
      const task = plan.task
      return task.items.map((item, i) => toJudgment(plan.keys[i]!, { ...task, target: item.target }, verdicts[i] ?? missingVerdict, judge, latencyMs))
    }

    type Tokens = { input: number; output: number }
    type Judged = ReadonlyArray<Option.Option<Judgment>>

    /** The judgments of a plan already in the journal (counted as reused), or undefined. */
    const fromJournal = (plan: Plan, state: ProgressState, iterTokens: Tokens): Judged | undefined => {
      for (const key of plan.keys) if (!usable(journal.state(key))) return undefined
      return plan.keys.map((key) => count(state, iterTokens, journal.judgment(key)!, "journal"))
    }

    /**
     * The judgments of a plan the journal does not hold: from the cache, else the judge (one call for
     * a whole list). None when the run is stopping before the call.
     */
    const judgePlan = (plan: Plan, c: EvalCase, state: ProgressState, iterTokens: Tokens): Effect.Effect<Judged, OutputError> =>
      Effect.gen(function*() {
        if (stopping()) return plan.keys.map(() => Option.none<Judgment>())
        if (!judge.local) {
          const hits = yield* Effect.forEach(plan.keys, (key) => cache.get(key))
          if (hits.every(Option.isSome)) {
            const js = hits.map((h) => ({ ...h.value, caseId: c.id, ordinal: c.ordinal }))
            yield* journal.append(js)
            return js.map((j) => count(state, iterTokens, j, "cache"))
          }
        }
        if (!(yield* awaitPreflight)) return plan.keys.map(() => Option.none<Judgment>())
        // A paid reply awaiting repair is journaled under the call's first key; one a crash left is
        // where this judgment continues from.
        const callKey = plan.keys[0]!
        const prior = journal.state(callKey) === State.attempt ? journal.pendingRepair(callKey) : undefined
        const repair: RepairCheckpoint | undefined = judge.local ? undefined : { prior, save: (pending) => journal.appendAttempt(callKey, pending) }
        const started = performance.now()
        const asked = yield* Effect.either(ask(plan, repair))
        if (asked._tag === "Left") {
          if (asked.left._tag === "OutputError") return yield* asked.left
          // Never asked (the run is stopping) or the provider is misconfigured: nothing to journal;
          // the first fatal error stops the run once the calls in flight have landed.
          if (asked.left._tag === "FatalJudgeError") fatal ??= asked.left
          return plan.keys.map(() => Option.none<Judgment>())
        }
        if (prior !== undefined) {
          // The journaled reply's tokens were paid by the run that crashed: not this invocation's.
          tally.input -= prior.usage.inputTokens
          tally.output -= prior.usage.outputTokens
        }
        const verdicts = asked.right
        const js = judgmentsOf(plan, verdicts, performance.now() - started)
        if (judge.local) {
          // Local verdicts cost nothing to redo: journal them a chunk at a time.
          localPending.push(...js)
        } else {
          yield* journal.append(js)
          yield* Effect.forEach(js, (j) => cache.put(j), { discard: true })
        }
        return js.map((j) => count(state, iterTokens, j, "judge"))
      })

    /** A case's record from its judgments; none when the run stopped before some were made. */
    const scoreCase = (c: EvalCase, iteration: number, judged: ReadonlyArray<Judged>): Option.Option<R> => {
      const judgments = judged.flat()
      if (judgments.some(Option.isNone)) return Option.none()
      return Option.some(pipeline.score.score(c, judgments.map((j) => Option.getOrThrow(j)), iteration, rubrics))
    }

    /**
     * A (retrieved) case as work for the pool of remote calls: one task per spec the journal does not
     * hold; its record, once every task is done.
     */
    const caseWork = (c: EvalCase, iteration: number, state: ProgressState, iterTokens: Tokens, emit: (record: R) => Effect.Effect<void, OutputError>) =>
      Effect.suspend((): Effect.Effect<OrderedPool.Work<OutputError | UsageError, never>, OutputError | UsageError> => {
        const specs = pipeline.judge.tasks(c)
        const judged: Array<Judged> = new Array(specs.length)
        const tasks: Array<Effect.Effect<void, OutputError | UsageError>> = []
        for (let i = 0; i < specs.length; i++) {
          const plan = planSpec(c, iteration, specs[i]!)
          const reused = fromJournal(plan, state, iterTokens)
          if (reused !== undefined) {
            judged[i] = reused
            continue
          }
          if (options.replay === true) return Effect.fail(missing(plan.rubric, c, iteration))
          tasks.push(Effect.map(judgePlan(plan, c, state, iterTokens), (js) => {
            judged[i] = js
          }))
        }
        return Effect.succeed({
          tasks,
          finish: Effect.suspend(() => Option.match(scoreCase(c, iteration, judged), { onNone: () => Effect.void, onSome: emit }))
        })
      })

    /** A case judged by a local judge without a synchronous form: one spec after another. */
    const processCaseLocal = (c: EvalCase, iteration: number, state: ProgressState, iterTokens: Tokens) =>
      Effect.flatMap(retriever.retrieve(c), (retrieved) =>
        Effect.forEach(pipeline.judge.tasks(retrieved), (spec): Effect.Effect<Judged, OutputError | UsageError> => {
          const plan = planSpec(retrieved, iteration, spec)
          const reused = fromJournal(plan, state, iterTokens)
          if (reused !== undefined) return Effect.succeed(reused)
          if (options.replay === true) return Effect.fail(missing(plan.rubric, retrieved, iteration))
          return judgePlan(plan, retrieved, state, iterTokens)
        }).pipe(Effect.map((judged) => scoreCase(retrieved, iteration, judged))))

    /**
     * A case judged by a synchronous local judge, in a plain loop: the same journal / replay / stop
     * rules as `judgePlan`, without an Effect per judgment (≈ a third of the cost of a heuristic run).
     */
    const processCaseSync = (sync: JudgeSync, c: EvalCase, iteration: number, state: ProgressState, iterTokens: Tokens) =>
      Effect.flatMap(retriever.retrieve(c), (retrieved) => {
        const judgments: Array<Judgment> = []
        for (const spec of pipeline.judge.tasks(retrieved)) {
          const plan = planSpec(retrieved, iteration, spec)
          const reused = fromJournal(plan, state, iterTokens)
          if (reused !== undefined) {
            for (const j of reused) judgments.push(Option.getOrThrow(j))
            continue
          }
          if (options.replay === true) return Effect.fail(missing(plan.rubric, retrieved, iteration))
          if (stopping()) return Effect.succeed(Option.none<R>())
          const started = performance.now()
          const verdicts = askSync(sync, plan)
          for (const j of judgmentsOf(plan, verdicts, performance.now() - started)) {
            localPending.push(j)
            judgments.push(Option.getOrThrow(count(state, iterTokens, j, "judge")))
          }
        }
        return Effect.succeed(Option.some(pipeline.score.score(retrieved, judgments, iteration, rubrics)))
      })

    // Remote judges: `concurrency` workers, each with one call in flight — after Ctrl+C nothing new
    // starts, and at most `concurrency` calls can be lost to a crash — over a window of cases wide
    // enough to keep them busy when a slow case at the head holds up the ones behind it (records
    // leave in input order). A window of about twice the workers measured the same at 0 and 100 ms.
    const window = Math.max(4, options.concurrency * 2)
    const liveRetriever = retriever.retrieve !== precomputed.retrieve
    /** Judge one iteration's cases, handing each record to `emit` in input order. */
    const judgeIteration = (iteration: number, state: ProgressState, iterTokens: Tokens, emit: (record: R) => Effect.Effect<void, OutputError>) => {
      const cases = limitCases(pipeline.load.cases(loadContext(options)), options.limit)
      if (judge.local) {
        // Local judges are synchronous: batch cases so per-element stream overhead does not dominate.
        const sync = judge.sync
        return cases.pipe(
          Stream.grouped(LOCAL_BATCH),
          Stream.runForEach((chunk) =>
            Effect.forEach(chunk, (c) => sync === undefined ? processCaseLocal(c, iteration, state, iterTokens) : processCaseSync(sync, c, iteration, state, iterTokens)).pipe(
              Effect.zipLeft(flushLocal),
              Effect.flatMap((records) => Effect.forEach(records, (r) => Option.isSome(r) ? emit(r.value) : Effect.void, { discard: true }))
            ))
        )
      }
      return OrderedPool.run(liveRetriever ? cases.pipe(Stream.mapEffect((c) => retriever.retrieve(c), { concurrency: window })) : cases, {
        workers: options.concurrency,
        window,
        stopping,
        start: (c) => caseWork(c, iteration, state, iterTokens, emit)
      })
    }

    /** Stopped by Ctrl+C, or by a fatal provider error: the manifest says so; the journal holds what finished. */
    const stopped = () =>
      Effect.flatMap(gateFigures, (gate) =>
        writeManifest(manifest({
          status: "stopped",
          stoppedAt: new Date().toISOString(),
          ...(fatal === undefined ? {} : { stoppedBy: fatal.line }),
          counts: { judgments: tally.total, ok: tally.ok, failed: tally.failed },
          ...gate
        }))).pipe(
          Effect.zipRight(Effect.fail<FatalJudgeError | Stopped>(fatal ?? new Stopped({ done: keptOk + keptFailed + tally.total - tally.reused, total, runDir })))
        )

    const summaries: Array<S> = []
    const recordFiles: Array<string> = []
    const costs: Array<Cost> = []
    const files: Array<string> = options.replay === true ? [] : [manifestPath]
    for (let iteration = 1; iteration <= options.iterations; iteration++) {
      const label = options.iterations === 1 ? pipeline.name : `${pipeline.name} ${iteration}/${options.iterations}`
      const recordsPath = Path.join(runDir, `records-iteration-${iteration}.jsonl`)
      const iterTokens = { input: 0, output: 0 }
      const acc = yield* progress.track(label, input.tasks, (state) =>
        Effect.scoped(Effect.gen(function*() {
          const writer = yield* recordsWriter(recordsPath)
          let folded = pipeline.aggregate.init(info)
          yield* judgeIteration(iteration, state, iterTokens, (record) =>
            Effect.map(writer.write(JSON.stringify(record)), () => {
              folded = pipeline.aggregate.add(folded, record)
            }))
          // Stopping: drop the incomplete records file; the journal holds every finished judgment.
          if (stopping()) return yield* stopped()
          yield* writer.close
          return folded
        })), gateDetail)
      const summary = pipeline.aggregate.finish(acc, info)
      const iterationCost = cost(iterTokens, options.price)
      summaries.push(summary)
      recordFiles.push(recordsPath)
      costs.push(iterationCost)
      files.push(recordsPath)
      const metricsPath = Path.join(runDir, `metrics-iteration-${iteration}.json`)
      const costPath = Path.join(runDir, `cost-iteration-${iteration}.json`)
      yield* writeJsonAtomic(metricsPath, summary)
      yield* writeJsonAtomic(costPath, { iteration, provider: judge.provider, model: judge.model, ...iterationCost })
      files.push(metricsPath, costPath)
      if (pipeline.aggregate.lowScores !== undefined) {
        const lowPath = Path.join(runDir, `low-scores-iteration-${iteration}.json`)
        yield* writeJsonAtomic(lowPath, pipeline.aggregate.lowScores(summary))
        files.push(lowPath)
      }
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

    const totalCost = cost(costs.reduce((t, c) => ({ input: t.input + c.inputTokens, output: t.output + c.outputTokens }), { input: 0, output: 0 }), options.price)
    const final = yield* finalMetrics(pipeline, summaries, recordFiles)
    const finalPath = Path.join(runDir, "final-metrics.json")
    yield* writeJsonAtomic(finalPath, { ...final, cost: { perIteration: costs, total: totalCost } })
    files.push(finalPath)
    if (options.iterations > 1) {
      const finalReport = Path.join(runDir, "final-report.md")
      yield* writeFileAtomic(finalReport, finalMarkdown(final, [
        ...costs.map((c, i) => `- iteration ${i + 1}: ${thousands(c.inputTokens)} in / ${thousands(c.outputTokens)} out tokens, ${formatUsd(c.usd)}`),
        `- total: ${thousands(totalCost.inputTokens)} in / ${thousands(totalCost.outputTokens)} out tokens, ${formatUsd(totalCost.usd)}`
      ]))
      files.push(finalReport)
    }
    const summaryPath = Path.join(runDir, "summary.json")
    yield* writeJsonAtomic(summaryPath, {
      run: info,
      judgments: { total: tally.total, ok: tally.ok, failed: tally.failed },
      cost: totalCost,
      iterations: summaries
    })
    files.push(summaryPath)
    const outcome: RunOutcome<S> = {
      info,
      summaries,
      judgments: { total: tally.total, ok: tally.ok, failed: tally.failed, reused: tally.reused, cached: tally.cached },
      tokens: { input: tally.input, output: tally.output },
      cost: totalCost,
      files
    }
    yield* writeManifest(manifest({
      ...(yield* gateFigures),
      status: tally.failed > options.maxFailures ? "failed" : "complete",
      endedAt: new Date().toISOString(),
      counts: { cases: input.cases, judgments: tally.total, ok: tally.ok, failed: tally.failed, reusedFromJournal: tally.reused, fromCache: tally.cached },
      tokens: outcome.tokens,
      cost: totalCost,
      files: files.map((f) => Path.relative(runDir, f))
    }))
    return outcome
  })

/** Fail with exit code 1 when more judgments failed than allowed (after every file is written). */
export const checkFailures = <S>(outcome: RunOutcome<S>, maxFailures: number) =>
  outcome.judgments.failed > maxFailures
    ? Effect.fail(new TooManyFailures({ failed: outcome.judgments.failed, allowed: maxFailures, runDir: outcome.info.runDir }))
    : Effect.succeed(outcome)
