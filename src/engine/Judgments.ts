/**
 * The judging core: the one place that knows what judging a plan means. Every path that judges —
 * the ordered pool of remote calls, the synchronous loop of a local judge, `--batch`, `--dry-run`,
 * `serve`, the cluster's coordinator and `report`'s replay — asks it, and keeps only its own
 * scheduling. The rules it holds:
 *
 * - **the order**: the run's journal, then the cache of earlier runs, then the judge;
 * - **what a resume keeps**: a success, or a judge failure unless `--retry-failed` (a transport
 *   failure is always asked again);
 * - **replay** (`rag-eval report`): the journal only; a judgment it lacks is an error, or with
 *   `--partial` leaves its case out;
 * - **when to stop**: Ctrl+C, the first fatal provider error, or `--max-cost`: no new call starts;
 * - **the tally**: judgments by source and outcome, tokens spent by this invocation;
 * - **budget admission**: a call starts only within `--max-cost`, counting what the run spent in
 *   earlier invocations.
 *
 * Three layers: `layer` (judges), `layerReplay` (the journal only: `rag-eval report` needs no judge)
 * and `layerEstimate` (`--dry-run`: counts the calls it would make).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { EvalCase } from "../domain/Case.js"
import { type FatalJudgeError, type OutputError, UsageError } from "../domain/Errors.js"
import type { JudgeTraits } from "../domain/JudgeTraits.js"
import {
  addUsage,
  type JudgeTask,
  type Judgment,
  type ListJudgeTask,
  noUsage,
  type RepairCheckpoint,
  type Verdict
} from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import { annotateSpan, traced } from "../domain/Spans.js"
import type { BatchCalls } from "../judges/CallReader.js"
import { Judge, type JudgeStopped, type PreflightReport } from "../judges/Judge.js"
import { render } from "../judges/Prompt.js"
import { addUsageTo, type MutableTokens, type Price } from "../pricing/Prices.js"
import type { StructuredOutput } from "../providers/LlmProvider.js"
import type { RateGateStats } from "../providers/RateGate.js"
import { turnstile } from "../providers/Turns.js"
import { JudgmentCache } from "../store/JudgmentCache.js"
import { type OpenedJournal, State } from "../store/JudgmentJournal.js"
import { type Budget, make as makeBudget } from "./Budget.js"
import { keyFor, listKeys, toJudgment } from "./JudgmentKey.js"
import { isListSpec, type JudgeSpec, type JudgeStage } from "./Pipeline.js"
import type { ProgressState } from "./Progress.js"
import { ClusterJudging } from "./RemoteJudging.js"
import { Shutdown } from "./Shutdown.js"
import type { SpentBefore } from "./Spent.js"

/** A case as judging needs it: its id (in every key) and its position (in every judgment). */
export type CaseRef = Pick<EvalCase, "id" | "ordinal">

/** Who judges, as far as keys, run identity and reports need to know: no way to call it. */
export interface JudgeIdentity {
  readonly provider: string
  readonly model: string
  readonly label: string
  readonly params: Readonly<Record<string, unknown>>
  readonly endpoint?: string | undefined
  /** What the judge declares of itself: `runsLocally` verdicts are never cached and journaled in batches. */
  readonly traits: JudgeTraits
}

export const identityOf = (judge: Judge["Type"]): JudgeIdentity => ({
  provider: judge.provider,
  model: judge.model,
  label: judge.label,
  params: judge.params,
  ...(judge.endpoint === undefined ? {} : { endpoint: judge.endpoint }),
  traits: judge.traits
})

/**
 * What judging one spec of one case means, pointwise or listwise alike: its keys (one per judgment)
 * and the task a judge is asked. Plain data: a heuristic run plans 600k of them.
 */
export type Plan =
  | { readonly list: false; readonly rubric: Rubric; readonly keys: ReadonlyArray<string>; readonly task: JudgeTask }
  | { readonly list: true; readonly rubric: Rubric; readonly keys: ReadonlyArray<string>; readonly task: ListJudgeTask }

/** Where a plan's judgments came from: this run's journal, the cache of earlier runs, or the judge now. */
export type Source = "journal" | "cache" | "judge"

/** Where counted judgments go: the iteration's progress and token counts. */
export interface Sink {
  readonly state: ProgressState
  readonly tokens: MutableTokens
}

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

