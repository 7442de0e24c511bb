/**
 * Helpers of the reports that choose cases (bounded markdown details, the HTML case table): what a
 * CSV cell says as text, the lowest cases kept in bounded memory, a seeded sample. Which metric ranks
 * cases and which count as failed is the pipeline's own declaration (`PerCaseMetrics`, `ReportView.headline`).
 */
import type { CsvCell } from "./Csv.js"

export const cellText = (cell: CsvCell | undefined): string =>
  cell === undefined ? "" : typeof cell === "string" ? cell : cell.text

/**
 * Where a record came from, for a pipeline that declares no per-case metrics (a user's own): its
 * `caseId` and `line` fields, when it has them.
 */
export const caseOf = (record: unknown): { readonly caseId: string; readonly line: number | undefined } => {
  const r = record as { readonly caseId?: unknown; readonly line?: unknown } | null
  return {
    caseId: typeof r?.caseId === "string" ? r.caseId : "",
    line: typeof r?.line === "number" ? r.line : undefined
  }
}

/** Seeded PRNG (mulberry32): the HTML page's sample is the same on every render of a run. */
export const seededRandom = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Keep the `size` lowest items by `score` seen so far, in bounded memory (a sorted buffer trimmed
 * when it doubles): `add` is amortised O(log n).
 */
export class Lowest<A> {
  private items: Array<{ readonly score: number; readonly ordinal: number; readonly item: A }> = []
  constructor(private readonly size: number) {}
  add(score: number, ordinal: number, item: A) {
    if (this.size <= 0) return
    this.items.push({ score, ordinal, item })
    if (this.items.length >= this.size * 2) this.trim()
  }
  private trim() {
    this.items.sort((a, b) => a.score - b.score || a.ordinal - b.ordinal)
    this.items.length = Math.min(this.items.length, this.size)
  }
  /** Lowest first (ties in input order). */
  result(): ReadonlyArray<{ readonly score: number; readonly ordinal: number; readonly item: A }> {
    this.trim()
    return this.items
  }
}
