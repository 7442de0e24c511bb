/**
 * Discounted cumulative gain (Järvelin & Kekäläinen), SPEC §3:
 *
 *   DCG@k (linear)      = Σ_{i=1..min(k,n)} rel_i / log2(i + 1)
 *   DCG@k (exponential) = Σ_{i=1..min(k,n)} (2^rel_i − 1) / log2(i + 1)
 *
 * Linear gain is trec_eval's `ndcg_cut` (the grade itself is the gain, rank 1 undiscounted).
 * Grades ≤ 0 give no gain — as in trec_eval, where only positive relevance values add to the sum —
 * so the "unjudged" marker -1 never subtracts. Empty list or k ≤ 0 → 0.
 */
import { topK } from "./relevance.js"

/** How a grade becomes a gain. */
export type Gain = "linear" | "exponential"

/** The gain of one grade: the grade (linear) or 2^grade − 1 (exponential); 0 for grades ≤ 0. */
export const gainOf = (grade: number, gain: Gain = "linear"): number =>
  grade <= 0 ? 0 : gain === "linear" ? grade : 2 ** grade - 1

/** The discount of 1-based rank i: log2(i + 1) (1 at rank 1). */
export const discount = (rank: number): number => Math.log2(rank + 1)

export interface DcgOptions {
  /** Cut-off; undefined = the whole list. */
  readonly k?: number
  /** Default "linear". */
  readonly gain?: Gain
}

/** DCG@k of a ranked list of grades (rank order = array order). */
export const dcg = (grades: ReadonlyArray<number>, options: DcgOptions = {}): number => {
  const gain = options.gain ?? "linear"
  let sum = 0
  topK(grades, options.k).forEach((grade, index) => {
    const g = gainOf(grade, gain)
    if (g !== 0) sum += g / discount(index + 1)
  })
  return sum
}
