/**
 * Retrieval parameters (SPEC §2.5), applied to a case's hits and recorded in `Retriever.params` (so
 * they are in the manifest, in the run's identity and in every report). Reference names in brackets:
 *
 * - `topK` [RAG_TOP_K]: hits kept per query.
 * - `scoreThreshold` [RAG_SCORE_THRESHOLD]: hits whose retriever score is below it are dropped before
 *   evaluation. Hits without a score cannot be compared and are kept (counted as `unscored`).
 * - `prefetchLimit` [HYBRID_PREFETCH_LIMIT]: candidates fetched before fusion / rerank. Sent to an
 *   HTTP endpoint as `{{prefetchLimit}}`; the BM25 retriever caps its candidate list with it.
 * - `rerankTopN` [RERANK_TOP_N]: candidates the reranker re-scores before the final top-k slice.
 *   Sent to an HTTP endpoint as `{{rerankTopN}}`; rag-eval has no reranker of its own.
 *
 * Order: the threshold first, then top-k — what a vector store's `limit` + `score_threshold` return.
 * The hits keep their input order (ties in retriever scores are never re-sorted) and are re-ranked
 * 1..n after pruning, since evaluation positions are the positions the user sees.
 */
import * as Either from "effect/Either"
import type { Passage } from "../domain/Case.js"

export interface RetrievalParams {
  readonly topK?: number | undefined
  readonly scoreThreshold?: number | undefined
  readonly prefetchLimit?: number | undefined
  readonly rerankTopN?: number | undefined
}

/** The parameters that are set, for `Retriever.params` and reports. */
export const paramsRecord = (params: RetrievalParams): Record<string, number> => {
  const out: Record<string, number> = {}
  if (params.topK !== undefined) out.topK = params.topK
  if (params.scoreThreshold !== undefined) out.scoreThreshold = params.scoreThreshold
  if (params.prefetchLimit !== undefined) out.prefetchLimit = params.prefetchLimit
  if (params.rerankTopN !== undefined) out.rerankTopN = params.rerankTopN
  return out
}

/** A problem with one parameter: its name and what is wrong. */
export interface ParamProblem {
  readonly name: keyof RetrievalParams
  readonly problem: string
}

const positiveInteger = (name: keyof RetrievalParams, value: number | undefined): ParamProblem | undefined =>
  value === undefined || (Number.isSafeInteger(value) && value >= 1)
    ? undefined
    : { name, problem: `must be a whole number ≥ 1 (got ${value})` }

/** Checks the parameters: counts are whole numbers ≥ 1, the threshold a finite number. */
export const validateParams = (params: RetrievalParams): Either.Either<RetrievalParams, ParamProblem> => {
  const problem = positiveInteger("topK", params.topK) ??
    positiveInteger("prefetchLimit", params.prefetchLimit) ??
    positiveInteger("rerankTopN", params.rerankTopN) ??
    (params.scoreThreshold === undefined || Number.isFinite(params.scoreThreshold)
      ? undefined
      : { name: "scoreThreshold" as const, problem: `must be a number (got ${params.scoreThreshold})` })
  return problem === undefined ? Either.right(params) : Either.left(problem)
}

export interface Applied {
  /** The kept hits, re-ranked 1..n. */
  readonly passages: ReadonlyArray<Passage>
  /** Hits before pruning. */
  readonly candidates: number
  readonly belowThreshold: number
  readonly beyondTopK: number
  /** Kept hits without a score while a threshold was set. */
  readonly unscored: number
}

/** Score threshold, then top-k; input order kept, ranks renumbered. */
export const applyParams = (passages: ReadonlyArray<Passage>, params: RetrievalParams): Applied => {
  const threshold = params.scoreThreshold
  let unscored = 0
  const kept = threshold === undefined ? passages : passages.filter((p) => {
    if (p.score === undefined) {
      unscored++
      return true
    }
    return p.score >= threshold
  })
  const top = params.topK === undefined ? kept : kept.slice(0, params.topK)
  return {
    passages: top.map((p, i) => (p.rank === i + 1 ? p : { ...p, rank: i + 1 })),
    candidates: passages.length,
    belowThreshold: passages.length - kept.length,
    beyondTopK: kept.length - top.length,
    unscored
  }
}

/**
 * Ids unique within one result list: a repeated id gets `~2`, `~3`… (the judge's target is
 * `hit:<id>`, so two hits must never share one). Missing ids are the 1-based rank.
 */
export const uniqueIds = (ids: ReadonlyArray<string | undefined>): Array<string> => {
  const seen = new Map<string, number>()
  const taken = new Set<string>()
  return ids.map((raw, i) => {
    const base = raw === undefined || raw === "" ? String(i + 1) : raw
    let id = base
    let n = seen.get(base) ?? 1
    while (taken.has(id)) id = `${base}~${++n}`
    seen.set(base, n)
    taken.add(id)
    return id
  })
}
