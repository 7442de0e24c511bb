/** `--dry-run`: what a run would cost, computed as the run would plan it, with nothing called or written. */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import { cost } from "../pricing/Prices.js"
import { JudgmentCache } from "../store/JudgmentCache.js"
import { readStates, State } from "../store/JudgmentJournal.js"
import { keyFor, listKeys, renderSpec } from "./JudgmentKey.js"
import { isListSpec, type Pipeline } from "./Pipeline.js"
import type { Estimate, RunOptions } from "./RunTypes.js"
import { limitCases, loadContext, prepare } from "./Validate.js"

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
