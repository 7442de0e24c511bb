/**
 * Incremental RFC 4180 CSV parser: text chunks in, rows out, no I/O.
 *
 * A hand-rolled state machine so a file streams through in constant memory (one record, and at most
 * `maxFieldBytes` per field, is buffered). Decoding (UTF-8, BOM) happens before, in `Rows.ts`.
 * Accepted: CRLF, LF and lone CR line breaks; quoted fields with commas, line breaks and doubled
 * quotes; no trailing newline; blank lines (anywhere, typically trailing) are skipped. A quote
 * inside an unquoted field is kept as a literal character (common in hand-made files), but text
 * after a closing quote is an error, since it means a quote inside a quoted field was not doubled.
 */
import * as Either from "effect/Either"
import { InputError } from "../domain/Errors.js"
import { formatBytes, Limits } from "../domain/Limits.js"
import type { Row } from "./Row.js"

export { formatBytes } from "../domain/Limits.js"

export interface CsvOptions {
  /** Longest accepted field, in UTF-8 bytes (default `Limits.fieldBytes`, 1 MiB). */
  readonly maxFieldBytes?: number | undefined
  /** Longest accepted row, in UTF-8 bytes, a byte per separator (default `Limits.recordBytes`, 16 MiB). */
  readonly maxRecordBytes?: number | undefined
  /** Data rows to count and pass over without making their values (`ReadOptions.skip`). */
  readonly skip?: number | undefined
}

const COMMA = 44
const QUOTE = 34
const LF = 10
const CR = 13

// Parser states.
const FIELD_START = 0
const UNQUOTED = 1
const QUOTED = 2
/** Inside a quoted field, just after a quote: either a doubled quote or the closing one. */
const QUOTE_SEEN = 3

export class CsvParser {
  readonly maxFieldBytes: number
  readonly maxRecordBytes: number
  /** Characters of the current record's finished fields, a separator each. */
  private recordChars = 0
  /** Their UTF-8 bytes, counted only once the characters could pass the bound (3 bytes a character at most). */
  private recordBytes: number | undefined = undefined
  private state = FIELD_START
  /** The last character consumed was a CR: a following LF belongs to the same line break. */
  private pendingCR = false
  /** Current physical line (1-based). */
  private lineNo = 1
  /** Line where the current record starts. */
  private recordLine = 1
  /** Line where the current quoted field starts. */
  private quoteLine = 1
  private recordQuoted = false
  /** Text of the current field accumulated across chunks. */
  private field = ""
  private readonly fields: Array<string> = []
  private header: ReadonlyArray<string> | undefined = undefined
  private headerLine = 1
  /** A header named `__proto__` needs `defineProperty` to become an own property. */
  private protoKey = false
  private rowCount = 0

  /** Data rows still to pass over. */
  private skip: number

  constructor(readonly file: string, options?: CsvOptions) {
    this.maxFieldBytes = options?.maxFieldBytes ?? Limits.fieldBytes
    this.maxRecordBytes = options?.maxRecordBytes ?? Limits.recordBytes
    this.skip = options?.skip ?? 0
  }

  /** Current line (1-based): where the next character would be. */
  get line(): number {
    return this.lineNo
  }

  /** Column names, once the header has been read. */
  get columns(): ReadonlyArray<string> | undefined {
    return this.header
  }

  /** Data rows emitted so far. */
  get rows(): number {
    return this.rowCount
  }