/** What a run tells the core about itself. */
export interface RunContext {
  readonly pipeline: string
  readonly runId: string
  readonly rubrics: ReadonlyMap<string, Rubric>
  /** The run's journal (read-only for `--dry-run`); absent for `serve`, which has no run. */
  readonly journal?: OpenedJournal | undefined
  readonly retryFailed: boolean
  /** Send the preflight now (something is left to judge); it is awaited before the first call. */
  readonly preflight?: boolean | undefined
  /** `--max-cost` and the model's price. */
  readonly maxCostUsd?: number | undefined
  readonly price?: Price | undefined
  /** What the run spent in earlier invocations (journaled usage, open batches), counted against `--max-cost`. */
  readonly spentBefore?: SpentBefore | undefined
  /** `serve`: a fatal provider error fails the judgments it met, and the next request tries again. */
  readonly latchFatal?: boolean | undefined
  /** `--batch`: keys this invocation collected from its batches, counted as judged now (not reused). */
  readonly collected?: ReadonlySet<string> | undefined
  /**
   * Each call, until its judgments are journaled, runs through it: `serve`'s fair share of the judge
   * for the request, a runner's permit (what a killed runner can have paid for and lost).
   */
  readonly around?: (<A, E>(call: Effect.Effect<A, E>) => Effect.Effect<A, E>) | undefined
}

/** The core, opened for one run. */
export interface RunJudging {
  readonly identity: JudgeIdentity
  readonly mode: "live" | "replay" | "estimate"
  /** `report --partial`: a case not wholly in the journal is left out (no record), and every report says so. */
  readonly partial: boolean
  /** A local judge's synchronous form: the sync path judges a batch of cases in a plain loop. */
  readonly sync: boolean
  readonly plan: (c: CaseRef, iteration: number, spec: JudgeSpec) => Plan
  /**
   * Whether a plan is done, and its judgments, without counting them: what the journal holds and
   * this run keeps, else (a remote judge) what the cache holds. `--batch` plans its rounds by it.
   */
  readonly lookup: (plan: Plan) => Effect.Effect<ReadonlyArray<Judgment> | undefined>
  /** The judgments of a plan the journal holds and this run keeps, counted as reused; undefined otherwise. */
  readonly fromJournal: (plan: Plan, sink: Sink) => ReadonlyArray<Judgment> | undefined
  /** `fromJournal` without counting: what the journal holds for a plan that this run keeps. */
  readonly held: (plan: Plan) => ReadonlyArray<Judgment> | undefined
  /**
   * Count `judgments` successful judgments the journal holds as reused, for a case whose record a
   * killed run already wrote (`HeldRecords.ts`): the case is not read from the journal again.
   */
  readonly countHeld: (sink: Sink, judgments: number) => void
  /**
   * The judgments of a plan the journal does not hold: from the cache, else the judge (one call for
   * a whole list), journaled and counted. Undefined when not judged now: the run is stopping, the
   * call would pass `--max-cost`, a partial replay, or `--dry-run` (which counts the call instead).
   * Replay fails with a `UsageError` naming the judgment the journal lacks.
   */
  readonly judge: (
    plan: Plan,
    c: CaseRef,
    sink: Sink
  ) => Effect.Effect<ReadonlyArray<Judgment> | undefined, OutputError | UsageError>
  /** The same rule for a synchronous local judge, without an Effect per judgment (the sync path). */
  readonly judgeSync: (plan: Plan, c: CaseRef, sink: Sink) => ReadonlyArray<Judgment> | undefined | UsageError
  /** Journal what local judges made since the last flush (they are journaled a batch at a time). */
  readonly flush: Effect.Effect<void, OutputError>
  /** Ctrl+C, the first fatal provider error, or `--max-cost`: no new call starts. */
  readonly stopping: () => boolean
  /** Stop the run as Ctrl+C does (`--batch`: the next batch would pass `--max-cost`). */
  readonly requestStop: Effect.Effect<void>
  /** Completes when a stop is requested (a wait races it to end at once). */
  readonly stopRequested: Effect.Effect<void>
  readonly fatal: () => FatalJudgeError | undefined
  readonly budget: Budget | undefined
  /** The preflight's report once it has come back. */
  readonly preflight: () => PreflightReport | undefined
  /** Wait for the preflight; false when it found the provider misconfigured (the run stops). */
  readonly awaitPreflight: Effect.Effect<boolean>
  readonly tally: Tally
  /** `--dry-run`: the calls counted so far, the judgments they make, their prompts' tokens. */
  readonly calls: { count: number; judgments: number; inputTokens: number }
  /** `--dry-run`: count a call the case will need in a round not planned yet (see `JudgeStage.planned`). */
  readonly countCall?: ((plan: Plan) => void) | undefined
  /** Record verdicts made outside `judge` (a batch's replies) as judgments of a plan: journaled, cached. */
  readonly record: (
    plan: Plan,
    verdicts: ReadonlyArray<Verdict>,
    latencyMs: number,
    via?: "batch"
  ) => Effect.Effect<ReadonlyArray<Judgment>, OutputError>
  /** Whether a journal state is one this run keeps. */
  readonly kept: (state: State | undefined) => boolean
  /**
   * A case the live system gave no answer (`--target`, see `Generate.ts`): every judgment of the plan
   * failed with that reason, counted, not journaled (the target's journal holds the failure) and
   * never asked of the judge.
   */
  readonly unanswered: (plan: Plan, c: CaseRef, sink: Sink, reason: string) => ReadonlyArray<Judgment>
}

