/**
 * The `bm25` retriever: an embedded Okapi BM25 index over a corpus JSONL (or JSON) of `{ id, text }`
 * objects, for offline runs and examples. Built once, on the first query, in memory.
 *
 *   score(q, d) = Σ_{t ∈ terms(q)} idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))
 *   idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))          (Lucene's, never negative)
 *
 * with k1 = 1.2, b = 0.75, N documents, df(t) documents containing t, |d| the document's length in
 * terms and avgdl the mean length. terms() lowercases (NFKC) and keeps runs of letters and digits;
 * no stemming, no stop words (idf weighs common words down). A query term counts once however often
 * it is repeated. Only documents sharing a term with the query are candidates; they are ranked by
 * score, ties in corpus order. The candidate list is capped at `prefetchLimit` when set, then the
 * score threshold and top-k (default 10) apply.
 */
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { EvalCase, Passage } from "../domain/Case.js"
import { InputError } from "../domain/Errors.js"
import { Retriever } from "../engine/Retriever.js"
import { describeJson } from "../load/Json.js"
import { readRows } from "../load/Rows.js"
import { defaultTopK } from "./HttpRetriever.js"
import { applyParams, paramsRecord, type RetrievalParams } from "./Params.js"

export const K1 = 1.2
export const B = 0.75

/** Lowercased (NFKC) runs of letters and digits. */
export const tokenize = (text: string): Array<string> =>
  text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []

export interface CorpusDocument {
  readonly id: string
  readonly text: string
}

export interface ScoredDocument extends CorpusDocument {
  readonly score: number
  /** 0-based position in the corpus. */
  readonly index: number
}

export interface Bm25Index {
  readonly documents: ReadonlyArray<CorpusDocument>
  readonly avgdl: number
  /** term → postings [document index, term frequency]. */
  readonly postings: ReadonlyMap<string, ReadonlyArray<readonly [number, number]>>
  readonly lengths: ReadonlyArray<number>
  readonly k1: number
  readonly b: number
}

export const build = (
  documents: ReadonlyArray<CorpusDocument>,
  options: { readonly k1?: number; readonly b?: number } = {}
): Bm25Index => {
  const postings = new Map<string, Array<readonly [number, number]>>()
  const lengths: Array<number> = []
  let total = 0
  documents.forEach((doc, index) => {
    const terms = tokenize(doc.text)
    lengths.push(terms.length)
    total += terms.length
    const tf = new Map<string, number>()
    for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1)
    for (const [t, f] of tf) {
      let list = postings.get(t)
      if (list === undefined) postings.set(t, list = [])
      list.push([index, f])
    }
  })
  return {
    documents,
    avgdl: documents.length === 0 ? 0 : total / documents.length,
    postings,
    lengths,
    k1: options.k1 ?? K1,
    b: options.b ?? B
  }
}

/** idf(t) for a term in `df` of `n` documents. */
export const idf = (n: number, df: number): number => Math.log(1 + (n - df + 0.5) / (df + 0.5))

/** Documents sharing a term with the query, best first (ties in corpus order), at most `limit`. */
export const searchIndex = (index: Bm25Index, query: string, limit?: number): Array<ScoredDocument> => {
  const n = index.documents.length
  const scores = new Map<number, number>()
  for (const t of new Set(tokenize(query))) {
    const list = index.postings.get(t)
    if (list === undefined) continue
    const w = idf(n, list.length)
    for (const [doc, tf] of list) {
      const norm = index.k1 * (1 - index.b + (index.b * index.lengths[doc]!) / (index.avgdl || 1))
      scores.set(doc, (scores.get(doc) ?? 0) + (w * tf * (index.k1 + 1)) / (tf + norm))
    }
  }
  const ranked = [...scores].sort((x, y) => y[1] - x[1] || x[0] - y[0])
  return (limit === undefined ? ranked : ranked.slice(0, limit)).map(([i, score]) => ({
    ...index.documents[i]!,
    score,
    index: i
  }))
}

// ---------------------------------------------------------------------------------------------
// Corpus file

