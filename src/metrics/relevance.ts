/**
 * Shared vocabulary of the retrieval metrics (SPEC §3). A query's ranking is given as its list of
 * grades in rank order: `grades[0]` is the grade of the item at rank 1.
 *
 * Binary relevance comes from a threshold on the grade: relevant ⇔ grade ≥ threshold. The default,
 * 1, is trec_eval's `-l 1`; the LLM-judged pipelines pass 2 (the top two grades of 0–3).
 */

/** trec_eval's default relevance level. */
export const defaultThreshold = 1

/**
 * The LLM-judged pipelines' relevance level, stated once: on the judges' 0–3 grades, relevant ⇔
 * grade ≥ 2 (fairly or highly relevant). Search relevance, course retrieval, `serve` and the reports'
 * "relevant" columns all read it.
 */
export const judgedRelevantAt = 2

/**
 * The grade given to a retrieved item that the gold judgments (qrels) do not mention — trec_eval's
 * RELVALUE_NONPOOL (-1): no gain and never relevant, whatever the threshold.
 */
export const unjudgedGrade = -1

/** The first k items; all of them when k is undefined; none when k ≤ 0. */
export const topK = <A>(items: ReadonlyArray<A>, k?: number): ReadonlyArray<A> =>
  k === undefined ? items : items.slice(0, Math.max(0, Math.floor(k)))

/** How many grades reach the threshold. */
export const countRelevant = (grades: ReadonlyArray<number>, threshold: number = defaultThreshold): number => {
  let count = 0
  for (const grade of grades) if (grade >= threshold) count++
  return count
}

/** Options every binary-relevance metric takes. */
export interface CutoffOptions {
  /** Cut-off: only the top k ranks count. Undefined = the whole list. */
  readonly k?: number
  /** Relevant ⇔ grade ≥ threshold (default 1). */
  readonly threshold?: number
}

/** Arithmetic mean, summed in order; 0 for no values (every aggregate has a value for empty input). */
export const mean = (values: ReadonlyArray<number>): number => {
  if (values.length === 0) return 0
  let sum = 0
  for (const value of values) sum += value
  return sum / values.length
}