export class Judgments extends Context.Tag("rag-eval/Judgments")<Judgments, {
  readonly identity: JudgeIdentity
  readonly open: (run: RunContext) => Effect.Effect<RunJudging>
  /** A remote judge's rate gate (concurrency, 429s, pace), for progress and the manifest. */
  readonly gate?: Effect.Effect<RateGateStats> | undefined
  /** How a remote judge's answers are constrained now (after the preflight's fallback, if any). */
  readonly structuredOutput?: (() => StructuredOutput) | undefined
  /** A remote judge whose provider has a Batch API: its calls as data (`--batch`). */
  readonly calls?: BatchCalls | undefined
}>() {}

/** Stands in when a judge returned fewer verdicts than items (a bug in that judge), so the gap is visible. */
const missingVerdict: Verdict = {
  status: "failed",
  score: null,
  reason: "the judge returned no verdict for this item",
  usage: noUsage,
  attempts: 0
}

/** The usage of a call's verdicts together. */
const sumUsage = (verdicts: ReadonlyArray<Verdict>) => verdicts.reduce((u, v) => addUsage(u, v.usage), noUsage)

/** Whether a run keeps a journaled judgment: a success, or a judge failure unless `--retry-failed`. */
export const keeps = (state: State | undefined, retryFailed: boolean): boolean =>
  state === State.ok || (state === State.judgeFailed && !retryFailed)

/** The plan of a spec: keys and task. Shared by every layer (keys never depend on who judges). */
const planner =
  (identity: JudgeIdentity, run: RunContext) => (c: CaseRef, iteration: number, spec: JudgeSpec): Plan => {
    const rubric = run.rubrics.get(spec.rubric)
    if (rubric === undefined) {
      throw new Error(
        `pipeline ${run.pipeline} asks for rubric "${spec.rubric}", which it does not list in judge.rubrics`
      )
    }
    if (isListSpec(spec)) {
      return {
        list: true,
        rubric,
        keys: listKeys(run.pipeline, identity, rubric, c, iteration, spec),
        task: {
          pipeline: run.pipeline,
          caseId: c.id,
          ordinal: c.ordinal,
          iteration,
          rubric,
          vars: spec.vars,
          items: spec.items,
          pool: spec.pool
        }
      }
    }
    return {
      list: false,
      rubric,
      keys: [keyFor(run.pipeline, identity, rubric, c, iteration, spec)],
      task: {
        pipeline: run.pipeline,
        caseId: c.id,
        ordinal: c.ordinal,
        iteration,
        rubric,
        target: spec.target,
        vars: spec.vars,
        pool: spec.pool
      }
    }
  }

/** The judgments of a plan from its verdicts (one per key). */
const judgmentsOf = (
  identity: JudgeIdentity,
  plan: Plan,
  verdicts: ReadonlyArray<Verdict>,
  latencyMs: number,
  via?: "batch"
): Array<Judgment> => {
  const mark = (j: Judgment): Judgment => via === undefined ? j : { ...j, via }
  if (!plan.list) {
    return [mark(toJudgment(plan.keys[0]!, plan.task, verdicts[0] ?? missingVerdict, identity, latencyMs))]
  }
  const task = plan.task
  return task.items.map((item, i) =>
    mark(toJudgment(plan.keys[i]!, task, verdicts[i] ?? missingVerdict, identity, latencyMs, item.target))
  )
}

const missing = (run: RunContext, plan: Plan, c: CaseRef) =>
  new UsageError({
    problem:
      `run ${run.runId} is incomplete: the ${plan.rubric.name} judgment of case ${c.id} (iteration ${plan.task.iteration}) is not in its journal; resume the run with its original command, then report (or render what the journal holds with report --partial)`
  })

