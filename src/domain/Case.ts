/**
 * The unit that flows through the pipeline: one test case, as loaded and then retrieved.
 */

/** One retrieved passage / hit / fragment, in retriever order (rank is 1-based). */
export interface Passage {
  readonly id: string
  readonly rank: number
  readonly text: string
  /** Retriever score when the retriever gives one. */
  readonly score?: number | undefined
  /** Extra structured fields (e.g. a course's code and learning outcomes, a hit's fields). */
  readonly fields?: Readonly<Record<string, unknown>> | undefined
}

/** One nugget: a fact a good answer states; `vital` ones are what TREC's primary score counts. */
export interface Nugget {
  readonly text: string
  readonly importance?: "vital" | "okay" | undefined
}

export interface EvalCase {
  /** Stable id: from an id column/field, else the 1-based row number as a string. */
  readonly id: string
  /** 0-based position in the input; reports keep input order. */
  readonly ordinal: number
  /** Line (CSV/JSONL) where the case starts, for messages. */
  readonly line: number
  readonly question: string
  /** Absent for cases without an answer (retrieval-only pipelines). */
  readonly answer?: string | undefined
  readonly history?: string | undefined
  /** Filled by the retrieve stage (precomputed passages already arrive here from the loader). */
  readonly passages: ReadonlyArray<Passage>
  /** The input row/object as read, passed through to reports (CSV keeps the input columns). */
  readonly source: Readonly<Record<string, unknown>>
  /** The gold (reference) answer, when the test set gives one: what claim precision and recall compare with (SPEC §2.6). */
  readonly reference?: string | undefined
  /** Information nuggets the answer should hold (TREC RAG 2024), when the test set gives them. */
  readonly nuggets?: ReadonlyArray<Nugget> | undefined
  /** Gold evidence spans (retrieval evaluated against ground truth, SPEC §2.5). */
  readonly gold?: ReadonlyArray<string> | undefined
  /** How the retrieve stage went: latency, usage, what the parameters dropped, or why it failed. */
  readonly retrieval?: RetrievalInfo | undefined
  /** The answer (and passages) came from the live system under test (`--target`): how that call went. */
  readonly generated?: Generated | undefined
}

/**
 * A case's answer asked of the live system (`--target`): `ok` (the answer, and the passages when
 * the target gives them, replaced the input's), `failed` (no answer: the reason is every judgment's
 * reason), or `skipped` (the run stopped before asking: the case has no record).
 */
export interface Generated {
  readonly status: "ok" | "failed" | "skipped"
  readonly reason?: string | undefined
  /** Request sent → end of the body, ms. */
  readonly latencyMs?: number | undefined
  /** Request sent → first byte of the body, ms (meaningful for a streamed answer). */
  readonly ttfbMs?: number | undefined
  readonly streamed?: boolean | undefined
  /** Why the target gave no passages although a contexts path is set. */
  readonly contextsNote?: string | undefined
}

/** Why a live retrieval failed (see `retrieval/RetrievalError.ts`). */
export type RetrievalFailureKind = "timeout" | "status" | "json" | "shape" | "network"

/**
 * Measurements of the system under test for one case: taken by a live retriever, or carried by the
 * input (a log's latency and token counts). A failed retrieval is not an error of the run: the case
 * keeps `passages: []`, `status: "failed"` and the error, and its metrics are unknown (never 0).
 */
export interface RetrievalInfo {
  /** Retriever name (`precomputed`, `http`, `bm25`). */
  readonly retriever: string
  readonly status: "ok" | "failed"
  readonly error?: {
    readonly kind: RetrievalFailureKind
    readonly message: string
    readonly status?: number | undefined
  } | undefined
  /** End-to-end latency of the query, ms: measured around a live call, or the input's total. */
  readonly latencyMs?: number | undefined
  /** Sub-spans in ms (`retrieve`, `rerank`, `generate`…): from the input or the endpoint's timings. */
  readonly spans?: Readonly<Record<string, number>> | undefined
  /** Tokens the system spent on this query (LLM generation, paid reranker), when reported. */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number } | undefined
  /** Hits returned before the score threshold and top-k were applied. */
  readonly candidates?: number | undefined
  /** Hits dropped for a score below the threshold. */
  readonly belowThreshold?: number | undefined
  /** Hits dropped beyond top-k. */
  readonly beyondTopK?: number | undefined
}

/** What every kind's record starts with: its case's id, position and line, and the iteration. */
export const recordOrigin = (c: EvalCase, iteration: number) => ({
  caseId: c.id,
  ordinal: c.ordinal,
  line: c.line,
  iteration
})
