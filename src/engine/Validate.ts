/**
 * Before the first judgment: the input validated whole (structure, columns, every case), the
 * rubrics loaded, the run's identity and directory decided, and the directory checked to be this run's.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { EvalCase } from "../domain/Case.js"
import { InputError, OutputError, StoppedValidating, UsageError } from "../domain/Errors.js"
import { resolveGates } from "../domain/Gate.js"
import type { Rubric } from "../domain/Rubric.js"
import { Manifest, readJsonFile } from "../domain/RunFiles.js"
import { isRunId, runIdProblem } from "../domain/RunId.js"
import { loadRubric, sha256 } from "../judges/Prompt.js"
import { checkUserRubric, heuristicRefusal } from "../judges/UserRubrics.js"
import { hashInput, scanInput } from "../load/Rows.js"
import { CaseIds, type Duplicate } from "./CaseIds.js"
import { Generator } from "./Generator.js"
import { headlineSpecs } from "./Headline.js"
import { canonicalJson } from "./JudgmentKey.js"
import { Judgments } from "./Judgments.js"
import { collectBeforeLargePass, passCollections } from "./Memory.js"
import { isListSpec, type Pipeline, plannedSpecs, type RunInfo, runRubrics, specJudgments } from "./Pipeline.js"
import { Retriever } from "./Retriever.js"
import type { RunOptions, Validated } from "./RunTypes.js"
import { Shutdown } from "./Shutdown.js"

export const loadContext = (options: RunOptions) => ({
  file: options.input,
  columns: options.columns,
  generated: options.generated
})

/**
 * The validation pass, ended by a stop request (Ctrl+C, SIGTERM) rather than run to its end: nothing is
 * judged or written before it finishes, so there is nothing to save (without a Shutdown service —
 * tests, library use — it runs as it is).
 */
const stoppable = <A, E, R>(pass: Effect.Effect<A, E, R>, input: string) =>
  Effect.flatMap(Effect.serviceOption(Shutdown), (shutdown) =>
    Option.isNone(shutdown)
      ? pass
      : Effect.raceFirst(
        pass,
        Effect.zipRight(shutdown.value.requested, Effect.fail(new StoppedValidating({ input })))
      ))

/** Validate everything about the input before any judge is called. */
const validate = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions, rubrics: ReadonlyMap<string, Rubric>) =>
  Effect.gen(function*() {
    // A large input: a full collection every so many rows of each pass (Memory.ts says why).
    const collections = passCollections(options.input)
    const scan = yield* scanInput(
      options.input,
      collections === undefined ? undefined : {
        check: (_row, ordinal) => {
          collections(ordinal)
          return Effect.void
        }
      }
    )
    yield* pipeline.load.checkColumns(loadContext(options), scan.columns)
    const ids = new CaseIds()
    const cases = limitCases(pipeline.load.cases(loadContext(options)), options.limit)
    type Counts = { cases: number; tasks: number }
    /** A case's rubrics checked against the pipeline's, and its judgments counted. */
    const checkSpecs = (acc: Counts, c: EvalCase): Effect.Effect<Counts, UsageError> => {
      // Every round's specs (a chained stage's later rounds with stand-in inputs): their rubrics and count.
      const specs = plannedSpecs(pipeline.judge, c)
      for (const spec of specs) {
        const rubric = rubrics.get(spec.rubric)
        if (rubric === undefined) {
          return Effect.fail(
            new UsageError({
              problem:
                `pipeline ${pipeline.name} asks for rubric "${spec.rubric}", which it does not list in judge.rubrics`
            })
          )
        }
        if (isListSpec(spec) !== (rubric.item !== undefined)) {
          return Effect.fail(
            new UsageError({
              problem: isListSpec(spec)
                ? `pipeline ${pipeline.name} judges a list with rubric "${rubric.id}", which has no item template (not a listwise rubric)`
                : `pipeline ${pipeline.name} judges one target with rubric "${rubric.id}", which is a listwise rubric`
            })
          )
        }
        acc.tasks += specJudgments(spec)
      }
      acc.cases++
      return Effect.succeed(acc)
    }
    const counts = yield* cases.pipe(
      Stream.runFoldEffect(
        { cases: 0, tasks: 0 },
        (acc, c): Effect.Effect<Counts, InputError | UsageError> => {
          collections?.(c.ordinal)
          const earlier = ids.add(c.id, c.ordinal)
          if (earlier === undefined) return checkSpecs(acc, c)
          return Effect.flatMap(
            firstWithId(cases, c, earlier),
            (first): Effect.Effect<Counts, InputError | UsageError> =>
              Option.match(first, {
                onNone: () => checkSpecs(acc, c),
                onSome: (line) =>
                  Effect.fail(
                    new InputError({
                      file: options.input,
                      line: c.line,
                      field: "id",
                      problem: `duplicate case id "${c.id}" (first on line ${line})`
                    })
                  )
              })
          )
        }
      )
    )
    if (counts.cases === 0) {
      return yield* new InputError({ file: options.input, problem: "no cases to evaluate" })
    }
    return {
      rows: scan.rows,
      sha256: scan.sha256,
      columns: scan.columns,
      cases: counts.cases,
      tasks: counts.tasks
    } satisfies Validated
  })

