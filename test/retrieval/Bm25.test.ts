import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { EvalCase } from "../../src/domain/Case.js"
import { build, idf, loadCorpus, make, makeWithIndex, searchIndex, tokenize } from "../../src/retrieval/Bm25.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const docs = [
  { id: "d1", text: "The cat sat on the mat." },
  { id: "d2", text: "the dog SAT" },
  { id: "d3", text: "Cats and dogs" }
]

const aCase = (question: string): EvalCase => ({ id: "q", ordinal: 0, line: 1, question, passages: [], source: {} })

describe("BM25 kernel", () => {
  it("tokenizes to lowercase runs of letters and digits", () => {
    expect(tokenize("Ça va? COVID-19, naïve café")).toEqual(["ça", "va", "covid", "19", "naïve", "café"])
  })

  it("idf is Lucene's ln(1 + (N − df + 0.5) / (df + 0.5))", () => {
    expect(idf(3, 1)).toBeCloseTo(Math.log(1 + 2.5 / 1.5), 12)
    expect(idf(3, 3)).toBeGreaterThan(0)
  })

  it("scores a tiny corpus by hand (k1 1.2, b 0.75, avgdl 4)", () => {
    const index = build(docs)
    expect(index.avgdl).toBe(4)
    const part = (tf: number, dl: number, df: number) =>
      (idf(3, df) * tf * 2.2) / (tf + 1.2 * (1 - 0.75 + (0.75 * dl) / 4))
    const found = searchIndex(index, "cat sat")
    expect(found.map((d) => d.id)).toEqual(["d1", "d2"]) // d3 has "cats", not "cat": no stemming
    expect(found[0]!.score).toBeCloseTo(part(1, 6, 1) + part(1, 6, 2), 12) // 1.2044653…
    expect(found[1]!.score).toBeCloseTo(part(1, 3, 2), 12) // 0.5235486…
    expect(found[0]!.score).toBeCloseTo(1.20446503, 7)
  })

  it("a repeated query term counts once; no shared term → no candidates; ties keep corpus order; limit caps", () => {
    const index = build(docs)
    expect(searchIndex(index, "cat cat sat")).toEqual(searchIndex(index, "cat sat"))
    expect(searchIndex(index, "zebra")).toEqual([])
    const twins = build([{ id: "x", text: "alpha beta" }, { id: "y", text: "gamma" }, { id: "z", text: "alpha beta" }])
    expect(searchIndex(twins, "alpha").map((d) => d.id)).toEqual(["x", "z"])
    expect(searchIndex(twins, "alpha", 1).map((d) => d.id)).toEqual(["x"])
  })

  it.effect("ranks the sample corpus sensibly: the matching handbook chunk first", () =>
    Effect.gen(function*() {
      const index = yield* loadCorpus(Path.join(repoRoot, "test-sets", "evidence-retrieval", "corpus.jsonl"))
      expect(searchIndex(index, "What should I do if my laptop is stolen?")[0]!.id).toBe("hb-15")
      expect(searchIndex(index, "daily meal allowance when travelling")[0]!.id).toBe("hb-11")
      expect(searchIndex(index, "carry over unused annual leave")[0]!.id).toBe("hb-02")
    }))
})

describe("corpus file", () => {
  it.effect("a bad corpus is an InputError naming the line and field", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const dup = Path.join(dir, "dup.jsonl")
      fs.writeFileSync(dup, "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"a\",\"text\":\"y\"}\n")
      expect(yield* Effect.flip(loadCorpus(dup))).toMatchObject({
        _tag: "InputError",
        line: 2,
        field: "id",
        problem: "duplicate document id \"a\" (first on line 1)"
      })
      const noText = Path.join(dir, "notext.jsonl")
      fs.writeFileSync(noText, "{\"id\":1,\"body\":\"x\"}\n")
      expect(yield* Effect.flip(loadCorpus(noText))).toMatchObject({ line: 1, field: "text" })
      expect(yield* Effect.flip(loadCorpus(Path.join(dir, "missing.jsonl")))).toMatchObject({
        problem: "file not found"
      })
    }))
})

describe("bm25 retriever", () => {
  it.effect("default top-k 10, then threshold / top-k; records params, latency and pruning", () =>
    Effect.gen(function*() {
      const corpus = Path.join(repoRoot, "test-sets", "evidence-retrieval", "corpus.jsonl")
      const all = yield* make({ corpus }).retrieve(aCase("leave"))
      expect(all.passages.length).toBeLessThanOrEqual(10)
      expect(all.passages.map((p) => p.rank)).toEqual(all.passages.map((_, i) => i + 1))
      const scores = all.passages.map((p) => p.score!)
      expect([...scores].sort((a, b) => b - a)).toEqual(scores)
      const r = makeWithIndex({ corpus, params: { topK: 2, scoreThreshold: scores[3]! } })
      expect(r.retriever.params).toEqual({ corpus, k1: 1.2, b: 0.75, topK: 2, scoreThreshold: scores[3] })
      const c = yield* r.retriever.retrieve(aCase("leave"))
      expect(c.passages.map((p) => p.id)).toEqual(all.passages.slice(0, 2).map((p) => p.id))
      // Threshold = the 4th best score: 4 hits reach it, top-k keeps 2.
      const candidates = c.retrieval?.candidates ?? 0
      expect(candidates).toBeGreaterThanOrEqual(all.passages.length)
      expect(c.retrieval).toMatchObject({
        retriever: "bm25",
        status: "ok",
        belowThreshold: candidates - 4,
        beyondTopK: 2
      })
      expect(c.retrieval?.spans).toHaveProperty("retrieve")
    }))

  it.effect("prefetch limit caps the candidates before the threshold and top-k", () =>
    Effect.gen(function*() {
      const corpus = Path.join(repoRoot, "test-sets", "evidence-retrieval", "corpus.jsonl")
      const c = yield* make({ corpus, params: { prefetchLimit: 3 } }).retrieve(aCase("leave annual days"))
      expect(c.passages).toHaveLength(3)
      expect(c.retrieval).toMatchObject({ candidates: 3, beyondTopK: 0 })
    }))

  it.effect("the corpus is read once however many queries run", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const corpus = Path.join(dir, "c.jsonl")
      fs.writeFileSync(corpus, "{\"id\":\"a\",\"text\":\"alpha\"}\n")
      const r = makeWithIndex({ corpus })
      yield* r.ready
      fs.writeFileSync(corpus, "{\"id\":\"b\",\"text\":\"alpha\"}\n")
      const c = yield* r.retriever.retrieve(aCase("alpha"))
      expect(c.passages.map((p) => p.id)).toEqual(["a"])
    }))
})
