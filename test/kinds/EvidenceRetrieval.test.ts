/**
 * The evidence-retrieval stages on hand-made data: loading (aliases, latency, usage), settings from
 * the environment, the per-query record, cost, and the online summary — which must equal
 * `evaluateEvidence` on the same queries.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import type { EvalCase } from "../../src/domain/Case.js"
import { summarize } from "../../src/engine/CaseFold.js"
import { headlineValues } from "../../src/engine/Headline.js"
import {
  type EvidenceRecord,
  evidenceScore,
  evidenceSummary,
  loadQueries,
  queryCost,
  settingsFromOptions
} from "../../src/kinds/evidence/EvidenceRetrieval.js"
import { evaluateEvidence } from "../../src/metrics/evidence.js"
import { decodeVariables } from "../../src/retrieval/RetrievalSetup.js"
import { precomputedWith } from "../../src/retrieval/RetrievalSetup.js"
import { runInfo, writeInput } from "../support/Retrieval.js"

const load = (file: string, options?: Parameters<typeof loadQueries>[0]) =>
  Stream.runCollect(loadQueries(options).cases({ file })).pipe(Effect.map(Chunk.toReadonlyArray))

const lines = (...rows: ReadonlyArray<unknown>) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n"

describe("evidence queries", () => {
  it.effect("gold and chunks under any alias; chunks as objects or texts; latency and usage", () =>
    Effect.gen(function*() {
      const file = writeInput(
        "jsonl",
        lines(
          {
            id: "q1",
            query: "leave?",
            gold: ["25 days"],
            chunks: [{ id: "c1", text: "You get 25 days.", score: 0.8 }, "plain chunk"],
            latencyMs: { total: 900, retrieve: 80, rerank: 120 },
            usage: { prompt_tokens: 1000, completion_tokens: 50 }
          },
          { query: { inputs: { text: "sick?" } }, gold_evidence: [], retrieved: [], latencyMs: 450 }
        )
      )
      const [a, b] = yield* load(file)
      expect(a).toMatchObject({ id: "q1", question: "leave?", gold: ["25 days"] })
      expect(a!.passages.map((p) => [p.id, p.rank, p.text, p.score])).toEqual([["c1", 1, "You get 25 days.", 0.8], [
        "2",
        2,
        "plain chunk",
        undefined
      ]])
      expect(a!.retrieval).toEqual({
        retriever: "precomputed",
        status: "ok",
        latencyMs: 900,
        spans: { retrieve: 80, rerank: 120 },
        usage: { inputTokens: 1000, outputTokens: 50 }
      })
      expect(b).toMatchObject({ id: "2", question: "sick?", gold: [], passages: [], retrieval: { latencyMs: 450 } })
    }))

  it.effect("bad input names the line and field; the column check wants gold and chunks", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(load(writeInput("jsonl", lines({ query: "q", gold: "x", chunks: [] }))))).toMatchObject(
        { line: 1, field: "gold" }
      )
      expect(yield* Effect.flip(load(writeInput("jsonl", lines({ query: "q", gold: [1], chunks: [] }))))).toMatchObject(
        { field: "gold[0]", problem: "expected text, found a number" }
      )
      expect(yield* Effect.flip(load(writeInput("jsonl", lines({ query: "q", gold: [], chunks: [{ id: "a" }] })))))
        .toMatchObject({ field: "chunks[0].text", problem: "expected text, found nothing" })
      expect(
        yield* Effect.flip(
          load(writeInput("jsonl", lines({ query: "q", gold: [], chunks: [], latencyMs: { total: -1 } })))
        )
      ).toMatchObject({ field: "latencyMs.total", problem: "expected milliseconds ≥ 0, found -1" })
      const check = loadQueries().checkColumns
      expect(yield* Effect.flip(check({ file: "f" }, ["query", "chunks"]))).toMatchObject({
        problem: expect.stringContaining("no gold evidence field")
      })
      expect(yield* Effect.flip(check({ file: "f" }, ["query", "gold"]))).toMatchObject({
        problem: expect.stringContaining("no retrieved chunks field")
      })
      yield* loadQueries({ chunksRequired: false }).checkColumns({ file: "f" }, ["query", "evidence"])
    }))
})

describe("settings", () => {
  it.effect("RAG_EVAL_FUZZY_THRESHOLD and RAG_EVAL_PRICE_PER_1K", () =>
    Effect.gen(function*() {
      // As the pipeline gets them: the variables decoded into options, then its settings.
      const settingsFromEnv = (env: Readonly<Record<string, string>>) =>
        Effect.map(decodeVariables(env, ["fuzzyThreshold", "pricePer1k"]), (d) => settingsFromOptions(d.options))
      expect(yield* settingsFromEnv({})).toEqual({ fuzzyThreshold: 0.7 })
      expect(yield* settingsFromEnv({ RAG_EVAL_FUZZY_THRESHOLD: "0.9", RAG_EVAL_PRICE_PER_1K: "0.002" })).toEqual({
        fuzzyThreshold: 0.9,
        pricePer1K: 0.002
      })
      expect(yield* Effect.flip(settingsFromEnv({ RAG_EVAL_FUZZY_THRESHOLD: "1.5" }))).toMatchObject({
        field: "RAG_EVAL_FUZZY_THRESHOLD"
      })
      expect(yield* Effect.flip(settingsFromEnv({ RAG_EVAL_PRICE_PER_1K: "cheap" }))).toMatchObject({
        field: "RAG_EVAL_PRICE_PER_1K"
      })
    }))

  it("cost = (input + output) / 1000 × price per 1K; unknown without usage or price", () => {
    expect(queryCost({ inputTokens: 1500, outputTokens: 500 }, 0.002)).toBeCloseTo(0.004, 15)
    expect(queryCost(undefined, 0.002)).toBeNull()
    expect(queryCost({ inputTokens: 1, outputTokens: 1 }, undefined)).toBeNull()
  })
})

const query = (
  id: string,
  gold: ReadonlyArray<string>,
  chunks: ReadonlyArray<readonly [string, number]>,
  extra: Partial<EvalCase> = {}
): EvalCase => ({
  id,
  ordinal: 0,
  line: 1,
  question: `query ${id}`,
  passages: chunks.map(([text, score], i) => ({ id: `${id}-c${i + 1}`, rank: i + 1, text, score })),
  gold,
  source: {},
  ...extra
})

const queries = [
  query("a", ["paris is the capital", "seine river"], [
    ["Lyon is big.", 0.9],
    ["Paris is the capital of France.", 0.8],
    ["The Seine  River flows through Paris.", 0.7],
    ["noise", 0.6]
  ]),
  query("b", ["twenty five days of leave"], [["You get 25 days of annual leave.", 0.5], [
    "Twenty-five days of leave per year.",
    0.4
  ]]),
  query("c", ["nothing matches this span"], [["unrelated", 0.9]]),
  query("d", [], [["no gold here", 0.3]])
]

describe("score and summary", () => {
  const settings = { fuzzyThreshold: 0.7, pricePer1K: 0.01 }
  const score = evidenceScore(settings)
  const summary = evidenceSummary(settings)
  const info = runInfo([])
  const pipeline = { score, aggregate: summary }
  /** The records folded as a run folds them: the engine's fold, evidence's own part, the headline metrics. */
  const fold = (records: ReadonlyArray<EvidenceRecord>) => {
    const s = summarize(pipeline, info, records)
    return { ...s, headline: headlineValues(pipeline, info, s) }
  }

  it("a record: which chunk covers which span, the first covering rank, the per-query scores", () => {
    const r = score.score(queries[0]!, [], 1, new Map())
    expect(r.chunks.map((c) => [c.rank, c.relevant, c.covers])).toEqual([
      [1, false, []],
      [2, true, [1]],
      [3, true, [2]],
      [4, false, []]
    ])
    expect(r.gold).toEqual([{ text: "paris is the capital", firstRank: 2 }, { text: "seine river", firstRank: 3 }])
    // relevant at ranks 2, 3: P@5 = 2/5, AP = (1/2 + 2/3) / 2, RR = 1/2; both spans in the top 3
    expect(r.scores).toEqual({
      goldSpans: 2,
      coveredAt3: 2,
      coveredAt10: 2,
      precisionAt5: 0.4,
      coverageAt3: 1,
      coverageAt10: 1,
      fullCoverageAt3: 1,
      fullCoverageAt10: 1,
      averagePrecision: (1 / 2 + 2 / 3) / 2,
      reciprocalRank: 0.5,
      hitAt10: 1
    })
    expect(r.cost).toBeNull()
  })

  it("the online summary equals evaluateEvidence on the same queries", () => {
    const records = queries.map((q) => score.score(q, [], 1, new Map()))
    const s = fold(records)
    const expected = evaluateEvidence(
      queries.map((q) => ({ id: q.id, gold: q.gold!, chunks: q.passages.map((p) => p.text) })),
      { fuzzyThreshold: 0.7 }
    )
    for (const [k, v] of Object.entries(expected.metrics)) {
      expect(s.headline[k]).toBeCloseTo(v, 12)
    }
    expect(s.cases).toBe(4)
    expect(s.extra).toMatchObject({ queries: 4, goldSpans: 4, withoutGold: { count: 1, ids: ["d"] } })
    // micro recall@10: a 2 + b 1 (fuzzy: "Twenty-five days of leave per year." ≈ "twenty five days of leave") + c 0 of 4 spans
    expect(s.headline["EvidenceRecall@10"]).toBe(3 / 4)
    // a and b tie (coverage 1, RR 1/2): input order
    expect(s.lowest.map((l) => l.caseId)).toEqual(["c", "d", "a", "b"])
  })

  it("a failed retrieval is left out of every metric and listed; cost and latency are summed", () => {
    const failed = query("f", ["x"], [], {
      retrieval: {
        retriever: "http",
        status: "failed",
        error: { kind: "status", message: "HTTP 503", status: 503 },
        latencyMs: 30
      }
    })
    const costly = query("b", ["twenty five days of leave"], [["Twenty-five days of leave per year.", 0.4]], {
      retrieval: {
        retriever: "precomputed",
        status: "ok",
        latencyMs: 900,
        spans: { generate: 700 },
        usage: { inputTokens: 1500, outputTokens: 500 }
      }
    })
    const s = fold([score.score(costly, [], 1, new Map()), score.score(failed, [], 1, new Map())])
    expect(s.cases).toBe(2)
    expect(s.extra).toMatchObject({
      queries: 1,
      retrievalFailures: { count: 1, cases: [{ caseId: "f", message: "HTTP 503" }] }
    })
    expect(s.failed.map((r) => r.caseId)).toEqual(["f"])
    expect(s.headline["EvidenceRecall@10"]).toBe(1)
    expect(s.extra.cost).toMatchObject({ queriesWithUsage: 1, inputTokens: 1500, outputTokens: 500, pricePer1K: 0.01 })
    expect(s.extra.cost.totalUsd).toBeCloseTo(0.02, 15)
    expect(s.extra.cost.perQueryUsd).toBeCloseTo(0.02, 15)
    expect(s.extra.latency.total).toMatchObject({ n: 2, mean: 465 })
    expect(s.extra.latency.generate).toMatchObject({ n: 1, mean: 700 })
  })

  it("no queries: the means over queries are unknown (null, never 0); the micro recalls over no span are 0", () => {
    const s = fold([])
    expect(Object.values(s.metrics).every((m) => m.n === 0 && m.mean === null)).toBe(true)
    expect(s.headline).toMatchObject({ "EvidenceRecall@3": 0, "EvidenceRecall@10": 0, "Precision@5": null })
    expect(s.extra.cost.totalUsd).toBeNull()
  })

  it.effect("score threshold and top-k are applied before evaluation", () =>
    Effect.gen(function*() {
      // a's chunks score 0.9, 0.8, 0.7, 0.6: threshold 0.75 keeps ranks 1–2; top-k 1 keeps only "Lyon is big."
      const retrieved = yield* precomputedWith({ scoreThreshold: 0.75, topK: 1 }).retrieve(queries[0]!)
      const r = score.score(retrieved, [], 1, new Map())
      expect(r.chunks.map((c) => c.id)).toEqual(["a-c1"])
      expect(r.scores).toMatchObject({ coveredAt10: 0, hitAt10: 0 })
      expect(r.retrieval).toMatchObject({ candidates: 4, belowThreshold: 2, beyondTopK: 1 })
    }))
})
