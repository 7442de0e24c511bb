/**
 * RFC 4180 output (a field is quoted when it holds a comma, quote, CR or LF; lines end with CRLF),
 * safe to open in a spreadsheet.
 *
 * CSV injection (OWASP): a spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, tab or CR
 * as a formula (`=HYPERLINK(…)`, DDE `-2+3+cmd|…`). Every text cell that starts with one of them is
 * written with a leading `'`, which spreadsheets show as text and hide. Cells the tool computed
 * itself — scores, counts, metrics, a negative delta — are typed `CsvNumber` and written as they
 * are: a number the tool formatted cannot be a formula, and a prefixed `'-0.5` would no longer be
 * a number. `raw` (`--csv-raw`) turns the neutralisation off, for tools that read the CSV as data.
 */

export { type CsvCell, csvMaybeNumber, type CsvNumber, csvNumber } from "../domain/CsvCell.js"
import type { CsvCell } from "../domain/CsvCell.js"

export interface CsvOptions {
  /** Write text cells as they are, formula-like or not (`--csv-raw`). */
  readonly raw: boolean
}

export const safeCsv: CsvOptions = { raw: false }

const FORMULA_START = /^[=+\-@\t\r]/

/** A text cell that a spreadsheet would run as a formula gets a leading `'`. */
export const neutralise = (text: string): string => FORMULA_START.test(text) ? `'${text}` : text

const NEEDS_QUOTES = /[",\r\n]/

export const csvField = (value: string): string => NEEDS_QUOTES.test(value) ? `"${value.replace(/"/g, "\"\"")}"` : value

const cellText = (cell: CsvCell, options: CsvOptions): string =>
  typeof cell === "string" ? (options.raw ? cell : neutralise(cell)) : cell.text

export const csvLine = (fields: ReadonlyArray<CsvCell>, options: CsvOptions = safeCsv): string =>
  fields.map((f) => csvField(cellText(f, options))).join(",") + "\r\n"

/** The cells of a case's input row under `columns` (the run's input columns): text as it is, other values as JSON, absent ones empty. */
export const sourceCells = (columns: ReadonlyArray<string>, source: Readonly<Record<string, unknown>>) =>
  columns.map((c) => {
    const v = source[c]
    return v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v)
  })