/** Reads and indexes a corpus file: every row an object with an `id` (text or number) and a `text`. */
export const loadCorpus = (
  file: string,
  options: { readonly k1?: number; readonly b?: number } = {}
): Effect.Effect<Bm25Index, InputError> =>
  readRows(file).pipe(
    Stream.mapEffect((row) => {
      const fail = (field: string, problem: string) =>
        Effect.fail(new InputError({ file, line: row.line, field, problem }))
      const id = row.values.id
      const text = row.values.text
      if (typeof id !== "string" && typeof id !== "number") {
        return fail("id", `expected text or a number, found ${id === undefined ? "nothing" : describeJson(id)}`)
      }
      if (typeof text !== "string") {
        return fail("text", `expected text, found ${text === undefined ? "nothing" : describeJson(text)}`)
      }
      return Effect.succeed({ line: row.line, doc: { id: String(id), text } })
    }),
    Stream.runCollect,
    Effect.flatMap((chunk) => {
      const rows = Chunk.toReadonlyArray(chunk)
      const seen = new Map<string, number>()
      for (const r of rows) {
        const first = seen.get(r.doc.id)
        if (first !== undefined) {
          return Effect.fail(
            new InputError({
              file,
              line: r.line,
              field: "id",
              problem: `duplicate document id "${r.doc.id}" (first on line ${first})`
            })
          )
        }
        seen.set(r.doc.id, r.line)
      }
      if (rows.length === 0) return Effect.fail(new InputError({ file, problem: "the corpus has no documents" }))
      return Effect.succeed(build(rows.map((r) => r.doc), options))
    })
  )

export interface Bm25RetrieverOptions {
  /** Corpus file: JSONL (or JSON) of `{ id, text }`. */
  readonly corpus: string
  readonly k1?: number | undefined
  readonly b?: number | undefined
  readonly params?: RetrievalParams | undefined
  /** The query text of a case (default: its question). */
  readonly query?: ((c: EvalCase) => string) | undefined
}

export interface Bm25Retriever {
  readonly retriever: Retriever["Type"]
  /** Loads (once) and indexes the corpus: run it before the first case to fail early on a bad file. */
  readonly ready: Effect.Effect<Bm25Index, InputError>
}

/**
 * The retriever and its (memoised) corpus load. A bad corpus is an `InputError` of the run (exit
 * code 2), not a per-case failure: every case would fail the same way.
 */
export const makeWithIndex = (options: Bm25RetrieverOptions): Bm25Retriever => {
  const params: RetrievalParams = { ...options.params, topK: options.params?.topK ?? defaultTopK }
  const ready = Effect.runSync(Effect.cached(loadCorpus(options.corpus, options)))
  const query = options.query ?? ((c: EvalCase) => c.question)
  const retriever: Retriever["Type"] = {
    name: "bm25",
    params: { corpus: options.corpus, k1: options.k1 ?? K1, b: options.b ?? B, ...paramsRecord(params) },
    retrieve: (c) =>
      ready.pipe(
        Effect.flatMap((index) => Effect.timed(Effect.sync(() => searchIndex(index, query(c), params.prefetchLimit)))),
        Effect.map(([elapsed, found]) => {
          const hits = found.map((d, i): Passage => ({
            id: d.id,
            rank: i + 1,
            text: d.text,
            score: d.score,
            fields: { id: d.id, text: d.text }
          }))
          const applied = applyParams(hits, params)
          const latencyMs = Math.round(Duration.toMillis(elapsed) * 1000) / 1000
          return {
            ...c,
            passages: applied.passages,
            retrieval: {
              retriever: "bm25",
              status: "ok" as const,
              latencyMs,
              spans: { retrieve: latencyMs },
              candidates: applied.candidates,
              belowThreshold: applied.belowThreshold,
              beyondTopK: applied.beyondTopK
            }
          }
        })
      )
  }
  return { retriever, ready }
}

export const make = (options: Bm25RetrieverOptions): Retriever["Type"] => makeWithIndex(options).retriever

export const layer = (options: Bm25RetrieverOptions): Layer.Layer<Retriever> => Layer.succeed(Retriever, make(options))
