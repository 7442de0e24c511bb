/**
 * The unit that flows through the pipeline: one test case, as loaded and then retrieved.
 */

/** One retrieved passage / hit / fragment, in retriever order (rank is 1-based). */
export interface Passage {
  readonly id: string
  readonly rank: number
  readonly text: string
  /** Retriever score when the retriever gives one. */
  readonly score?: number | undefined
  /** Extra structured fields (e.g. a course's code and learning outcomes, a hit's fields). */
  readonly fields?: Readonly<Record<string, unknown>> | undefined
}

export interface EvalCase {
  /** Stable id: from an id column/field, else the 1-based row number as a string. */
  readonly id: string
  /** 0-based position in the input; reports keep input order. */
  readonly ordinal: number
  /** Line (CSV/JSONL) where the case starts, for messages. */
  readonly line: number
  readonly question: string
  /** Absent for cases without an answer (retrieval-only pipelines). */
  readonly answer?: string | undefined
  readonly history?: string | undefined
  /** Filled by the retrieve stage (precomputed passages already arrive here from the loader). */
  readonly passages: ReadonlyArray<Passage>
  /** The input row/object as read, passed through to reports (CSV keeps the input columns). */
  readonly source: Readonly<Record<string, unknown>>
}