/**
 * The line of the earlier case with `c`'s id, when `CaseIds` says there may be one: by its position
 * (an id that is its row's number), or looked for from the start (a hash met again: none when the
 * first case with this id is `c` itself — two ids that share a 64-bit hash).
 */
export const firstWithId = <E, R>(
  cases: Stream.Stream<EvalCase, E, R>,
  c: EvalCase,
  earlier: Duplicate
): Effect.Effect<Option.Option<number>, E, R> =>
  "ordinal" in earlier
    ? Effect.map(
      Stream.runHead(Stream.drop(cases, earlier.ordinal)),
      (first) => Option.some(Option.match(first, { onNone: () => NaN, onSome: (f) => f.line }))
    )
    : Effect.map(
      Stream.runHead(Stream.filter(cases, (f) => f.id === c.id)),
      Option.flatMap((f) => f.ordinal < c.ordinal ? Option.some(f.line) : Option.none())
    )

export const limitCases = <E, R>(cases: Stream.Stream<EvalCase, E, R>, limit: number | undefined) =>
  limit === undefined ? cases : Stream.take(cases, limit)

export const ensureWritableDir = (dir: string) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(dir, { recursive: true })
      fs.accessSync(dir, fs.constants.W_OK)
    },
    catch: (e) => new OutputError({ path: dir, problem: `output directory is not writable: ${(e as Error).message}` })
  })

/**
 * What a run directory's manifest says of its input when it is the same run (identity) over the same
 * bytes, and it was validated: rows, columns, cases, judgments per iteration. Undefined otherwise —
 * including a manifest that does not decode (the input is then validated again, as for a new run).
 */
const validatedBefore = (runDir: string, identityHash: string, sha: string): Effect.Effect<Validated | undefined> =>
  Effect.map(
    Effect.option(readJsonFile(Manifest, Path.join(runDir, "manifest.json"), "a rag-eval manifest")),
    (found) => {
      if (Option.isNone(found)) return undefined
      const m = found.value
      if (m.identity !== identityHash || m.input.sha256 !== sha) return undefined
      return {
        rows: m.input.rows,
        sha256: sha,
        columns: m.input.columns,
        cases: m.input.cases,
        tasks: m.judgmentsPerIteration
      }
    }
  )

