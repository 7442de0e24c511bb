/**
 * Retrieval against gold evidence spans (SPEC §2.5), no LLM: a retrieved chunk covers a gold span
 * when `covers(chunk, span)` (normalised substring, or difflib ratio ≥ the fuzzy threshold), and a
 * chunk is relevant when it covers at least one gold span of its query. Coverage at K only looks at
 * the top-K chunks.
 *
 * Per query q with gold spans G_q and ranked chunks c_1..c_n:
 *   covered_q@K       = |{ g ∈ G_q : some c_i, i ≤ K, covers g }|
 *   Precision@5       = |{ i ≤ 5 : c_i relevant }| / 5
 *   Coverage_q@K      = covered_q@K / |G_q|                        (0 when G_q is empty)
 *   FullCoverage_q@K  = 1 if covered_q@K = |G_q| > 0, else 0
 *   AP_q              = Σ_i P@i · rel(i) / R_q, R_q = relevant chunks in the whole list (proxy:
 *                       gold spans are not items, several chunks may cover one span), 0 if R_q = 0
 *   RR_q              = 1 / rank of the first relevant chunk, 0 if none
 *   Hit_q@10          = 1 if a relevant chunk is in the top 10
 * Aggregates over queries Q:
 *   EvidenceRecall@K      = Σ_q covered_q@K / Σ_q |G_q|   (micro; 0 when there are no spans at all)
 *   PerQueryCoverage@K    = mean_q Coverage_q@K            (macro)
 *   FullCoverageRate@K    = mean_q FullCoverage_q@K
 *   Precision@5, MAP, MRR, HitRate@10 = means of the per-query values
 * A query without gold spans counts with 0 everywhere (and is listed in `withoutGold`); with no
 * queries every metric is 0.
 */
import { averagePrecision } from "./averagePrecision.js"
import { coversNormalized, defaultFuzzyThreshold, normalize } from "./difflib.js"
import { hit } from "./hitRate.js"
import { precision } from "./precision.js"
import { reciprocalRank } from "./reciprocalRank.js"
import { mean } from "./relevance.js"

export interface EvidenceQuery {
  readonly id: string
  /** Gold evidence spans (raw text). */
  readonly gold: ReadonlyArray<string>
  /** Retrieved chunk texts in rank order (after any score threshold). */
  readonly chunks: ReadonlyArray<string>
}

/** `covers(chunk, span)` on raw texts. */
export type Covers = (chunk: string, span: string) => boolean

export interface EvidenceOptions {
  /** Fuzzy threshold of the default matcher (default 0.7). Ignored when `covers` is given. */
  readonly fuzzyThreshold?: number
  /** Custom matcher on raw texts; default: normalised substring or difflib ratio ≥ threshold. */
  readonly covers?: Covers
}

/** Which gold spans each chunk covers: `matrix[i][j]` ⇔ chunk i covers span j. */
export const coverageMatrix = (query: EvidenceQuery, options: EvidenceOptions = {}): Array<Array<boolean>> => {
  const custom = options.covers
  if (custom !== undefined) return query.chunks.map((chunk) => query.gold.map((span) => custom(chunk, span)))
  const threshold = options.fuzzyThreshold ?? defaultFuzzyThreshold
  const spans = query.gold.map(normalize)
  return query.chunks.map((chunk) => {
    const text = normalize(chunk)
    return spans.map((span) => coversNormalized(text, span, threshold))
  })
}

/** Gold spans covered by the top-k rows of a coverage matrix. */
export const coveredSpans = (matrix: ReadonlyArray<ReadonlyArray<boolean>>, spans: number, k: number): number => {
  let covered = 0
  for (let j = 0; j < spans; j++) {
    if (matrix.slice(0, Math.max(0, k)).some((row) => row[j] === true)) covered++
  }
  return covered
}

