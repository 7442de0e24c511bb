/**
 * What a pipeline shows of one case in the HTML page's folded case block, as data: a few labelled
 * fields (the query, a retrieval error…) and tables (one row per hit, per claim, per gold span),
 * each row with a status that colours it. The page escapes every string here — a view never writes
 * markup — so a case's text stays text, whichever pipeline produced it. A leaf module: the report
 * view interface (`engine/Pipeline.ts`) and the page (`Html.ts`) both import it.
 */

/** How a row or a case reads: `fail` (red: below the bar, a failed judgment), `warn` (amber: flagged, a convention), `pass` (green), or none. */
export type Status = "pass" | "fail" | "warn" | "none"

/** A cell: text, a number (formatted by the page), or null (unknown: shown as —). */
export type DetailCell = string | number | null

export interface DetailRow {
  readonly cells: ReadonlyArray<DetailCell>
  readonly status?: Status | undefined
}

export interface DetailTable {
  /** Shown above the table, e.g. "Hits (5), graded 0–3 by the judge". */
  readonly caption: string
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<DetailRow>
  /** Indexes of the columns that hold long text (wider, pre-wrapped, cut at the page's limit). */
  readonly textColumns?: ReadonlyArray<number> | undefined
}

export interface CaseDetail {
  /** Labelled text shown first: `[label, text]`. */
  readonly fields?: ReadonlyArray<readonly [string, string]> | undefined
  readonly tables?: ReadonlyArray<DetailTable> | undefined
  /** A line saying what is wrong with the case (a retrieval error…), shown in red. */
  readonly problem?: string | undefined
}
