/**
 * Judging: each case's specs become plans (keys + the task a judge is asked); a plan the journal
 * holds is reused, else taken from the cache, else asked of the judge — remote judges through the
 * ordered pool (`concurrency` calls in flight, records in input order), local ones in batches or a
 * plain synchronous loop. Every judgment is journaled as it lands; the first fatal provider error or
 * Ctrl+C stops new calls.
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { EvalCase } from "../domain/Case.js"
import { type FatalJudgeError, type OutputError, UsageError } from "../domain/Errors.js"
import { addUsage, type Judgment, type JudgeTask, type ListJudgeTask, noUsage, type RepairCheckpoint, type Verdict } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import type { RemoteJudging } from "../cluster/RemoteJudging.js"
import type { Judge, JudgeStopped, PreflightReport } from "../judges/Judge.js"
import { addUsageTo, type MutableTokens } from "../pricing/Prices.js"
import type { ProgressState } from "../report/Progress.js"
import type { JudgmentCache } from "../store/JudgmentCache.js"
import { type OpenedJournal, State } from "../store/JudgmentJournal.js"
import { listReader, pointReader } from "../judges/LlmJudge.js"
import type { Budget } from "./Budget.js"
import { keyFor, listKeys, toJudgment } from "./JudgmentKey.js"
import * as OrderedPool from "./OrderedPool.js"
import { isListSpec, type JudgeSpec, type Pipeline } from "./Pipeline.js"
import { precomputed, type Retriever } from "./Retriever.js"
import type { RunOptions } from "./RunTypes.js"
import type { Shutdown } from "./Shutdown.js"
import { limitCases, loadContext } from "./Validate.js"

type JudgeSync = NonNullable<Judge["Type"]["sync"]>

/** The usage of a call's verdicts together. */
const sumUsage = (verdicts: ReadonlyArray<Verdict>): Verdict["usage"] =>
  verdicts.reduce((u, v) => addUsage(u, v.usage), noUsage)

/** Stands in when a judge returned fewer verdicts than items (a bug in that judge), so the gap is visible. */
const missingVerdict: Verdict = { status: "failed", score: null, reason: "the judge returned no verdict for this item", usage: noUsage, attempts: 0 }

/** Cases judged together by a local judge: one stream element and one journal write per batch. */
const LOCAL_BATCH = 32

/** This invocation's counts: judgments by source and outcome, tokens spent. */
export interface Tally {
  total: number
  ok: number
  failed: number
  reused: number
  cached: number
  input: number
  output: number
}

export interface JudgingContext<R, S> {
  readonly pipeline: Pipeline<R, S>
  readonly options: RunOptions
  readonly runId: string
  readonly judge: Judge["Type"]
  readonly retriever: Retriever["Type"]
  readonly rubrics: ReadonlyMap<string, Rubric>
  readonly journal: OpenedJournal
  readonly cache: JudgmentCache["Type"]
  readonly shutdown: Shutdown["Type"]
  /** The preflight under way (see the runner), or undefined when none is sent. */
  readonly preflightFiber: Fiber.Fiber<PreflightReport, FatalJudgeError | JudgeStopped> | undefined
  /** `run … --cluster`: judge calls go to the cluster's runners (src/cluster/); undefined in a local run. */
  readonly remote?: RemoteJudging | undefined
  // --- --batch and --max-cost (see BatchJudging.ts, Budget.ts)
  /** `--max-cost`: no call starts that would pass it. */
  readonly budget?: Budget | undefined
  /** Keys this invocation collected from batches: counted as judged now, not as reused. */
  readonly collected?: ReadonlySet<string> | undefined
  // ---
}

