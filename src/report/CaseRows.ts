/**
 * A pipeline's per-case results as table rows, for the reports that choose cases (bounded markdown
 * details, the HTML case table): every report view already turns a record into CSV cells, so these
 * work for every pipeline without a view of their own. Which column ranks cases ("lowest") and
 * which rows count as failed is decided here, once.
 */
import type { CsvCell } from "./Csv.js"

/** Headline columns, in order of preference: the first the header has ranks the cases. */
const HEADLINE = ["composite", "overall", "ndcg@10", "coverage@10", "ndcg", "ap", "averagerelevance"]

/** The index of the column that ranks cases (lowest first), or -1 when the header has none. */
export const headlineColumn = (header: ReadonlyArray<string>): number => {
  const lower = header.map((h) => h.toLowerCase())
  for (const name of HEADLINE) {
    const i = lower.indexOf(name)
    if (i !== -1) return i
  }
  return -1
}

/** A cell's number, or undefined for text and empty cells. */
export const cellNumber = (cell: CsvCell | undefined): number | undefined => {
  if (cell === undefined || typeof cell === "string" || cell.text === "") return undefined
  const n = Number(cell.text)
  return Number.isFinite(n) ? n : undefined
}

export const cellText = (cell: CsvCell | undefined): string => cell === undefined ? "" : typeof cell === "string" ? cell : cell.text

/**
 * Did something fail for this case: a judgment recorded as failed (`judge_failed: …` reason, a
 * `failed judgments` count above 0), a failed retrieval, or no headline value at all.
 */
export const rowFailed = (header: ReadonlyArray<string>, cells: ReadonlyArray<CsvCell>, headline: number): boolean => {
  for (let i = 0; i < cells.length; i++) {
    const c = cells[i]!
    if (typeof c === "string") {
      if (c.startsWith("judge_failed") || (header[i] === "retrieval" && c.startsWith("failed"))) return true
    } else if (header[i] === "failed judgments" && Number(c.text) > 0) {
      return true
    }
  }
  return headline !== -1 && cellNumber(cells[headline]) === undefined
}

/** Where a record came from: every pipeline's records carry their case id and input line. */
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