/** The state every layer shares: the tally and the counting of judgments into it. */
const makeCounter = (collected?: ReadonlySet<string>) => {
  const tally: Tally = { total: 0, ok: 0, failed: 0, reused: 0, cached: 0, input: 0, output: 0 }
  const count = (sink: Sink, j: Judgment, asked: Source) => {
    // --batch: what this invocation collected from its batches was judged now (and paid now).
    const source = asked === "journal" && collected?.has(j.key) === true ? "judge" : asked
    sink.state.done++
    tally.total++
    if (source === "journal") {
      sink.state.reused++
      tally.reused++
    } else if (source === "cache") {
      sink.state.reused++
      tally.cached++
    } else {
      tally.input += j.usage.inputTokens
      tally.output += j.usage.outputTokens
    }
    addUsageTo(sink.tokens, j.usage, j.via)
    if (j.status === "failed") {
      sink.state.failed++
      tally.failed++
    } else tally.ok++
    return j
  }
  const countHeld = (sink: Sink, judgments: number) => {
    sink.state.done += judgments
    sink.state.reused += judgments
    tally.total += judgments
    tally.reused += judgments
    tally.ok += judgments
  }
  return { tally, count, countHeld }
}

/** See `RunJudging.unanswered`: the same in every layer. */
const unansweredBy =
  (identity: JudgeIdentity, count: (sink: Sink, j: Judgment, s: Source) => Judgment) =>
  (plan: Plan, c: CaseRef, sink: Sink, reason: string): ReadonlyArray<Judgment> => {
    const verdict: Verdict = {
      status: "failed",
      failure: "judge",
      score: null,
      reason: `no answer to judge: ${reason}`,
      usage: noUsage,
      attempts: 0
    }
    return judgmentsOf(identity, plan, plan.keys.map(() => verdict), 0).map((j) =>
      count(sink, { ...j, caseId: c.id, ordinal: c.ordinal }, "judge")
    )
  }

/** The journal part of the rule, the same in every layer. */
const journalReader = (run: RunContext, count: (sink: Sink, j: Judgment, s: Source) => Judgment) => {
  const kept = (state: State | undefined) => keeps(state, run.retryFailed)
  const held = (plan: Plan): ReadonlyArray<Judgment> | undefined => {
    const journal = run.journal
    if (journal === undefined) return undefined
    for (const key of plan.keys) if (!kept(journal.state(key))) return undefined
    return plan.keys.map((key) => journal.judgment(key)!)
  }
  const fromJournal = (plan: Plan, sink: Sink): ReadonlyArray<Judgment> | undefined =>
    held(plan)?.map((j) => count(sink, j, "journal"))
  return { kept, held, fromJournal }
}

/** The characters of a plan's prompt, as rendered from its rubric: what `--max-cost` and `--dry-run` price a call by. */
export const promptChars = (plan: Plan): number => {
  const { system, user } = plan.list
    ? render(plan.rubric, plan.task.vars, plan.task.items.map((i) => i.vars))
    : render(plan.rubric, plan.task.vars)
  return system.length + user.length
}

/** A journal that refuses writes: the replay and estimate layers never call it. */
const noWrites = (what: string) => () => Effect.dieMessage(`${what} must not write judgments`)

// ---------------------------------------------------------------------------------------------
// The live layer

