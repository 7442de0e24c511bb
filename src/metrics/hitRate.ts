/**
 * Hit at a cut-off, SPEC §3:
 *
 *   Hit@k = 1 if some i ≤ k has rel_i ≥ threshold, else 0
 *
 * HitRate@k = mean Hit@k over queries = share of queries with a relevant item in the top k
 * (trec_eval `success_k`). Empty list → 0.
 */
import { type CutoffOptions, defaultThreshold, topK } from "./relevance.js"

export const hit = (grades: ReadonlyArray<number>, options: CutoffOptions = {}): number => {
  const threshold = options.threshold ?? defaultThreshold
  return topK(grades, options.k).some((grade) => grade >= threshold) ? 1 : 0
}