export const makeJudging = <R, S>(ctx: JudgingContext<R, S>) => {
  const { pipeline, options, runId, judge, retriever, rubrics, journal, cache, shutdown, preflightFiber, remote, budget } = ctx
  let preflight: PreflightReport | undefined
  const tally: Tally = { total: 0, ok: 0, failed: 0, reused: 0, cached: 0, input: 0, output: 0 }
  /** The first fatal provider error: no new call starts, and the run ends with it (exit 2). */
  let fatal: FatalJudgeError | undefined
  const stopping = () => fatal !== undefined || shutdown.stopping() || budget?.reached() === true
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

  const count = (state: ProgressState, iterTokens: Tokens, j: Judgment, asked: "journal" | "cache" | "judge") => {
    // --batch: what this invocation collected from its batches was judged now (and paid now).
    const source = asked === "journal" && ctx.collected?.has(j.key) === true ? "judge" : asked
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
    addUsageTo(iterTokens, j.usage, j.via)
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
      problem: `run ${runId} is incomplete: the ${rubric.name} judgment of case ${c.id} (iteration ${iteration}) is not in its journal; resume the run with its original command, then report (or render what the journal holds with report --partial)`
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

  type Tokens = MutableTokens
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
      // --- cluster: a runner makes the call and journals its judgments (src/cluster/Coordinator.ts)
      if (remote !== undefined) {
        const sent = yield* Effect.either(remote.judge({ runId: `${pipeline.name}/${runId}`, keys: plan.keys, task: plan.task, states: plan.keys.map((k) => journal.state(k)) }))
        if (sent._tag === "Left") {
          if (sent.left._tag === "OutputError") return yield* sent.left
          fatal ??= sent.left
          return plan.keys.map(() => Option.none<Judgment>())
        }
        if (sent.right === undefined) return plan.keys.map(() => Option.none<Judgment>())
        const landed = sent.right
        yield* journal.remember === undefined ? journal.append(landed) : Effect.sync(() => journal.remember!(landed))
        return landed.map((j) => count(state, iterTokens, j, "judge"))
      }
      // --- end cluster
      // A paid reply awaiting repair is journaled under the call's first key; one a crash left is
      // where this judgment continues from.
      const callKey = plan.keys[0]!
      const prior = journal.state(callKey) === State.attempt ? journal.pendingRepair(callKey) : undefined
      const repair: RepairCheckpoint | undefined = judge.local ? undefined : { prior, save: (pending) => journal.appendAttempt(callKey, pending) }
      // --- --max-cost: the call starts only within the budget; the first that would pass it stops the run.
      let estimateUsd = 0
      if (budget !== undefined) {
        const request = (plan.list ? listReader(plan.task) : pointReader(plan.task)).request
        estimateUsd = budget.estimate(request.system.length + request.user.length, plan.keys.length, undefined)
        if (!budget.admit(estimateUsd)) {
          yield* shutdown.request
          return plan.keys.map(() => Option.none<Judgment>())
        }
      }
      // ---
      const started = performance.now()
      const asked = yield* Effect.either(ask(plan, repair))
      if (budget !== undefined) budget.settle(estimateUsd, asked._tag === "Right" ? sumUsage(asked.right) : noUsage, undefined)
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
        // report --partial: a case not wholly in the journal is left out (no record).
        if (options.replay === true && options.partial === true) return Effect.succeed({ tasks: [], finish: Effect.void })
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
        if (options.replay === true && options.partial === true) return Effect.succeed(plan.keys.map(() => Option.none<Judgment>()))
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
        if (options.replay === true && options.partial === true) return Effect.succeed(Option.none<R>())
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
  const workers = remote?.workers ?? options.concurrency
  const window = Math.max(4, workers * 2)
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
      workers,
      window,
      stopping,
      start: (c) => caseWork(c, iteration, state, iterTokens, emit)
    })
  }

  return {
    tally,
    judgeIteration,
    // --- for --batch (BatchJudging.ts): the same plans, verdict-to-judgment step and preflight.
    planSpec,
    judgmentsOf,
    awaitPreflight,
    usable,
    /** `--max-cost` stopped the run. */
    budgetReached: (): boolean => budget?.reached() === true,
    // ---
    /** Ctrl+C, or a fatal provider error: no new call starts. */
    stopping,
    /** The first fatal provider error, if any. */
    fatal: (): FatalJudgeError | undefined => fatal,
    /** The preflight's report once it has come back. */
    preflight: (): PreflightReport | undefined => preflight
  }
}
