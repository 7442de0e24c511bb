import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Path from "node:path"
import type { EvalCase } from "../../src/domain/Case.js"
import type { LoadStage } from "../../src/engine/Pipeline.js"
import { precomputed } from "../../src/engine/Retriever.js"
import { fromEnv, guardLoad, precomputedWith } from "../../src/retrieval/RetrievalSetup.js"
import { repoRoot } from "../support/RunPipeline.js"

const aCase: EvalCase = {
  id: "q",
  ordinal: 0,
  line: 1,
  question: "annual leave",
  passages: [0.9, 0.2, 0.7, 0.6].map((score, i) => ({ id: `p${i + 1}`, rank: i + 1, text: `passage ${i + 1}`, score })),
  source: {},
  retrieval: { retriever: "precomputed", status: "ok", latencyMs: 120, spans: { retrieve: 40 } }
}

const load: LoadStage = { describe: "test", checkColumns: () => Effect.void, cases: () => Stream.empty }

describe("precomputed retriever with parameters", () => {
  it("no parameters: the plain precomputed retriever (same run identity as before)", () => {
    expect(precomputedWith({})).toBe(precomputed)
    expect(precomputedWith({}, { fuzzyThreshold: 0.7 }).params).toEqual({ fuzzyThreshold: 0.7 })
  })

  it.effect("threshold then top-k on the input's hits; the input's latency is kept", () =>
    Effect.gen(function*() {
      const r = precomputedWith({ scoreThreshold: 0.5, topK: 2 })
      expect(r.params).toEqual({ topK: 2, scoreThreshold: 0.5 })
      const c = yield* r.retrieve(aCase)
      expect(c.passages.map((p) => [p.id, p.rank])).toEqual([["p1", 1], ["p3", 2]])
      expect(c.retrieval).toEqual({
        retriever: "precomputed",
        status: "ok",
        latencyMs: 120,
        spans: { retrieve: 40 },
        candidates: 4,
        belowThreshold: 1,
        beyondTopK: 1
      })
    }))
})

