/** `--dry-run`: what a run would cost, computed as the run would plan it, with nothing called or written. */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import type { EvalCase } from "../domain/Case.js"
import { cost } from "../pricing/Prices.js"
import { noTokens } from "../pricing/Prices.js"
import { readOnly } from "../store/JudgmentJournal.js"
import { ESTIMATED_OUTPUT_TOKENS } from "./Budget.js"
import { TARGET_JOURNAL_DIR } from "./Generator.js"
import { CaseRounds, Judgments, type RunJudging, type Sink } from "./Judgments.js"
import { type Pipeline, plannedSpecs } from "./Pipeline.js"
import type { ProgressState } from "./Progress.js"
import type { Estimate, RunOptions } from "./RunTypes.js"
import { limitCases, loadContext, prepare } from "./Validate.js"

/**
 * A case's calls: its rounds walked as far as the journal and the cache hold them whole; the calls
 * of the first round they do not, and (a chained stage) the planned specs of the rounds after it.
 */
const estimateCase = <R, S>(pipeline: Pipeline<R, S>, core: RunJudging, c: EvalCase, iteration: number, sink: Sink) =>
  Effect.flatMap(
    new CaseRounds(pipeline.judge, c).walkEffect((spec) => {
      const plan = core.plan(c, iteration, spec)
      const held = core.fromJournal(plan, sink)
      return held === undefined ? core.judge(plan, c, sink) : Effect.succeed(held)
    }),
    ({ complete, walked }) =>
      Effect.sync(() => {
        if (complete) return
        // The rounds after this one depend on its results: priced from the stage's stand-ins.
        for (const spec of plannedSpecs(pipeline.judge, c).slice(walked)) {
          core.countCall?.(core.plan(c, iteration, spec))
        }
      })
  )

/** `--dry-run`: the calls a run would make and their estimated tokens and cost; nothing is called or written. */
export const estimate = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const prepared = yield* prepare(pipeline, options)
    const { retriever, rubrics, info, generator } = prepared
    options = prepared.options
    const judgments = yield* Judgments
    const local = judgments.identity.traits.runsLocally
    // Read as a run reads it: a torn last line, or a transport failure (asked again), is not done.
    const journal = options.fresh ? undefined : yield* readOnly(Path.join(info.runDir, "judgments.jsonl"))
    const core = yield* judgments.open({
      pipeline: pipeline.name,
      runId: info.runId,
      rubrics,
      journal,
      retryFailed: options.retryFailed
    })
    const state: ProgressState = { done: 0, failed: 0, reused: 0 }
    const sink: Sink = { state, tokens: noTokens() }
    // --target: the answers the target journal holds are judged as they are; each other case is a
    // target call counted (and its judge calls priced on the answer it has, if any).
    const target = generator === undefined || pipeline.generate === undefined
      ? undefined
      : yield* generator.open({
        journal: options.fresh
          ? undefined
          : yield* readOnly(Path.join(info.runDir, TARGET_JOURNAL_DIR, "judgments.jsonl")),
        retryFailed: options.retryFailed
      })
    const fills = pipeline.generate
    const walk = limitCases(pipeline.load.cases(loadContext(options)), options.limit).pipe(
      Stream.mapEffect((c) => retriever.retrieve(c)),
      Stream.mapEffect((c) =>
        target === undefined || fills === undefined ? Effect.succeed(c) : target.generate(c, fills)
      ),
      Stream.runForEach((c) =>
        Effect.gen(function*() {
          for (let iteration = 1; iteration <= options.iterations; iteration++) {
            yield* estimateCase(pipeline, core, c, iteration, sink)
          }
        })
      )
    )
    // A local judge with nothing journaled and no target to ask: every count is 0, known without
    // walking the cases (a million-case walk took minutes of CPU to say so).
    const nothingToCount = local && journal === undefined && target === undefined
    if (!nothingToCount) {
      yield* walk
    }
    const { calls } = core
    const tokens = local
      ? { input: 0, output: 0 }
      : { input: calls.inputTokens, output: calls.judgments * ESTIMATED_OUTPUT_TOKENS }
    return {
      calls: local ? 0 : calls.count,
      judgments: local ? 0 : calls.judgments,
      alreadyDone: state.reused,
      inputTokens: tokens.input,
      outputTokens: tokens.output,
      cost: cost(tokens, options.price),
      runDir: info.runDir,
      ...(target === undefined ? {} : { targetCalls: target.counts.asked })
    } satisfies Estimate
  }))