/** Judging with the judge: journal → cache → judge, within the budget, until stopping. */
export const make = Effect.gen(function*() {
  const judge = yield* Judge
  const cache = yield* JudgmentCache
  const shutdown = yield* Shutdown
  const remote = yield* ClusterJudging
  const identity = identityOf(judge)
  const open = (run: RunContext) =>
    Effect.gen(function*() {
      const { tally, count, countHeld } = makeCounter(run.collected)
      const { kept, held, fromJournal } = journalReader(run, count)
      const journal = run.journal
      const lookup = (plan: Plan) =>
        Effect.suspend(() => {
          const js = held(plan)
          if (js !== undefined || identity.traits.runsLocally) return Effect.succeed(js)
          return Effect.map(
            Effect.forEach(plan.keys, (key) => cache.get(key)),
            (hits) => hits.every(Option.isSome) ? hits.map((h) => h.value) : undefined
          )
        })
      const budget = run.maxCostUsd === undefined || run.price === undefined
        ? undefined
        : makeBudget(run.maxCostUsd, run.price, run.spentBefore)
      const latch = run.latchFatal ?? true
      /** The first fatal provider error: no new call starts, and the run ends with it (exit 2). */
      let fatal: FatalJudgeError | undefined
      const stopping = () => fatal !== undefined || shutdown.stopping() || budget?.reached() === true
      const noteFatal = (e: FatalJudgeError) => {
        if (latch) fatal ??= e
      }

      // The preflight (one tiny request: key, model, URL, answer format) runs while the run starts up
      // and is awaited before the first judge call (not before: a run with nothing left to judge
      // never fails on it, and resumes offline). A fatal finding stops the run as a fatal judgment would.
      // A run whose budget is spent already starts no call: it sends no preflight either.
      const preflightFiber: Fiber.Fiber<PreflightReport, FatalJudgeError | JudgeStopped> | undefined =
        run.preflight === true && judge.preflight !== undefined && budget?.exhausted() !== true
          ? yield* Effect.forkDaemon(judge.preflight)
          : undefined
      let preflight: PreflightReport | undefined
      const firstWave = turnstile()
      const awaitPreflight: Effect.Effect<boolean> = preflightFiber === undefined ?
        Effect.succeed(true) :
        Effect.suspend(() =>
          preflight !== undefined ? Effect.succeed(true) : Fiber.join(preflightFiber).pipe(
            Effect.map((report) => {
              // Several workers may be waiting for it: its tokens count once, as this invocation's spend.
              if (preflight === undefined) {
                preflight = report
                tally.input += report.inputTokens
                tally.output += report.outputTokens
              }
              return true
            }),
            // The workers that waited for it go on one a turn of the event loop: each first call is
            // sent (its connection opened) as soon as it is ready, not after every worker's first
            // steps (the first wave went out 5–6 ms after the preflight's reply instead of 15–18).
            Effect.zipLeft(firstWave),
            Effect.catchAll((e) =>
              Effect.sync(() => {
                if (e._tag === "FatalJudgeError") noteFatal(e)
                return false
              })
            )
          )
        )

      let localPending: Array<Judgment> = []
      const flush = Effect.suspend(() => {
        if (localPending.length === 0 || journal === undefined) return Effect.void
        const batch = localPending
        localPending = []
        return journal.append(batch)
      })

      const record = (plan: Plan, verdicts: ReadonlyArray<Verdict>, latencyMs: number, via?: "batch") =>
        Effect.gen(function*() {
          const js = judgmentsOf(identity, plan, verdicts, latencyMs, via)
          if (identity.traits.runsLocally) {
            // Local verdicts cost nothing to redo: journaled a batch at a time (`flush`), never cached.
            localPending.push(...js)
            return js
          }
          if (journal !== undefined) yield* journal.append(js)
          yield* Effect.forEach(js, (j) => cache.put(j), { discard: true })
          return js
        })

      const ask = (plan: Plan, repair: RepairCheckpoint | undefined) =>
        plan.list
          ? judge.judgeList({ ...plan.task, repair })
          : Effect.map(judge.judge({ ...plan.task, repair }), (v) => [v])

      /** `judgeUntraced` as a span (`--trace-otlp`): the case, the rubric, the first key; then outcome, tokens, attempts. */
      const judgePlan = (
        plan: Plan,
        c: CaseRef,
        sink: Sink
      ): Effect.Effect<ReadonlyArray<Judgment> | undefined, OutputError | UsageError> =>
        judgeUntraced(plan, c, sink).pipe(
          Effect.tap((js) =>
            js === undefined ?
              annotateSpan("rag_eval.outcome", "not judged") :
              annotateSpan({
                "rag_eval.outcome": js.every((j) => j.status === "ok") ? "ok" : "failed",
                "rag_eval.input_tokens": js.reduce((n, j) => n + j.usage.inputTokens, 0),
                "rag_eval.output_tokens": js.reduce((n, j) => n + j.usage.outputTokens, 0),
                "rag_eval.attempts": js[0]?.attempts ?? 0
              })
          ),
          traced("Judgments.judge", {
            attributes: {
              "rag_eval.pipeline": run.pipeline,
              "rag_eval.case_id": c.id,
              "rag_eval.rubric": plan.rubric.id,
              "rag_eval.judgment_key": plan.keys[0]!,
              "rag_eval.judgments": plan.keys.length
            }
          })
        )

      const judgeUntraced = (
        plan: Plan,
        c: CaseRef,
        sink: Sink
      ): Effect.Effect<ReadonlyArray<Judgment> | undefined, OutputError | UsageError> =>
        Effect.gen(function*() {
          if (stopping()) return undefined
          if (!identity.traits.runsLocally) {
            const hits = yield* Effect.forEach(plan.keys, (key) => cache.get(key))
            if (hits.every(Option.isSome)) {
              const js = hits.map((h): Judgment => ({ ...h.value, caseId: c.id, ordinal: c.ordinal, fromCache: true }))
              if (journal !== undefined) yield* journal.append(js)
              return js.map((j) => count(sink, j, "cache"))
            }
          }
          if (remote !== undefined && journal !== undefined) {
            if (!(yield* awaitPreflight)) return undefined
            // A runner of the cluster makes the call and journals its judgments (cluster/Coordinator.ts).
            const sent = yield* Effect.either(
              remote.judge({
                runId: `${run.pipeline}/${run.runId}`,
                keys: plan.keys,
                task: plan.task,
                states: plan.keys.map((k) => journal.state(k))
              })
            )
            if (sent._tag === "Left") {
              if (sent.left._tag === "OutputError") return yield* sent.left
              noteFatal(sent.left)
              return undefined
            }
            if (sent.right === undefined) return undefined
            const landed = sent.right
            yield* journal.remember === undefined
              ? journal.append(landed)
              : Effect.sync(() => journal.remember!(landed))
            return landed.map((j) => count(sink, j, "judge"))
          }
          // A paid reply awaiting repair is journaled under the call's first key; one a crash left is
          // where this judgment continues from.
          const callKey = plan.keys[0]!
          const prior = journal !== undefined && journal.state(callKey) === State.attempt
            ? journal.pendingRepair(callKey)
            : undefined
          const repair: RepairCheckpoint | undefined = identity.traits.runsLocally || journal === undefined
            ? undefined
            : { prior, save: (pending) => journal.appendAttempt(callKey, pending) }
          // The call starts only within the budget; the first that would pass it stops the run.
          let estimateUsd = 0
          if (budget !== undefined) {
            estimateUsd = budget.estimate(promptChars(plan), plan.keys.length, undefined)
            if (!budget.admit(estimateUsd)) {
              yield* shutdown.request
              return undefined
            }
          }
          // The call is made ready (its prompt rendered) while the preflight may still be out: the
          // first wave then only has to be sent when it lands (the answer format is read at send time).
          const call = ask(plan, repair)
          if (!(yield* awaitPreflight)) {
            budget?.settle(estimateUsd, noUsage, undefined)
            return undefined
          }
          // `around` (a runner's permit, `serve`'s fair share) holds from the call's start until its
          // judgments are journaled: a runner killed with kill -9 loses at most its permits' calls, even
          // while its store's commits are slow (they were not in it, and a killed runner lost 13
          // answered calls with 8 permits).
          const callAndRecord = Effect.gen(function*() {
            const started = performance.now()
            const asked = yield* Effect.either(call)
            if (budget !== undefined) {
              budget.settle(estimateUsd, asked._tag === "Right" ? sumUsage(asked.right) : noUsage, undefined)
            }
            if (asked._tag === "Left") {
              if (asked.left._tag === "OutputError") {
                return yield* asked.left
              }
              // Never asked (the run is stopping) or the provider is misconfigured: nothing to journal;
              // the first fatal error stops the run once the calls in flight have landed.
              if (asked.left._tag === "FatalJudgeError") {
                if (!latch) return yield* failedAll(plan, c, sink, asked.left.line, started)
                noteFatal(asked.left)
              }
              return undefined
            }
            if (prior !== undefined) {
              // The journaled reply's tokens were paid by the invocation that crashed: not this one's.
              tally.input -= prior.usage.inputTokens
              tally.output -= prior.usage.outputTokens
            }
            const js = yield* record(plan, asked.right, performance.now() - started)
            return js.map((j) => count(sink, j, "judge"))
          })
          return yield* run.around === undefined ? callAndRecord : run.around(callAndRecord)
        })

      /** `serve`: a fatal error fails this plan's judgments with its line (not cached, not journaled). */
      const failedAll = (plan: Plan, c: CaseRef, sink: Sink, reason: string, started: number) =>
        Effect.sync(() => {
          const verdict: Verdict = {
            status: "failed",
            failure: "transport",
            score: null,
            reason,
            usage: noUsage,
            attempts: 1
          }
          return judgmentsOf(identity, plan, plan.keys.map(() => verdict), performance.now() - started).map((j) =>
            count(sink, { ...j, caseId: c.id }, "judge")
          )
        })

      const sync = judge.sync
      const judgeSync = (plan: Plan, _c: CaseRef, sink: Sink): ReadonlyArray<Judgment> | undefined | UsageError => {
        if (stopping()) return undefined
        const started = performance.now()
        const verdicts = plan.list ? sync!.judgeList(plan.task) : [sync!.judge(plan.task)]
        const js = judgmentsOf(identity, plan, verdicts, performance.now() - started)
        for (const j of js) {
          localPending.push(j)
          count(sink, j, "judge")
        }
        return js
      }

      return {
        identity,
        mode: "live",
        partial: false,
        sync: sync !== undefined,
        plan: planner(identity, run),
        lookup,
        fromJournal,
        held,
        countHeld,
        judge: judgePlan,
        judgeSync,
        flush,
        stopping,
        requestStop: shutdown.request,
        stopRequested: shutdown.requested,
        fatal: () => fatal,
        budget,
        preflight: () => preflight,
        awaitPreflight,
        tally,
        calls: { count: 0, judgments: 0, inputTokens: 0 },
        record,
        kept,
        unanswered: unansweredBy(identity, count)
      } satisfies RunJudging
    })
  return { identity, open, gate: judge.gate, structuredOutput: judge.structuredOutput, calls: judge.calls }
})

