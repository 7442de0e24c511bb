/**
 * The search-relevance stages on hand-made data: request loading (both query shapes, eval.fields),
 * the judge's tasks, and NDCG (exponential gain) / MAP / MRR hand-computed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Stream } from "effect"
import type { EvalCase } from "../../src/domain/Case.js"
import {
  hitText,
  judgeSearchHits,
  loadRequests,
  searchMetrics,
  searchScore
} from "../../src/kinds/search/SearchRelevance.js"
import { decodeVariables } from "../../src/retrieval/RetrievalSetup.js"
import { judgment, writeInput } from "../support/Retrieval.js"

const load = (file: string, options?: Parameters<typeof loadRequests>[0]) =>
  Stream.runCollect(loadRequests(options).cases({ file })).pipe(Effect.map(Chunk.toReadonlyArray))

const lines = (...rows: ReadonlyArray<unknown>) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n"

describe("search requests", () => {
  it.effect("the API's request shape and a plain query; hit ids, scores, and the judged text", () =>
    Effect.gen(function*() {
      const file = writeInput(
        "jsonl",
        lines(
          {
            query: { inputs: { text: " capital of france " } },
            eval: { fields: ["title", "text"] },
            hits: [{ id: "a", title: "Paris", text: "Paris is the capital.", score: 0.9 }, { id: 2, text: "Lyon." }]
          },
          { id: "q2", query: "plain", hits: [] }
        )
      )
      const [a, b] = yield* load(file)
      expect(a).toMatchObject({ id: "1", question: "capital of france" })
      expect(a!.passages.map((p) => [p.id, p.rank, p.score, p.text])).toEqual([
        ["a", 1, 0.9, "title: Paris\ntext: Paris is the capital."],
        ["2", 2, undefined, "text: Lyon."]
      ])
      expect(b).toMatchObject({ id: "q2", question: "plain", passages: [] })
    }))

  it("the text of a hit from its fields", () => {
    const hit = { id: "a", score: 1, title: "T", text: "body", n: 3 }
    expect(hitText(hit, undefined)).toBe("body")
    expect(hitText(hit, ["text"])).toBe("body")
    expect(hitText(hit, ["title", "n"])).toBe("title: T\nn: 3")
    expect(hitText(hit, ["missing"])).toBeUndefined()
    expect(hitText({ id: "b", chunk: "only field" }, undefined)).toBe("only field")
  })

  it.effect("bad requests name the line and field", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(load(writeInput("jsonl", lines({ query: { text: "x" }, hits: [] }))))).toMatchObject({
        line: 1,
        field: "query"
      })
      expect(yield* Effect.flip(load(writeInput("jsonl", lines({ query: "x", hits: {} }))))).toMatchObject({
        field: "hits",
        problem: "expected a list of hits, found an object"
      })
      expect(
        yield* Effect.flip(
          load(writeInput("jsonl", lines({ query: "x", eval: { fields: ["title"] }, hits: [{ id: "a", text: "t" }] })))
        )
      ).toMatchObject({ field: "hits[0]", problem: "the hit has none of the fields \"title\"" })
      expect(yield* Effect.flip(load(writeInput("jsonl", lines({ query: "x", eval: { fields: "text" }, hits: [] })))))
        .toMatchObject({ field: "eval.fields", problem: "expected a list of field names, found a string" })
      expect(
        yield* Effect.flip(
          load(writeInput("jsonl", lines({ query: "x", hits: [{ id: "a", text: "t", score: "high" }] })))
        )
      ).toMatchObject({ field: "hits[0].score", problem: "expected a number, found a string" })
    }))

  it.effect("default fields apply when a request has no eval.fields; a live retriever needs no hits", () =>
    Effect.gen(function*() {
      const file = writeInput(
        "jsonl",
        lines({ query: "x", hits: [{ id: "a", title: "T", text: "body" }] }, { query: "y" })
      )
      expect(yield* Effect.flip(load(file))).toMatchObject({ line: 2, field: "hits" })
      const [a] = yield* load(file, { fields: ["title"], hitsRequired: false })
      expect(a!.passages[0]!.text).toBe("T")
    }))

  it("RAG_EVAL_FIELDS", () => {
    const fieldsFromEnv = (env: Readonly<Record<string, string>>) =>
      Either.getOrThrow(decodeVariables(env)).options.fields
    expect(fieldsFromEnv({ RAG_EVAL_FIELDS: "title, text," })).toEqual(["title", "text"])
    expect(fieldsFromEnv({})).toBeUndefined()
  })
})

describe("judge stage", () => {
  const c: EvalCase = {
    id: "q",
    ordinal: 0,
    line: 1,
    question: "capital of france",
    passages: [{ id: "a", rank: 1, text: "Paris.", fields: { id: "a", title: "Paris", text: "Paris." } }],
    source: { eval: { fields: ["title"] } }
  }

  it("one task per hit with the query and the chosen fields as the passage", () => {
    expect(judgeSearchHits().tasks(c)).toEqual([{
      rubric: "search-relevance/checklist",
      target: "hit:a",
      vars: { query: "capital of france", passage: "Paris" },
      pool: ["Paris"]
    }])
    expect(judgeSearchHits().tasks({ ...c, source: {} })[0]!.vars.passage).toBe("Paris.")
  })
})

describe("per-query metrics (hand-computed)", () => {
  it("grades [1, 3, 0, 2]: exponential-gain NDCG, AP and RR with relevant = grade ≥ 2", () => {
    const { values, flagged } = searchMetrics([1, 3, 0, 2])
    // DCG = (2^1−1)/1 + (2^3−1)/log2 3 + 0 + (2^2−1)/log2 5 = 6.7085379; IDCG ([3,2,1,0]) = 7 + 3/log2 3 + 1/2 = 9.3927893
    const expected = (1 + 7 / Math.log2(3) + 3 / Math.log2(5)) / (7 + 3 / Math.log2(3) + 1 / 2)
    expect(expected).toBeCloseTo(0.71422213, 8)
    expect(values.ndcg).toBeCloseTo(expected, 12)
    expect(values["ndcg@10"]).toBeCloseTo(expected, 12)
    expect(values.map).toBe((1 / 2 + 2 / 4) / 2) // relevant at ranks 2 and 4; R = 2 found
    expect(values.mrr).toBe(1 / 2)
    expect(flagged).toEqual([])
  })

  it("NDCG@10 cuts the ranking and the ideal at 10", () => {
    const grades = [1, 3, 0, 2, 0, 0, 0, 0, 0, 0, 3]
    expect(searchMetrics(grades).values["ndcg@10"]).toBeCloseTo(0.50261820, 7)
  })

  it("no relevant hit: NDCG flagged only when every grade is 0; MAP and MRR 0", () => {
    expect(searchMetrics([1, 1])).toMatchObject({ values: { ndcg: 1, map: 0, mrr: 0 }, flagged: [] })
    expect(searchMetrics([0, 0])).toMatchObject({ values: { ndcg: 0 }, flagged: ["ndcg", "ndcg@10"] })
    expect(searchMetrics([])).toMatchObject({ values: { ndcg: 0, map: 0, mrr: 0 }, flagged: ["ndcg", "ndcg@10"] })
  })

  it("a failed judgment: every metric unknown", () => {
    expect(searchMetrics([3, null]).values).toEqual({ ndcg: null, "ndcg@10": null, map: null, mrr: null })
  })

  it("the record keeps confidence and justification per hit, and tokens per request", () => {
    const c: EvalCase = {
      id: "q",
      ordinal: 0,
      line: 1,
      question: "x",
      passages: [{ id: "a", rank: 1, text: "A title\nbody", fields: { title: "A title" } }],
      source: {}
    }
    const r = searchScore().score(c, [judgment("q", "a", 3, { confidence: 4, reason: "answers it" })], 1, new Map())
    expect(r.hits).toEqual([
      expect.objectContaining({
        id: "a",
        label: "A title",
        grade: 3,
        confidence: 4,
        reason: "answers it",
        tokens: { input: 100, output: 20 }
      })
    ])
    expect(r.tokens).toEqual({ input: 100, output: 20 })
  })
})
