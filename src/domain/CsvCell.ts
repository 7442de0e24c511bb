/**
 * A report view's CSV cells (see `report/Csv.ts` for how they are written): text, or a number the
 * tool computed, which is never neutralised against formula injection.
 */

/** A number the tool computed, already formatted (e.g. `0.8235`, `-0.5`): never neutralised. */
export interface CsvNumber {
  readonly _tag: "CsvNumber"
  readonly text: string
}

/** A cell: text (from the input, the judge…) or a number the tool computed. */
export type CsvCell = string | CsvNumber

/** A computed number as a cell: `digits` decimals (`toFixed`), else its shortest form. Non-finite → empty. */
export const csvNumber = (value: number, digits?: number): CsvNumber => ({
  _tag: "CsvNumber",
  text: !Number.isFinite(value) ? "" : digits === undefined ? String(value) : value.toFixed(digits)
})

/** `csvNumber`, or an empty cell for a missing value. */
export const csvMaybeNumber = (value: number | null | undefined, digits?: number): CsvCell =>
  value === null || value === undefined ? "" : csvNumber(value, digits)