export const layer: Layer.Layer<Judgments, never, Judge | JudgmentCache | Shutdown> = Layer.effect(Judgments, make)

// ---------------------------------------------------------------------------------------------
// Replay: the journal only

/**
 * `rag-eval report`: every judgment from the run's journal; nothing is judged, written or cached. A
 * judgment the journal lacks is an error, or (`partial`) leaves its case out.
 */
export const layerReplay = (
  identity: JudgeIdentity,
  options: { readonly partial?: boolean | undefined } = {}
): Layer.Layer<Judgments> =>
  Layer.succeed(Judgments, {
    identity,
    open: (run) =>
      Effect.sync(() => {
        const { tally, count, countHeld } = makeCounter()
        const { kept, held, fromJournal } = journalReader(run, count)
        const lacking = (plan: Plan, c: CaseRef) => options.partial === true ? undefined : missing(run, plan, c)
        return {
          identity,
          mode: "replay",
          partial: options.partial === true,
          // Nothing is called: the plain loop reads the journal fastest.
          sync: true,
          plan: planner(identity, run),
          lookup: (plan) => Effect.succeed(held(plan)),
          fromJournal,
          held,
          countHeld,
          judge: (plan, c) => {
            const why = lacking(plan, c)
            return why === undefined ? Effect.succeed(undefined) : Effect.fail(why)
          },
          judgeSync: (plan, c) => lacking(plan, c),
          flush: Effect.void,
          stopping: () => false,
          requestStop: Effect.void,
          stopRequested: Effect.never,
          fatal: () => undefined,
          budget: undefined,
          preflight: () => undefined,
          awaitPreflight: Effect.succeed(true),
          tally,
          calls: { count: 0, judgments: 0, inputTokens: 0 },
          record: noWrites("report"),
          kept,
          unanswered: unansweredBy(identity, count)
        } satisfies RunJudging
      })
  })