describe("fromEnv", () => {
  it.effect("default: precomputed, not live, nothing to prepare", () =>
    Effect.gen(function*() {
      const setup = fromEnv({}, {})
      expect(setup).toMatchObject({ kind: "precomputed", live: false })
      expect(setup.retriever.name).toBe("precomputed")
      yield* setup.ready
    }))

  it.effect("RAG_TOP_K and RAG_SCORE_THRESHOLD are applied and recorded (blank = unset); prefetch and rerank settings are refused on precomputed hits", () =>
    Effect.gen(function*() {
      const setup = fromEnv({ record: { fuzzyThreshold: 0.8 } }, {
        RAG_TOP_K: "3",
        RAG_SCORE_THRESHOLD: "0.65",
        RAG_EVAL_SEARCH_URL: " "
      })
      expect(setup.retriever.params).toEqual({ topK: 3, scoreThreshold: 0.65, fuzzyThreshold: 0.8 })
      const prefetch = yield* Effect.flip(fromEnv({}, { RAG_TOP_K: "3", HYBRID_PREFETCH_LIMIT: "100" }).ready)
      expect(prefetch).toMatchObject({ field: "HYBRID_PREFETCH_LIMIT" })
      expect(prefetch.message).toContain("applies only to a live retriever")
      const rerank = yield* Effect.flip(fromEnv({}, { RERANK_TOP_N: "20" }).ready)
      expect(rerank).toMatchObject({ field: "RERANK_TOP_N" })
      const c = yield* setup.retriever.retrieve(aCase)
      expect(c.passages.map((p) => p.id)).toEqual(["p1", "p3"])
    }))

  it.effect("an invalid setting fails the guarded column check, naming the variable", () =>
    Effect.gen(function*() {
      const notANumber = fromEnv({}, { RAG_TOP_K: "ten" })
      const e1 = yield* Effect.flip(notANumber.guard(load).checkColumns({ file: "x.jsonl" }, []))
      expect(e1).toMatchObject({ _tag: "InputError", file: "environment", field: "RAG_TOP_K" })
      expect(e1.message).toContain(`must be a whole number ≥ 1 (got "ten")`)
      const zero = yield* Effect.flip(fromEnv({}, { RAG_TOP_K: "0" }).ready)
      expect(zero).toMatchObject({ field: "RAG_TOP_K", problem: `must be a whole number ≥ 1 (got "0")` })
      const kind = yield* Effect.flip(fromEnv({}, { RAG_EVAL_RETRIEVER: "elastic" }).ready)
      expect(kind).toMatchObject({ field: "RAG_EVAL_RETRIEVER" })
      // A broken setup's retriever fails every case with the same error (never a silent default).
      expect(yield* Effect.flip(notANumber.retriever.retrieve(aCase))).toMatchObject({ field: "RAG_TOP_K" })
    }))

  it.effect("http needs a URL and a body template that gives JSON", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(fromEnv({}, { RAG_EVAL_RETRIEVER: "http" }).ready)).toMatchObject({
        field: "RAG_EVAL_SEARCH_URL"
      })
      expect(yield* Effect.flip(fromEnv({}, { RAG_EVAL_RETRIEVER: "http", RAG_EVAL_SEARCH_URL: "search.local" }).ready))
        .toMatchObject({ field: "RAG_EVAL_SEARCH_URL" })
      expect(
        yield* Effect.flip(
          fromEnv({}, { RAG_EVAL_RETRIEVER: "http", RAG_EVAL_SEARCH_URL: "http://x", RAG_EVAL_SEARCH_BODY: "{query}" })
            .ready
        )
      ).toMatchObject({ field: "RAG_EVAL_SEARCH_BODY" })
      const ok = fromEnv({}, {
        RAG_EVAL_RETRIEVER: "http",
        RAG_EVAL_SEARCH_URL: "http://127.0.0.1:1/s",
        RAG_EVAL_HITS_PATH: "result.hits",
        RAG_EVAL_SEARCH_TIMEOUT: "2.5",
        RAG_EVAL_SEARCH_TOKEN: "secret-token"
      })
      yield* ok.ready
      expect(ok).toMatchObject({ kind: "http", live: true })
      expect(ok.retriever.params).toMatchObject({
        url: "http://127.0.0.1:1/s",
        hitsPath: "result.hits",
        timeoutMs: 2500,
        topK: 10
      })
      expect(JSON.stringify(ok.retriever.params)).not.toContain("secret-token")
    }))

  it.effect("bm25 needs a corpus; a missing corpus fails before the first case", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(fromEnv({}, { RAG_EVAL_RETRIEVER: "bm25" }).ready)).toMatchObject({
        field: "RAG_EVAL_CORPUS"
      })
      expect(
        yield* Effect.flip(fromEnv({}, { RAG_EVAL_RETRIEVER: "bm25", RAG_EVAL_CORPUS: "/nope/corpus.jsonl" }).ready)
      ).toMatchObject({ file: "/nope/corpus.jsonl", problem: "file not found" })
      const corpus = Path.join(repoRoot, "test-sets", "evidence-retrieval", "corpus.jsonl")
      const setup = fromEnv({ query: () => "stolen laptop" }, {
        RAG_EVAL_RETRIEVER: "bm25",
        RAG_EVAL_CORPUS: corpus,
        RAG_TOP_K: "1"
      })
      yield* setup.ready
      const c = yield* setup.retriever.retrieve(aCase)
      expect(c.passages.map((p) => p.id)).toEqual(["hb-15"])
    }))

  it.effect("guardLoad runs every preparation before the load stage's own check", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const guarded = guardLoad(
        { ...load, checkColumns: () => Effect.sync(() => order.push("columns")) },
        Effect.sync(() => order.push("a")),
        Effect.sync(() => order.push("b"))
      )
      yield* guarded.checkColumns({ file: "x" }, [])
      expect(order).toEqual(["a", "b", "columns"])
    }))
})
