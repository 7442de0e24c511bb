/** What a CSV cell says as text (the HTML case table's text columns). */
import type { CsvCell } from "./Csv.js"

export const cellText = (cell: CsvCell | undefined): string =>
  cell === undefined ? "" : typeof cell === "string" ? cell : cell.text