// ---------------------------------------------------------------------------------------------
// Estimate: what a run would call

/**
 * `--dry-run`: the run's journal (read-only) and the cache say what is done; every other plan is a
 * call counted (with its prompt's tokens, ≈ 4 characters a token), never made.
 */
export const layerEstimate: Layer.Layer<Judgments, never, Judge | JudgmentCache> = Layer.effect(
  Judgments,
  Effect.gen(function*() {
    const judge = yield* Judge
    const cache = yield* JudgmentCache
    const identity = identityOf(judge)
    return {
      identity,
      open: (run: RunContext) =>
        Effect.sync(() => {
          const { tally, count, countHeld } = makeCounter()
          const { kept, held, fromJournal } = journalReader(run, count)
          const calls = { count: 0, judgments: 0, inputTokens: 0 }
          const judgeEstimate = (plan: Plan, c: CaseRef, sink: Sink) =>
            Effect.gen(function*() {
              if (!identity.traits.runsLocally) {
                const hits = yield* Effect.forEach(plan.keys, (key) => cache.get(key))
                if (hits.every(Option.isSome)) {
                  return hits.map((h) => count(sink, { ...h.value, caseId: c.id, ordinal: c.ordinal }, "cache"))
                }
              }
              // A list is one call, made again whole unless every item is already judged.
              countCall(plan)
              return undefined
            })
          const countCall = (plan: Plan) => {
            calls.count++
            calls.judgments += plan.keys.length
            // A local judge sends no prompt: rendering one to count its tokens was most of a dry run's time.
            if (!identity.traits.runsLocally) calls.inputTokens += Math.ceil(promptChars(plan) / 4)
          }
          return {
            identity,
            mode: "estimate",
            partial: false,
            sync: false,
            plan: planner(identity, run),
            lookup: (plan) => Effect.succeed(held(plan)),
            fromJournal,
            held,
            countHeld,
            judge: judgeEstimate,
            judgeSync: () => undefined,
            flush: Effect.void,
            stopping: () => false,
            requestStop: Effect.void,
            stopRequested: Effect.never,
            fatal: () => undefined,
            budget: undefined,
            preflight: () => undefined,
            awaitPreflight: Effect.succeed(true),
            tally,
            calls,
            countCall,
            record: noWrites("--dry-run"),
            kept,
            unanswered: unansweredBy(identity, count)
          } satisfies RunJudging
        })
    }
  })
)

