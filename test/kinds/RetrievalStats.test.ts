import { describe, expect, it } from "@effect/vitest"
import {
  caseLatency,
  latencyAdd,
  latencyFinish,
  latencyInit,
  meanAdd,
  meanFinish,
  meanInit,
  tokensAdd,
  tokensFinish,
  tokensInit
} from "../../src/kinds/graded-hits/RetrievalStats.js"

describe("latency fold", () => {
  it("per span: n, mean, P50/P90/P99, max; spans ordered total, sub-spans, judge", () => {
    let acc = latencyInit()
    for (const [judge, total, retrieve] of [[2, 5, 1], [1, 1, 2], [0, 3, 3], [4, 10, 4]]) {
      acc = latencyAdd(acc, { judge: judge!, total: total!, retrieve: retrieve! })
    }
    acc = latencyAdd(acc, { rerank: 7 })
    const s = latencyFinish(acc)
    expect(Object.keys(s)).toEqual(["total", "retrieve", "rerank", "judge"])
    // total: [1, 3, 5, 10] → mean 4.75, P50 = 4, P90 = 5 + 0.7·5 = 8.5, P99 = 5 + 0.97·5 = 9.85
    expect(s.total).toMatchObject({ n: 4, mean: 4.75, p50: 4, max: 10 })
    expect(s.total!.p90).toBeCloseTo(8.5, 12)
    expect(s.total!.p99).toBeCloseTo(9.85, 12)
    expect(s.rerank).toMatchObject({ n: 1, mean: 7, p50: 7, p99: 7 })
  })

  it("no latency at all: no spans", () => {
    expect(latencyFinish(latencyInit())).toEqual({})
  })

  it("a case's latency: total from the retrieval, its sub-spans, judge apart", () => {
    expect(caseLatency({ retriever: "http", status: "ok", latencyMs: 50, spans: { retrieve: 20, rerank: 25 } }, 300))
      .toEqual({ total: 50, retrieve: 20, rerank: 25, judge: 300 })
    expect(caseLatency(undefined)).toEqual({})
  })
})

describe("means and tokens", () => {
  it("means skip unknowns and say over how many values", () => {
    let acc = meanInit(["a", "b", "c"])
    acc = meanAdd(acc, { a: 1, b: null, c: undefined })
    acc = meanAdd(acc, { a: 3, b: 4 })
    expect(meanFinish(acc)).toEqual({ mean: { a: 2, b: 4, c: null }, n: { a: 2, b: 1, c: 0 } })
  })

  it("tokens per judged hit and per request (queries without judgments are not requests)", () => {
    let acc = tokensInit()
    acc = tokensAdd(acc, { input: 300, output: 60 }, 3)
    acc = tokensAdd(acc, { input: 100, output: 20 }, 1)
    acc = tokensAdd(acc, { input: 0, output: 0 }, 0)
    expect(tokensFinish(acc)).toEqual({
      input: 400,
      output: 80,
      perJudgedHit: { input: 100, output: 20 },
      perRequest: { input: 200, output: 40 }
    })
    expect(tokensFinish(tokensInit())).toEqual({ input: 0, output: 0, perJudgedHit: null, perRequest: null })
  })
})
