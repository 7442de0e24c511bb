/**
 * Precision at a cut-off, SPEC §3:
 *
 *   P@k = |{ i ≤ k : rel_i ≥ threshold }| / k
 *
 * k, not the list length, is the denominator: a list of 3 relevant items has P@10 = 0.3 (trec_eval
 * `P_k`). Without a cut-off the denominator is the list length (trec_eval `set_P`).
 * Empty list without cut-off, or k ≤ 0 → 0.
 */
import { countRelevant, type CutoffOptions, defaultThreshold, topK } from "./relevance.js"

export const precision = (grades: ReadonlyArray<number>, options: CutoffOptions = {}): number => {
  const denominator = options.k === undefined ? grades.length : Math.floor(options.k)
  if (denominator <= 0) return 0
  return countRelevant(topK(grades, options.k), options.threshold ?? defaultThreshold) / denominator
}
