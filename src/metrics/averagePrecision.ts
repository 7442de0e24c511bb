/**
 * Average precision, SPEC §3:
 *
 *   AP@k = Σ_{i ≤ k} P@i · rel(i) / R        (rel(i) = 1 if rel_i ≥ threshold, else 0)
 *
 * R is the number of relevant items known: from the gold judgments when given (`totalRelevant`:
 * trec_eval `map`, where relevant items never retrieved pull AP down), otherwise the relevant items
 * found in the whole given list (proxy — reports must say which). R = 0 → 0; empty list → 0.
 * With a cut-off this is trec_eval's `map_cut_k` (R is not capped at k). MAP = mean AP over queries.
 */
import { countRelevant, type CutoffOptions, defaultThreshold, topK } from "./relevance.js"

export interface AveragePrecisionOptions extends CutoffOptions {
  /** R from the gold judgments; absent = relevant items found in the list (proxy). */
  readonly totalRelevant?: number
}

export const averagePrecision = (grades: ReadonlyArray<number>, options: AveragePrecisionOptions = {}): number => {
  const threshold = options.threshold ?? defaultThreshold
  const total = options.totalRelevant ?? countRelevant(grades, threshold)
  if (total <= 0) return 0
  let found = 0
  let sum = 0
  topK(grades, options.k).forEach((grade, index) => {
    if (grade >= threshold) {
      found++
      sum += found / (index + 1)
    }
  })
  return sum / total
}
