/**
 * The judging core (`engine/Judgments.ts`) on its own: a scripted judge, the memory journal, no
 * HTTP — what it decides before and around a call. (Whole runs through it are in `Chained.test.ts`,
 * `BatchJudging.test.ts` and the e2e tests.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { EvalCase } from "../../src/domain/Case.js"
import { llmTraits } from "../../src/domain/JudgeTraits.js"
import type { Rubric } from "../../src/domain/Rubric.js"
import * as Judgments from "../../src/engine/Judgments.js"
import type { Sink } from "../../src/engine/Judgments.js"
import * as Shutdown from "../../src/engine/Shutdown.js"
import { Judge } from "../../src/judges/Judge.js"
import { noTokens, type Price } from "../../src/pricing/Prices.js"
import * as JudgmentCache from "../../src/store/JudgmentCache.js"
import { JudgmentJournal, layerMemory } from "../../src/store/JudgmentJournal.js"

const rubric: Rubric = {
  id: "toy/grade",
  version: "1",
  name: "Grade",
  description: "A grade.",
  scale: [{ score: 0, label: "No", description: "no" }, { score: 1, label: "Yes", description: "yes" }],
  heuristic: "support",
  confidence: false,
  output: "score",
  evidence: false,
  itemKey: "hit",
  system: ["You grade."],
  user: ["<data name=\"answer\">{{answer}}</data>"],
  hash: "0123456789abcdef",
  path: "toy/grade.json",
  min: 0,
  max: 1
}

/** A remote-looking judge that counts what it is asked. */
const scriptedJudge = () => {
  const asked = { preflights: 0, calls: 0 }
  const layer = Layer.succeed(Judge, {
    provider: "scripted",
    model: "m",
    label: "scripted judge",
    params: {},
    traits: llmTraits,
    judge: () =>
      Effect.sync(() => {
        asked.calls++
        return { status: "ok", score: 1, reason: "yes", usage: { inputTokens: 100, outputTokens: 10 }, attempts: 1 }
      }),
    judgeList: () => Effect.die("not used"),
    preflight: Effect.sync(() => {
      asked.preflights++
      return { inputTokens: 1, outputTokens: 1, structuredOutput: "json_schema", latencyMs: 0 } as const
    })
  })
  return { asked, layer }
}

const c = { id: "c1", ordinal: 0 } as EvalCase
const sink = (): Sink => ({
  state: { done: 0, failed: 0, reused: 0 },
  tokens: noTokens()
})
const price: Price = { input: 1, output: 1 }

const openCore = (judge: Layer.Layer<Judge>, run: Partial<Judgments.RunContext>) =>
  Effect.gen(function*() {
    const journal = yield* (yield* JudgmentJournal).open("/runs/toy/1", { fresh: false })
    const judgments = yield* Judgments.Judgments
    return yield* judgments.open({
      pipeline: "toy",
      runId: "1",
      rubrics: new Map([[rubric.id, rubric]]),
      journal,
      retryFailed: false,
      ...run
    })
  }).pipe(
    Effect.provide(
      Layer.mergeAll(
        Judgments.layer.pipe(
          Layer.provide(
            Layer.mergeAll(judge, JudgmentCache.layerNone, Layer.succeed(Shutdown.Shutdown, Shutdown.make()))
          )
        ),
        layerMemory
      )
    )
  )

describe("the judging core", () => {
  it.effect("the preflight is sent when something is left to judge, and awaited once before the first call", () =>
    Effect.gen(function*() {
      const { asked, layer } = scriptedJudge()
      const core = yield* openCore(layer, { preflight: true })
      const plan = core.plan(c, 1, { rubric: rubric.id, target: "answer", vars: { answer: "a" } })
      const js = yield* core.judge(plan, c, sink())
      expect(js?.map((j) => j.status)).toEqual(["ok"])
      expect(asked).toEqual({ preflights: 1, calls: 1 })
    }))

  it.effect("a run whose --max-cost is spent already sends no preflight and starts no call", () =>
    Effect.gen(function*() {
      const { asked, layer } = scriptedJudge()
      const core = yield* openCore(layer, {
        preflight: true,
        maxCostUsd: 0.5,
        price,
        spentBefore: { spentUsd: 0.5, reservedUsd: 0 }
      })
      const plan = core.plan(c, 1, { rubric: rubric.id, target: "answer", vars: { answer: "a" } })
      expect(yield* core.judge(plan, c, sink())).toBeUndefined()
      expect(core.stopping()).toBe(true)
      yield* Effect.yieldNow()
      expect(asked).toEqual({ preflights: 0, calls: 0 })
    }))
})
