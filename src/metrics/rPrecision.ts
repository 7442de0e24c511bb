/**
 * R-precision:
 *
 *   R-Prec = |{ i ≤ R : rel_i ≥ threshold }| / R
 *
 * Precision at rank R, where R is the number of relevant items (gold `totalRelevant`, or found in the
 * list for proxy evaluation — then it equals the share of the relevant items ranked first). trec_eval
 * `Rprec`: a list shorter than R still divides by R. R = 0 → 0; empty list → 0.
 */
import { countRelevant, defaultThreshold, topK } from "./relevance.js"

export interface RPrecisionOptions {
  readonly threshold?: number
  /** R from the gold judgments; absent = relevant items found in the list (proxy). */
  readonly totalRelevant?: number
}

export const rPrecision = (grades: ReadonlyArray<number>, options: RPrecisionOptions = {}): number => {
  const threshold = options.threshold ?? defaultThreshold
  const total = options.totalRelevant ?? countRelevant(grades, threshold)
  if (total <= 0) return 0
  return countRelevant(topK(grades, total), threshold) / total
}
