/** RFC 4180 output: quote a field when it holds a comma, quote, CR or LF; lines end with CRLF. */
const NEEDS_QUOTES = /[",\r\n]/

export const csvField = (value: string): string => NEEDS_QUOTES.test(value) ? `"${value.replace(/"/g, "\"\"")}"` : value

export const csvLine = (fields: ReadonlyArray<string>): string => fields.map(csvField).join(",") + "\r\n"