  /** Parses a chunk, appending the completed rows to `out`; returns the first problem found. */
  push(s: string, out: Array<Row>): InputError | undefined {
    const n = s.length
    let i = 0
    while (i < n) {
      const state = this.state
      if (state === FIELD_START) {
        const c = s.charCodeAt(i)
        if (this.pendingCR) {
          this.pendingCR = false
          if (c === LF) {
            i++
            continue
          }
        }
        if (c === QUOTE) {
          this.state = QUOTED
          this.recordQuoted = true
          this.quoteLine = this.lineNo
          i++
        } else {
          this.state = UNQUOTED
        }
      } else if (state === UNQUOTED) {
        let j = i
        let c = 0
        while (j < n) {
          c = s.charCodeAt(j)
          if (c === COMMA || c === LF || c === CR) break
          j++
        }
        const value = this.field === "" ? s.slice(i, j) : this.field + s.slice(i, j)
        if (value.length * 3 > this.maxFieldBytes) {
          const tooLong = this.checkLength(value)
          if (tooLong !== undefined) return tooLong
        }
        if (j === n) {
          this.field = value
          return undefined
        }
        i = j + 1
        const tooLarge = this.addField(value)
        if (tooLarge !== undefined) return tooLarge
        this.field = ""
        this.state = FIELD_START
        if (c !== COMMA) {
          this.lineNo++
          this.pendingCR = c === CR
          const problem = this.endRecord(out)
          if (problem !== undefined) return problem
        }
      } else if (state === QUOTED) {
        const j = s.indexOf("\"", i)
        const end = j === -1 ? n : j
        if (end > i) {
          this.countBreaks(s, i, end)
          this.field += s.slice(i, end)
          if (this.field.length * 3 > this.maxFieldBytes) {
            const tooLong = this.checkLength(this.field)
            if (tooLong !== undefined) return tooLong
          }
        }
        if (j === -1) return undefined
        this.pendingCR = false
        this.state = QUOTE_SEEN
        i = j + 1
      } else {
        const c = s.charCodeAt(i)
        if (c === QUOTE) {
          this.field += "\""
          this.state = QUOTED
          i++
        } else if (c === COMMA) {
          const tooLarge = this.addField(this.field)
          if (tooLarge !== undefined) return tooLarge
          this.field = ""
          this.state = FIELD_START
          i++
        } else if (c === LF || c === CR) {
          const tooLarge = this.addField(this.field)
          if (tooLarge !== undefined) return tooLarge
          this.field = ""
          this.state = FIELD_START
          this.lineNo++
          this.pendingCR = c === CR
          i++
          const problem = this.endRecord(out)
          if (problem !== undefined) return problem
        } else {
          return this.problem(
            this.lineNo,
            `unexpected ${JSON.stringify(s[i])} after the closing quote of column ${this.fields.length + 1}` +
              " (a quote inside a quoted field must be doubled: \"\")",
            this.fields.length
          )
        }
      }
    }
    return undefined
  }

  /** Ends the input: flushes the last record (no trailing newline needed) and checks completeness. */
  end(out: Array<Row>): InputError | undefined {
    if (this.state === QUOTED) {
      return this.problem(
        this.quoteLine,
        `unbalanced quote: the quoted field in column ${this.fields.length + 1} starting on this line never closes`,
        this.fields.length
      )
    }
    if (this.state !== FIELD_START || this.fields.length > 0) {
      const tooLarge = this.addField(this.field)
      if (tooLarge !== undefined) return tooLarge
      this.field = ""
      this.state = FIELD_START
      const problem = this.endRecord(out)
      if (problem !== undefined) return problem
    }
    if (this.header === undefined) {
      return new InputError({ file: this.file, problem: "file is empty (no header row)" })
    }
    if (this.rowCount === 0) {
      return new InputError({
        file: this.file,
        line: this.headerLine,
        problem: "no data rows: the file has a header but no rows"
      })
    }
    return undefined
  }

  /** A finished field into the record, which stays within `maxRecordBytes` (refused at the field that passes it). */
  private addField(value: string): InputError | undefined {
    this.fields.push(value)
    this.recordChars += value.length + 1
    if (this.recordBytes !== undefined) this.recordBytes += Buffer.byteLength(value, "utf8") + 1
    else if (this.recordChars * 3 > this.maxRecordBytes) {
      let bytes = 0
      for (const f of this.fields) bytes += Buffer.byteLength(f, "utf8") + 1
      this.recordBytes = bytes
    }
    if (this.recordBytes === undefined || this.recordBytes <= this.maxRecordBytes) return undefined
    return this.problem(
      this.recordLine,
      `row exceeds ${
        formatBytes(this.maxRecordBytes)
      } (the most one row, one case, may hold; column ${this.fields.length})`,
      this.fields.length - 1
    )
  }

