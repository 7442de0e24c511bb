/**
 * Normalised DCG, SPEC §3:
 *
 *   NDCG@k = DCG@k(ranking) / IDCG@k,   IDCG@k = DCG@k(ideal grades sorted descending)
 *
 * The ideal ordering comes from the gold grades when given (qrels: every judged item of the query,
 * retrieved or not — trec_eval's `ndcg_cut`), otherwise from the ranking's own grades (proxy: "how
 * close is the ranking to the best ordering of what was retrieved, as the judge graded it").
 * IDCG = 0 (nothing with a positive grade) → NDCG = 0 and `flagged`, so reports can say the value
 * is undefined rather than bad. Empty list → 0, flagged.
 */
import { dcg, type Gain } from "./dcg.js"

export interface NdcgOptions {
  /** Cut-off, applied to the ranking and to the ideal ordering; undefined = whole lists. */
  readonly k?: number
  /** Default "linear" (trec_eval); the search-relevance pipeline uses "exponential". */
  readonly gain?: Gain
  /** Gold grades of every judged item of the query; absent = proxy (ideal from `grades`). */
  readonly ideal?: ReadonlyArray<number>
}

export interface NdcgResult {
  readonly value: number
  /** True when IDCG = 0: the value 0 is a convention, not a measurement. */
  readonly flagged: boolean
}

/** The ideal ordering: grades sorted descending. */
export const idealOrder = (grades: ReadonlyArray<number>): Array<number> => [...grades].sort((x, y) => y - x)

/** IDCG@k: DCG@k of the ideal ordering of `grades`. */
export const idcg = (
  grades: ReadonlyArray<number>,
  options: { readonly k?: number; readonly gain?: Gain } = {}
): number => dcg(idealOrder(grades), options)

/** NDCG@k with the IDCG = 0 case flagged. */
export const ndcg = (grades: ReadonlyArray<number>, options: NdcgOptions = {}): NdcgResult => {
  const cut = { k: options.k, gain: options.gain ?? "linear" } as const
  const ideal = idcg(options.ideal ?? grades, cut)
  if (ideal <= 0) return { value: 0, flagged: true }
  return { value: dcg(grades, cut) / ideal, flagged: false }
}