// ---------------------------------------------------------------------------------------------
// A case, round by round

/**
 * The rounds of one case's judgments: the judge stage's first round, then (a chained stage) each
 * next round built from every judgment made so far, until the stage asks for none. The paths drive
 * it their own way — the pool hands a round's calls to its workers, the sync loop judges them in
 * place, `--batch` submits a round and collects it, replay reads them from the journal.
 */
export class CaseRounds {
  private specs: ReadonlyArray<JudgeSpec>
  private readonly made: Array<Judgment> = []
  constructor(private readonly stage: JudgeStage, readonly c: EvalCase) {
    this.specs = stage.tasks(c)
  }
  /** The specs of the round under way (empty once the case is complete). */
  current(): ReadonlyArray<JudgeSpec> {
    return this.specs
  }
  /** A round's judgments (per spec, in order) are made: the next round's specs, if any. */
  advance(judged: ReadonlyArray<ReadonlyArray<Judgment>>): ReadonlyArray<JudgeSpec> {
    for (const js of judged) this.made.push(...js)
    this.specs = this.stage.next === undefined ? [] : this.stage.next(this.c, this.made)
    return this.specs
  }
  /** Every judgment of the case, round by round (what its score stage gets). */
  judgments(): ReadonlyArray<Judgment> {
    return this.made
  }

  /**
   * Walk the rounds from the one under way, each spec through `step`: its judgments; `undefined`,
   * not judged now (the round is incomplete: the walk asks the round's other specs, then ends); or
   * `null`, stop at once. A round whose specs are all judged opens the next. The sync path, `report`'s
   * replay, `--dry-run` and `--batch`'s frontier walk a case this way (`walkEffect` for a step that
   * is an Effect); the pool hands each round's calls to its workers instead.
   */
  walk(step: (spec: JudgeSpec) => ReadonlyArray<Judgment> | undefined | null): Walked {
    let walked = 0
    for (let specs = this.specs; specs.length > 0;) {
      const judged: Array<ReadonlyArray<Judgment>> = []
      let complete = true
      for (const spec of specs) {
        const js = step(spec)
        if (js === null) return { complete: false, walked: walked + judged.length }
        if (js === undefined) complete = false
        else judged.push(js)
      }
      walked += specs.length
      if (!complete) return { complete, walked }
      specs = this.advance(judged)
    }
    return { complete: true, walked }
  }

  /** `walk` with a step that is an Effect (the same rule: a round opens the next once all its specs are judged). */
  walkEffect<E, R>(
    step: (spec: JudgeSpec) => Effect.Effect<ReadonlyArray<Judgment> | undefined, E, R>
  ): Effect.Effect<Walked, E, R> {
    const from = (walked: number): Effect.Effect<Walked, E, R> => {
      const specs = this.specs
      if (specs.length === 0) return Effect.succeed({ complete: true, walked })
      return Effect.flatMap(Effect.forEach(specs, step), (judged) => {
        const done = walked + specs.length
        if (judged.some((js) => js === undefined)) return Effect.succeed({ complete: false, walked: done })
        this.advance(judged as ReadonlyArray<ReadonlyArray<Judgment>>)
        return from(done)
      })
    }
    return Effect.suspend(() => from(0))
  }
}

/** How far a walk of a case's rounds went: whether every round is judged, and the specs it asked. */
export interface Walked {
  readonly complete: boolean
  readonly walked: number
}