  private endRecord(out: Array<Row>): InputError | undefined {
    const fields = this.fields
    this.recordChars = 0
    this.recordBytes = undefined
    const line = this.recordLine
    this.recordLine = this.lineNo
    const quoted = this.recordQuoted
    this.recordQuoted = false
    const count = fields.length
    if (count === 1 && !quoted && fields[0]!.trim() === "") {
      fields.length = 0
      return undefined
    }
    const header = this.header
    if (header === undefined) {
      const names = fields.slice()
      fields.length = 0
      return this.setHeader(names, line)
    }
    if (count !== header.length) {
      fields.length = 0
      const hint = count > header.length ? " (is a field containing a comma missing its quotes?)" : ""
      return new InputError({
        file: this.file,
        line,
        problem: `expected ${header.length} fields (as in the header), found ${count}${hint}`
      })
    }
    if (this.skip > 0) {
      this.skip--
      fields.length = 0
      this.rowCount++
      return undefined
    }
    const values: Record<string, string> = {}
    if (this.protoKey) {
      for (let k = 0; k < count; k++) {
        Object.defineProperty(values, header[k]!, { value: fields[k], enumerable: true, writable: true })
      }
    } else {
      for (let k = 0; k < count; k++) values[header[k]!] = fields[k]!
    }
    fields.length = 0
    this.rowCount++
    out.push({ line, values })
    return undefined
  }

  private setHeader(names: Array<string>, line: number): InputError | undefined {
    this.headerLine = line
    const seen = new Map<string, number>()
    for (let k = 0; k < names.length; k++) {
      const name = names[k]!
      if (name.trim() === "") {
        return new InputError({ file: this.file, line, problem: `empty column name in the header (column ${k + 1})` })
      }
      const first = seen.get(name)
      if (first !== undefined) {
        return new InputError({
          file: this.file,
          line,
          problem: `duplicate column name ${JSON.stringify(name)} in the header (columns ${first + 1} and ${k + 1})`
        })
      }
      seen.set(name, k)
    }
    this.protoKey = seen.has("__proto__")
    this.header = names
    return undefined
  }

  /** Counts line breaks inside quoted text (CRLF, LF or lone CR each count once). */
  private countBreaks(s: string, from: number, to: number): void {
    let line = this.lineNo
    let cr = this.pendingCR
    for (let k = from; k < to; k++) {
      const c = s.charCodeAt(k)
      if (c === LF) {
        if (!cr) line++
        cr = false
      } else if (c === CR) {
        line++
        cr = true
      } else {
        cr = false
      }
    }
    this.lineNo = line
    this.pendingCR = cr
  }

  /** Called only when the field may be too long (more than a third of the limit in UTF-16 units). */
  private checkLength(value: string): InputError | undefined {
    if (value.length <= this.maxFieldBytes && Buffer.byteLength(value, "utf8") <= this.maxFieldBytes) return undefined
    const line = this.state === QUOTED ? this.quoteLine : this.lineNo
    const column = this.fields.length
    return this.problem(
      line,
      `field exceeds ${formatBytes(this.maxFieldBytes)} (column ${column + 1})`,
      column
    )
  }

  private problem(line: number, problem: string, column: number): InputError {
    const field = this.header?.[column]
    return new InputError(
      field === undefined ? { file: this.file, line, problem } : { file: this.file, line, field, problem }
    )
  }
}

/** Parses a whole CSV text (BOM already removed). Convenient for small inputs and tests. */
export const parseCsvText = (
  file: string,
  text: string,
  options?: CsvOptions
): Either.Either<{ readonly columns: ReadonlyArray<string>; readonly rows: ReadonlyArray<Row> }, InputError> => {
  const parser = new CsvParser(file, options)
  const rows: Array<Row> = []
  const problem = parser.push(text, rows) ?? parser.end(rows)
  return problem === undefined ? Either.right({ columns: parser.columns ?? [], rows }) : Either.left(problem)
}
