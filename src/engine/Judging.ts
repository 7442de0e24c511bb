/**
 * When each judgment of an iteration is made. What judging a plan means — journal, cache, judge,
 * what a resume keeps, replay, stopping, the budget and the tally — is the core's (`Judgments.ts`);
 * this module only schedules:
 *
 * - remote judges through the ordered pool: `concurrency` calls in flight, records in input order,
 *   a chained stage's next round handed to the workers once its inputs have landed;
 * - a local judge's synchronous form (and `report`'s replay) in a plain loop over batches of cases,
 *   without an Effect per judgment (≈ a third of the cost of a heuristic run).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { EvalCase } from "../domain/Case.js"
import { type InputError, type OutputError, UsageError } from "../domain/Errors.js"
import type { Judgment } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import type { RunGenerating } from "./Generator.js"
import { CaseRounds, type RunJudging, type Sink } from "./Judgments.js"
import * as OrderedPool from "./OrderedPool.js"
import { type Generates, type Pipeline, plannedSpecs, specJudgments } from "./Pipeline.js"
import { precomputed, type Retriever } from "./Retriever.js"
import type { RunOptions } from "./RunTypes.js"
import { limitCases, loadContext } from "./Validate.js"

/** Cases judged together by a local judge: one stream element and one journal write per batch. */
const LOCAL_BATCH = 32

export interface Scheduling<R, S> {
  readonly pipeline: Pipeline<R, S>
  readonly options: RunOptions
  readonly retriever: Retriever["Type"]
  readonly rubrics: ReadonlyMap<string, Rubric>
  readonly core: RunJudging
  /** Calls kept in flight: `--concurrency`, or the cluster's batches in flight × batch size. */
  readonly workers: number
  /** `--target`: each case's answer is asked of the live system before it is judged (`Generator.ts`). */
  readonly generate?: {
    readonly stage: RunGenerating
    readonly fills: Generates
    /** Cases asked at once. */
    readonly concurrency: number
  } | undefined
}

type Failure = OutputError | UsageError

/** A case's record and the judgments it was scored from. */
interface Scored<R> {
  readonly record: R
  readonly judgments: ReadonlyArray<Judgment>
}

/**
 * Judge one iteration's cases, handing each case's record (and the judgments it was scored from) to
 * `emit` in input order. A case the run
 * stopped before finishing (or a partial replay lacks) has no record: `gap` is told. The first
 * `skip` cases are not judged: a resume kept their records (`HeldRecords.ts`).
 */
export const judgeIteration = <R, S>(
  ctx: Scheduling<R, S>,
  iteration: number,
  sink: Sink,
  emit: (record: R, judgments: ReadonlyArray<Judgment>) => Effect.Effect<void, OutputError>,
  options: { readonly skip?: number | undefined; readonly gap?: (() => void) | undefined } = {}
): Effect.Effect<void, Failure | InputError> =>
  Effect.withSpan(judgeIterationUntraced(ctx, iteration, sink, emit, options), "Judging.iteration", {
    attributes: {
      "rag_eval.pipeline": ctx.pipeline.name,
      "rag_eval.iteration": iteration,
      "rag_eval.workers": ctx.workers,
      "rag_eval.kept_cases": options.skip ?? 0
    }
  })

/**
 * The iteration's cases as loaded (after `--limit`), from case `skip` on: passed over by the load
 * stage when it `skips`, else read and dropped.
 */
const loadedCases = <R, S>(ctx: Scheduling<R, S>, skip = 0) => {
  const { load } = ctx.pipeline
  const limit = ctx.options.limit
  if (skip === 0) return limitCases(load.cases(loadContext(ctx.options)), limit)
  if (load.skips !== true) return Stream.drop(limitCases(load.cases(loadContext(ctx.options)), limit), skip)
  return limit !== undefined && limit <= skip
    ? Stream.empty
    : limitCases(load.cases({ ...loadContext(ctx.options), skip }), limit === undefined ? undefined : limit - skip)
}

