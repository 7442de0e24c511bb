/**
 * Reciprocal rank, SPEC §3:
 *
 *   RR = 1 / (rank of the first item with rel_i ≥ threshold), 0 if there is none (in the top k)
 *
 * trec_eval `recip_rank`. MRR = mean RR over queries. Empty list → 0.
 */
import { type CutoffOptions, defaultThreshold, topK } from "./relevance.js"

export const reciprocalRank = (grades: ReadonlyArray<number>, options: CutoffOptions = {}): number => {
  const threshold = options.threshold ?? defaultThreshold
  const index = topK(grades, options.k).findIndex((grade) => grade >= threshold)
  return index < 0 ? 0 : 1 / (index + 1)
}
