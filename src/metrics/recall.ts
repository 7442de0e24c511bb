/**
 * Recall at a cut-off — only with gold judgments (SPEC §3: without ground truth there is no true
 * recall, so the registry refuses it for proxy evaluation):
 *
 *   Recall@k = |{ i ≤ k : rel_i ≥ threshold }| / R,   R = relevant items in the gold judgments
 *
 * trec_eval `recall_k` (`set_recall` without a cut-off). R = 0 → 0; empty list → 0.
 */
import { countRelevant, type CutoffOptions, defaultThreshold, topK } from "./relevance.js"

export interface RecallOptions extends CutoffOptions {
  /** R: relevant items in the gold judgments of the query. */
  readonly totalRelevant: number
}

export const recall = (grades: ReadonlyArray<number>, options: RecallOptions): number => {
  if (options.totalRelevant <= 0) return 0
  return countRelevant(topK(grades, options.k), options.threshold ?? defaultThreshold) / options.totalRelevant
}