/**
 * The first case's record as the journal makes it now (nothing counted, nothing judged): undefined
 * when the journal does not hold every judgment of it. A resume compares it with the record on disk.
 */
export const firstRecordFromJournal = <R, S>(
  ctx: Scheduling<R, S>,
  iteration: number
): Effect.Effect<R | undefined, Failure | InputError> =>
  Effect.flatMap(Stream.runHead(loadedCases(ctx)), (head) => {
    if (Option.isNone(head)) return Effect.succeed(undefined)
    return Effect.map(ctx.retriever.retrieve(head.value), (c) => {
      const rounds = new CaseRounds(ctx.pipeline.judge, c)
      const { complete } = rounds.walk((spec) => ctx.core.held(ctx.core.plan(c, iteration, spec)) ?? null)
      return complete ? ctx.pipeline.score.score(c, rounds.judgments(), iteration, ctx.rubrics) : undefined
    })
  })

const judgeIterationUntraced = <R, S>(
  ctx: Scheduling<R, S>,
  iteration: number,
  sink: Sink,
  emit: (record: R, judgments: ReadonlyArray<Judgment>) => Effect.Effect<void, OutputError>,
  options: { readonly skip?: number | undefined; readonly gap?: (() => void) | undefined }
): Effect.Effect<void, Failure | InputError> => {
  const skip = options.skip ?? 0
  const gap = Effect.sync(() => options.gap?.())
  const { pipeline, retriever, rubrics, core } = ctx
  const score = (c: EvalCase, judgments: ReadonlyArray<Judgment>) =>
    pipeline.score.score(c, judgments, iteration, rubrics)
  const loaded = loadedCases(ctx, skip)
  /** The judgments progress counted for a case (`Validate.ts`: every round, from the input as loaded). */
  const planned = (c: EvalCase) => plannedSpecs(pipeline.judge, c).reduce((n, spec) => n + specJudgments(spec), 0)
  /** A case the target or a live retriever changed (its passages): the total follows what it will be judged on. */
  const replanned = (before: EvalCase, after: EvalCase) => {
    if (after.passages !== before.passages) {
      sink.state.unplanned = (sink.state.unplanned ?? 0) + planned(after) - planned(before)
    }
    return after
  }
  // --target: each case retrieved, then answered by the live system (journaled there before it is
  // judged), `concurrency` cases at a time and in input order; then judged as any case.
  const generate = ctx.generate
  const cases = generate === undefined ? loaded : loaded.pipe(
    Stream.mapEffect(
      (c) =>
        Effect.flatMap(retriever.retrieve(c), (r) => generate.stage.generate(r, generate.fills)).pipe(
          Effect.map((g) => replanned(c, g))
        ),
      { concurrency: generate.concurrency }
    )
  )
  const retrieve = generate === undefined ? retriever.retrieve : Effect.succeed<EvalCase>
  /** A case the target gave no answer: its judgments fail with the reason (not asked of the judge). */
  const unanswered = (c: EvalCase, rounds: CaseRounds, reason: string) =>
    rounds.walk((spec) => core.unanswered(core.plan(c, iteration, spec), c, sink, reason))

  if (core.sync) {
    /** A case in place, round after round; none when a plan was not judged (stopping, partial replay). */
    const caseSync = (c: EvalCase): Effect.Effect<Option.Option<Scored<R>>, Failure> => {
      if (c.generated?.status === "skipped") return Effect.succeed(Option.none())
      const rounds = new CaseRounds(pipeline.judge, c)
      if (c.generated?.status === "failed") unanswered(c, rounds, c.generated.reason ?? "the target gave no answer")
      let lacking: UsageError | undefined
      const { complete } = rounds.walk((spec) => {
        const plan = core.plan(c, iteration, spec)
        const js = core.fromJournal(plan, sink) ?? core.judgeSync(plan, c, sink)
        if (js instanceof UsageError) lacking = js
        // Not judged (stopping, a partial replay): the case has no record; nothing more is asked.
        return js instanceof UsageError || js === undefined ? null : js
      })
      if (lacking !== undefined) return Effect.fail(lacking)
      if (!complete) return Effect.succeed(Option.none())
      const judgments = rounds.judgments()
      return Effect.succeed(Option.some({ record: score(c, judgments), judgments }))
    }
    // Batches of cases, so per-element stream overhead does not dominate a judge this fast.
    return cases.pipe(
      Stream.grouped(LOCAL_BATCH),
      Stream.runForEach((chunk) =>
        Effect.forEach(chunk, (c) => Effect.flatMap(retrieve(c), caseSync)).pipe(
          Effect.zipLeft(core.flush),
          Effect.flatMap((records) =>
            Effect.forEach(records, (r) => Option.isSome(r) ? emit(r.value.record, r.value.judgments) : gap, {
              discard: true
            })
          )
        )
      )
    )
  }

  /**
   * A (retrieved) case as work for the pool: the calls of its first round the journal does not hold;
   * the last of a round's calls to land hands out the next round's; its record once every round is done.
   */
  const caseWork = (c: EvalCase): Effect.Effect<OrderedPool.Work<Failure, never>> =>
    Effect.sync(() => {
      const rounds = new CaseRounds(pipeline.judge, c)
      // A case the run stopped before asking the target has no record.
      let incomplete = c.generated?.status === "skipped"
      if (incomplete) return { tasks: [], finish: gap }
      if (c.generated?.status === "failed") unanswered(c, rounds, c.generated.reason ?? "the target gave no answer")
      /** The calls of the round under way (planning on past rounds the journal holds whole). */
      const startRound = (): ReadonlyArray<OrderedPool.Task<Failure, never>> => {
        for (let specs = rounds.current(); specs.length > 0;) {
          const judged: Array<ReadonlyArray<Judgment>> = new Array(specs.length)
          const tasks: Array<OrderedPool.Task<Failure, never>> = []
          let left = 0
          specs.forEach((spec, i) => {
            const plan = core.plan(c, iteration, spec)
            const kept = core.fromJournal(plan, sink)
            if (kept !== undefined) {
              judged[i] = kept
              return
            }
            left++
            tasks.push(Effect.map(core.judge(plan, c, sink), (js) => {
              if (js === undefined) incomplete = true
              else judged[i] = js
              // The round's last call has landed: the next round's calls go to the workers.
              if (--left > 0 || incomplete) return undefined
              rounds.advance(judged)
              return startRound()
            }))
          })
          if (tasks.length > 0) return tasks
          specs = rounds.advance(judged)
        }
        return []
      }
      return {
        tasks: startRound(),
        finish: Effect.suspend(() => {
          if (incomplete || rounds.current().length > 0) return gap
          // A chained stage's later rounds were counted from stand-ins (the offline extractor's
          // claims): the total follows what the judge found.
          if (pipeline.judge.next !== undefined) {
            sink.state.unplanned = (sink.state.unplanned ?? 0) + rounds.judgments().length - planned(c)
          }
          const judgments = rounds.judgments()
          return emit(score(c, judgments), judgments)
        })
      }
    })

  // Remote judges: `workers` fibers, each with one call in flight — after Ctrl+C nothing new
  // starts, and at most `workers` calls can be lost to a crash — over a window of cases wide
  // enough to keep them busy when a slow case at the head holds up the ones behind it (records
  // leave in input order). A window of about twice the workers measured the same at 0 and 100 ms.
  const window = Math.max(4, ctx.workers * 2)
  const live = generate === undefined && retriever.retrieve !== precomputed.retrieve
  return OrderedPool.run(
    live
      ? cases.pipe(
        Stream.mapEffect((c) => Effect.map(retriever.retrieve(c), (r) => replanned(c, r)), { concurrency: window })
      )
      : cases,
    {
      workers: ctx.workers,
      window,
      stopping: core.stopping,
      start: caseWork
    }
  )
}
