/**
 * A run's cases filtered, sorted and paged over its index (`CaseIndex.ts`): failing, a metric range,
 * labelled or not, a text search; sorted by a per-case metric (nulls last, ties in input order) or
 * in input order. Only the matching case numbers are held (an Int32Array), and only the page's
 * records are read back.
 *
 * Text search scans the records file line by line (case-insensitive, in the JSON text of each
 * record — the question, answer, passages, claims, reasons — and the case id), and its matches are
 * kept for the next pages (a few searches per index, most recent first).
 */
import * as Effect from "effect/Effect"
import type { InputError } from "../domain/Errors.js"
import { type CaseIndex, FAILED, FLAGGED, VERDICT_FAIL, VERDICT_PASS } from "./CaseIndex.js"
import { scanLines } from "./LineFile.js"

export interface CaseFilter {
  readonly failing?: boolean | undefined
  readonly q?: string | undefined
  readonly metric?: string | undefined
  readonly min?: number | undefined
  readonly max?: number | undefined
  /** Cases with (true) or without (false) a label. */
  readonly labelled?: boolean | undefined
  readonly sort?: string | undefined
  readonly order?: "asc" | "desc" | undefined
}

export type Status = "fail" | "warn" | "pass" | "none"

export const statusOf = (bits: number): Status =>
  (bits & (FAILED | VERDICT_FAIL)) !== 0
    ? "fail"
    : (bits & FLAGGED) !== 0
    ? "warn"
    : (bits & VERDICT_PASS) !== 0
    ? "pass"
    : "none"

export const isFailing = (bits: number): boolean => (bits & (FAILED | VERDICT_FAIL)) !== 0

/** The column of a metric, or -1. */
export const metricColumn = (index: CaseIndex, name: string): number => index.metrics.findIndex((m) => m.name === name)

export const valueOf = (index: CaseIndex, column: number, i: number): number | null => {
  const v = index.columns[column * index.cases + i]!
  return Number.isNaN(v) ? null : v
}

const searches = new WeakMap<CaseIndex, Array<{ readonly q: string; readonly matches: Uint8Array }>>()
const KEPT_SEARCHES = 4

/** JSON text of the query as it appears inside a JSON string (quotes, backslashes, newlines escaped), lowercased. */
const needleOf = (q: string): string => JSON.stringify(q.toLowerCase()).slice(1, -1)

/** Cases whose record (or case id) contains `q`, case-insensitively: one byte per case. */
export const search = (index: CaseIndex, q: string): Effect.Effect<Uint8Array, InputError> =>
  Effect.gen(function*() {
    let kept = searches.get(index)
    if (kept === undefined) searches.set(index, kept = [])
    const hit = kept.find((s) => s.q === q)
    if (hit !== undefined) return hit.matches
    const needle = needleOf(q)
    const ascii = /^[\x00-\x7f]*$/.test(needle)
    const matches = new Uint8Array(index.cases)
    const file = index.recordsFile ?? index.metricsFile
    if (file !== undefined) {
      const fromRecords = file === index.recordsFile
      let n = 0
      yield* scanLines(file, (buffer, start, end, _offset, torn) => {
        // Blank lines and a torn last line are no case's (the index leaves them out).
        if (end === start || torn) return
        const line = n++
        const c = fromRecords ? index.recordCase[line] ?? -1 : line
        if (c < 0 || c >= index.cases) return
        // An ASCII query is looked for in the bytes read as Latin-1 (a copy, no UTF-8 decoding: several
        // times faster; lowercasing moves no byte of a multi-byte character below 0x80, so an ASCII
        // needle matches exactly what it matches in the UTF-8 text); any other query in the UTF-8 text.
        if (buffer.toString(ascii ? "latin1" : "utf8", start, end).toLowerCase().includes(needle)) matches[c] = 1
      })
    }
    kept.unshift({ q, matches })
    if (kept.length > KEPT_SEARCHES) kept.pop()
    return matches
  })

/** The cases matching the filter, in the requested order. `labelled`: the cases (by number) with a label. */
export const selectCases = (
  index: CaseIndex,
  filter: CaseFilter,
  labelled: ReadonlySet<number>
): Effect.Effect<Int32Array, InputError> =>
  Effect.gen(function*() {
    const n = index.cases
    const matches = filter.q !== undefined && filter.q.trim() !== "" ? yield* search(index, filter.q.trim()) : undefined
    const rangeColumn = filter.metric === undefined ? -1 : metricColumn(index, filter.metric)
    const min = filter.min ?? -Infinity
    const max = filter.max ?? Infinity
    const picked = new Int32Array(n)
    let count = 0
    for (let i = 0; i < n; i++) {
      if (filter.failing === true && !isFailing(index.status[i]!)) continue
      if (matches !== undefined && matches[i] !== 1) continue
      if (rangeColumn >= 0) {
        const v = index.columns[rangeColumn * n + i]!
        if (Number.isNaN(v) || v < min || v > max) continue
      }
      if (filter.labelled !== undefined && labelled.has(i) !== filter.labelled) continue
      picked[count++] = i
    }
    const out = picked.slice(0, count)
    const sortColumn = filter.sort === undefined || filter.sort === "line" ? -1 : metricColumn(index, filter.sort)
    const desc = filter.order === "desc"
    if (sortColumn >= 0) {
      const base = sortColumn * n
      out.sort((x, y) => {
        const a = index.columns[base + x]!
        const b = index.columns[base + y]!
        const an = Number.isNaN(a)
        const bn = Number.isNaN(b)
        if (an || bn) return an && bn ? x - y : an ? 1 : -1
        return (desc ? b - a : a - b) || x - y
      })
    } else if (desc) {
      out.reverse()
    }
    return out
  })
