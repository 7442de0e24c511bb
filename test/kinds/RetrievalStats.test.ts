import { describe, expect, it } from "@effect/vitest"
import {
  caseLatency,
  latencyAdd,
  latencyFinish,
  latencyInit,
  retrievalFailuresFold,
  tokenSummary
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

describe("tokens and failed retrievals", () => {
  it("tokens per judged hit and per request (queries without judgments are not requests)", () => {
    expect(tokenSummary({ input: 400, output: 80 }, { hits: 4, requests: 2 })).toEqual({
      input: 400,
      output: 80,
      perJudgedHit: { input: 100, output: 20 },
      perRequest: { input: 200, output: 40 }
    })
    expect(tokenSummary({ input: 0, output: 0 }, { hits: 0, requests: 0 })).toEqual({
      input: 0,
      output: 0,
      perJudgedHit: null,
      perRequest: null
    })
  })

  it("failed retrievals: all counted, the first 50 listed with the retriever's message", () => {
    const fold = retrievalFailuresFold()
    for (let i = 0; i < 60; i++) {
      fold.add({
        caseId: `q${i}`,
        line: i + 1,
        query: "tea",
        retrieval: {
          retriever: "http",
          status: "failed",
          error: { kind: "timeout", message: `no answer ${i}` }
        }
      })
    }
    fold.add({ caseId: "x", line: 99, query: "tea" })
    const failures = fold.finish()
    expect(failures.count).toBe(61)
    expect(failures.cases).toHaveLength(50)
    expect(failures.cases[0]).toEqual({ caseId: "q0", line: 1, query: "tea", message: "no answer 0" })
  })
})