/** Everything decided before the first judgment: validated input, rubrics, run identity. */
export const prepare = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions) =>
  Effect.gen(function*() {
    const judge = (yield* Judgments).identity
    const retriever = yield* Retriever
    // --target: the live system answers the cases (Generate.ts), if the pipeline says what it fills.
    const generator = Option.getOrUndefined(yield* Effect.serviceOption(Generator))
    if (generator !== undefined && pipeline.generate === undefined) {
      return yield* new UsageError({
        problem:
          `pipeline ${pipeline.name} does not take its answers from a live system: --target applies to pipelines that judge answers and declare what the live system fills (\`generate\`; \`rag-eval run --help\` lists the built-in ones)`
      })
    }
    const target = generator?.description
    if (target !== undefined) options = { ...options, generated: true }
    if (!Number.isInteger(options.iterations) || options.iterations < 1) {
      return yield* new UsageError({ problem: `--iterations must be a whole number ≥ 1 (got ${options.iterations})` })
    }
    // A user's own rubrics: a wrong directory, or a judge that cannot judge them, stops the run here.
    const user = pipeline.userRubrics
    if (user?.problem !== undefined) return yield* new UsageError({ problem: user.problem })
    if (user !== undefined && user.ids.length > 0 && !judge.traits.languageModel) {
      return yield* heuristicRefusal(user)
    }
    const rubricList = yield* Effect.forEach(runRubrics(pipeline.judge, options.columns), (id) =>
      user !== undefined && user.ids.includes(id)
        ? Effect.flatMap(loadRubric(id, [user.dir]), (r) =>
          checkUserRubric(r, user))
        : loadRubric(id, options.promptDirs))
    const rubrics = new Map(rubricList.map((r) => [r.id, r]))
    const identityOf = (inputSha256: string) =>
      sha256(canonicalJson({
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
        columns: options.columns,
        // Another system (URL, template, paths, model), or asking every case: another run.
        ...(target === undefined ? {} : { target: { identity: target.identity, regenerate: target.regenerate } })
      }))
    // The CLI checks --run-id as it parses it; a library caller gets the same check.
    if (options.runId !== undefined && !isRunId(options.runId)) {
      return yield* new UsageError({ problem: `run id ${runIdProblem(options.runId)}` })
    }
    const runDirOf = (identityHash: string) =>
      Path.join(options.outRoot, pipeline.name, options.runId ?? identityHash.slice(0, 12))
    // Resuming: the same bytes as a run that was validated give the same validation, so the run's
    // manifest answers instead of a second pass over a large input (a hash is ~1 s for 500 MB).
    const sha = options.fresh ? undefined : hashInput(options.input)
    const known = sha === undefined
      ? undefined
      : yield* validatedBefore(runDirOf(identityOf(sha)), identityOf(sha), sha)
    if (known === undefined) {
      collectBeforeLargePass(options.input)
    }
    const input: Validated = known ?? (yield* stoppable(validate(pipeline, options, rubrics), options.input))
    const identityHash = identityOf(input.sha256)
    const runDir = runDirOf(identityHash)
    const runId = Path.basename(runDir)
    const info: RunInfo = {
      pipeline: pipeline.name,
      description: pipeline.description,
      runId,
      runDir,
      judge: {
        provider: judge.provider,
        model: judge.model,
        label: judge.label,
        params: judge.params,
        ...(judge.endpoint === undefined ? {} : { endpoint: judge.endpoint }),
        traits: judge.traits
      },
      rubrics: rubricList,
      input: {
        path: options.input,
        sha256: input.sha256,
        rows: input.rows,
        cases: input.cases,
        columns: input.columns
      },
      iterations: options.iterations,
      concurrency: options.concurrency,
      limit: options.limit,
      retriever: { name: retriever.name, params: retriever.params },
      price: options.price ?? null
    }
    // A gate naming no declared metric, off its scale or against its direction costs nothing: it stops here.
    if (options.gates !== undefined) {
      yield* resolveGates(options.gates, headlineSpecs(pipeline, info))
    }
    return { judge, retriever, rubrics, rubricList, input, identityHash, info, options, generator }
  })

/** A run directory belongs to one run: refuse to mix another run's journal into it. */
export const checkRunDir = (runDir: string, identityHash: string, fresh: boolean) =>
  Effect.gen(function*() {
    const path = Path.join(runDir, "manifest.json")
    if (fresh || !fs.existsSync(path)) return
    const previous = yield* readJsonFile(Manifest, path, "a rag-eval manifest").pipe(
      Effect.mapError((e) =>
        new InputError({ file: path, problem: `${e.problem}; use --fresh to start this run over` })
      )
    )
    if (previous.identity !== identityHash) {
      return yield* new UsageError({
        problem:
          `${runDir} holds a different run (its input, judge, prompts or settings differ), so its journal cannot be resumed here; use another --run-id, or --fresh to overwrite it`
      })
    }
  })