export interface EvidenceQueryScores {
  readonly id: string
  readonly goldSpans: number
  readonly coveredAt3: number
  readonly coveredAt10: number
  readonly precisionAt5: number
  readonly coverageAt3: number
  readonly coverageAt10: number
  readonly fullCoverageAt3: number
  readonly fullCoverageAt10: number
  readonly averagePrecision: number
  readonly reciprocalRank: number
  readonly hitAt10: number
  /** 1 per chunk covering ≥ 1 span, 0 otherwise, in rank order. */
  readonly relevance: ReadonlyArray<number>
}

/** All per-query evidence values from a coverage matrix. */
export const scoreEvidenceQuery = (
  id: string,
  goldSpans: number,
  matrix: ReadonlyArray<ReadonlyArray<boolean>>
): EvidenceQueryScores => {
  const relevance = matrix.map((row) => (row.some((cell) => cell) ? 1 : 0))
  const coveredAt3 = coveredSpans(matrix, goldSpans, 3)
  const coveredAt10 = coveredSpans(matrix, goldSpans, 10)
  const share = (covered: number) => (goldSpans > 0 ? covered / goldSpans : 0)
  const full = (covered: number) => (goldSpans > 0 && covered === goldSpans ? 1 : 0)
  return {
    id,
    goldSpans,
    coveredAt3,
    coveredAt10,
    precisionAt5: precision(relevance, { k: 5 }),
    coverageAt3: share(coveredAt3),
    coverageAt10: share(coveredAt10),
    fullCoverageAt3: full(coveredAt3),
    fullCoverageAt10: full(coveredAt10),
    averagePrecision: averagePrecision(relevance),
    reciprocalRank: reciprocalRank(relevance),
    hitAt10: hit(relevance, { k: 10 }),
    relevance
  }
}

export interface EvidenceMetrics {
  readonly "Precision@5": number
  readonly "EvidenceRecall@3": number
  readonly "EvidenceRecall@10": number
  readonly "PerQueryCoverage@3": number
  readonly "PerQueryCoverage@10": number
  readonly "FullCoverageRate@3": number
  readonly "FullCoverageRate@10": number
  readonly MAP: number
  readonly MRR: number
  readonly "HitRate@10": number
}

export interface EvidenceSummary {
  readonly metrics: EvidenceMetrics
  readonly perQuery: ReadonlyArray<EvidenceQueryScores>
  readonly queries: number
  /** Ids of queries that had no gold span (they score 0). */
  readonly withoutGold: ReadonlyArray<string>
}

/** Aggregates per-query evidence scores (micro recall, macro coverage, means). */
export const summarizeEvidence = (perQuery: ReadonlyArray<EvidenceQueryScores>): EvidenceSummary => {
  const totalSpans = perQuery.reduce((sum, q) => sum + q.goldSpans, 0)
  const micro = (pick: (q: EvidenceQueryScores) => number) =>
    totalSpans > 0 ? perQuery.reduce((sum, q) => sum + pick(q), 0) / totalSpans : 0
  const macro = (pick: (q: EvidenceQueryScores) => number) => mean(perQuery.map(pick))
  return {
    metrics: {
      "Precision@5": macro((q) => q.precisionAt5),
      "EvidenceRecall@3": micro((q) => q.coveredAt3),
      "EvidenceRecall@10": micro((q) => q.coveredAt10),
      "PerQueryCoverage@3": macro((q) => q.coverageAt3),
      "PerQueryCoverage@10": macro((q) => q.coverageAt10),
      "FullCoverageRate@3": macro((q) => q.fullCoverageAt3),
      "FullCoverageRate@10": macro((q) => q.fullCoverageAt10),
      MAP: macro((q) => q.averagePrecision),
      MRR: macro((q) => q.reciprocalRank),
      "HitRate@10": macro((q) => q.hitAt10)
    },
    perQuery,
    queries: perQuery.length,
    withoutGold: perQuery.filter((q) => q.goldSpans === 0).map((q) => q.id)
  }
}

/** The SPEC §2.5 evidence metrics over queries. */
export const evaluateEvidence = (
  queries: ReadonlyArray<EvidenceQuery>,
  options: EvidenceOptions = {}
): EvidenceSummary =>
  summarizeEvidence(
    queries.map((query) => scoreEvidenceQuery(query.id, query.gold.length, coverageMatrix(query, options)))
  )
