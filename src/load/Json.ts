/**
 * JSON and JSONL inputs, as pure parsers (text in, rows out); file access is in `Rows.ts`.
 *
 * - JSON: a top-level array of objects, or an object with a `cases` array (its other fields are
 *   returned as metadata, e.g. a test set's version and name). Read whole.
 * - JSONL / NDJSON: one object per line, blank lines skipped, parsed incrementally.
 * Each row's `line` is where its object starts, so later errors (an empty question…) can name it.
 */
import * as Either from "effect/Either"
import { isRecord } from "effect/Predicate"
import { InputError } from "../domain/Errors.js"
import { formatBytes, Limits, overBytes } from "../domain/Limits.js"
import { formatPath, type Row } from "./Row.js"

export interface JsonDocument {
  readonly rows: ReadonlyArray<Row>
  /** Keys of all rows, in order of first appearance. */
  readonly columns: ReadonlyArray<string>
  /** Top-level fields other than `cases` (empty for a top-level array). */
  readonly metadata: Readonly<Record<string, unknown>>
}

const LF = 10

/** "an array", "a number", "null"… for messages. */
export const describeJson = (value: unknown): string =>
  value === null
    ? "null"
    : Array.isArray(value)
    ? "an array"
    : typeof value === "object"
    ? "an object"
    : typeof value === "string"
    ? "a string"
    : typeof value === "number"
    ? "a number"
    : typeof value === "boolean"
    ? "a boolean"
    : typeof value

type Parsed = { readonly ok: true; readonly value: unknown } | {
  readonly ok: false
  readonly message: string
  readonly position: number | undefined
}

/**
 * Rows nest at most this deep (the row object is level 1). Deeper rows are refused while the input
 * is validated: later stages walk rows recursively (hashing, JSON.stringify, prompts), and a row
 * nested thousands deep would end the run with a stack overflow after its judgments were paid for.
 */
export const MAX_JSON_DEPTH: number = Limits.jsonDepth

/**
 * Where `value` nests deeper than `limit` levels of objects and arrays (`value` itself is level 1):
 * the depth reached (limit + 1) and the top-level field it is under; undefined when it does not.
 * Iterative, so any depth JSON.parse accepts is measured without recursion.
 */
export const nestingTooDeep = (
  value: unknown,
  limit = MAX_JSON_DEPTH
): { readonly depth: number; readonly field: string | undefined } | undefined => {
  const values: Array<unknown> = [value]
  const depths: Array<number> = [1]
  const fields: Array<string | undefined> = [undefined]
  while (values.length > 0) {
    const v = values.pop()
    const depth = depths.pop()!
    const field = fields.pop()
    if (typeof v !== "object" || v === null) continue
    if (depth > limit) return { depth, field }
    if (Array.isArray(v)) {
      for (const item of v) {
        values.push(item)
        depths.push(depth + 1)
        fields.push(field)
      }
    } else {
      for (const key in v) {
        values.push((v as Record<string, unknown>)[key])
        depths.push(depth + 1)
        fields.push(field ?? key)
      }
    }
  }
  return undefined
}

/** The bounds a JSON or JSONL input is read under (see `domain/Limits.ts`). */
export interface JsonBounds {
  /** Longest string (a value or a key), in UTF-8 bytes. */
  readonly fieldBytes?: number | undefined
  /** JSONL: longest line, in UTF-8 bytes. */
  readonly recordBytes?: number | undefined
}

/**
 * The path of the first string in `value` (a value or a key) longer than `limit` UTF-8 bytes, or
 * undefined. Rows are at most `MAX_JSON_DEPTH` deep when this runs, so the recursion is bounded.
 */
export const oversizedField = (
  value: unknown,
  limit = Limits.fieldBytes
): ReadonlyArray<PropertyKey> | undefined => {
  const path: Array<PropertyKey> = []
  const walk = (v: unknown): boolean => {
    if (typeof v === "string") return overBytes(v, limit)
    if (typeof v !== "object" || v === null) return false
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        path.push(i)
        if (walk(v[i])) return true
        path.pop()
      }
      return false
    }
    for (const key in v) {
      path.push(key)
      if (overBytes(key, limit) || walk((v as Record<string, unknown>)[key])) return true
      path.pop()
    }
    return false
  }
  return walk(value) ? path : undefined
}

/**
 * A row's problem, in one walk (iterative, as `nestingTooDeep`): nested deeper than `MAX_JSON_DEPTH`
 * (found first), or a string (a value or a key) longer than `fieldBytes` — with its path, looked for
 * only then (the row is known to be shallow by that point); undefined for a sound row.
 */
const rowProblem = (
  value: unknown,
  fieldBytes: number
):
  | { readonly deep: { readonly depth: number; readonly field: string | undefined } }
  | { readonly oversized: ReadonlyArray<PropertyKey> }
  | undefined =>
{
  const values: Array<unknown> = [value]
  const depths: Array<number> = [1]
  const fields: Array<string | undefined> = [undefined]
  // No string is longer in UTF-8 bytes than 3 a character: shorter ones are not measured.
  const suspect = Math.floor(fieldBytes / 3)
  let oversized = false
  while (values.length > 0) {
    const v = values.pop()
    const depth = depths.pop()!
    const field = fields.pop()
    if (typeof v === "string") {
      if (v.length > suspect && overBytes(v, fieldBytes)) oversized = true
      continue
    }
    if (typeof v !== "object" || v === null) continue
    if (depth > MAX_JSON_DEPTH) return { deep: { depth, field } }
    if (Array.isArray(v)) {
      for (const item of v) {
        values.push(item)
        depths.push(depth + 1)
        fields.push(field)
      }
    } else {
      for (const key in v) {
        if (key.length > suspect && overBytes(key, fieldBytes)) oversized = true
        values.push((v as Record<string, unknown>)[key])
        depths.push(depth + 1)
        fields.push(field ?? key)
      }
    }
  }
  return oversized ? { oversized: oversizedField(value, fieldBytes) ?? [] } : undefined
}

/** The problem of a field over the bound (the field itself is named by the error). */
const fieldProblem = (limit: number) => `field exceeds ${formatBytes(limit)} (the most one field may hold)`

const fieldError = (file: string, line: number, path: ReadonlyArray<PropertyKey>, limit: number) =>
  new InputError({
    file,
    line,
    ...(path.length === 0 ? {} : { field: formatPath(path) }),
    problem: fieldProblem(limit)
  })

/**
 * A JSON text read from its start as it arrives (a JSONL line still streaming in): where the string
 * being read is, and how many UTF-8 bytes it holds so far — so a field past its bound is refused
 * while the line streams, before the line is built whole. Only the syntax that places a value is
 * followed (strings, escapes, brackets, commas, colons); the line is parsed for real once whole.
 */
class JsonPrefix {
  /** Open containers: an object's current key, or an array's current index. */
  private readonly open: Array<{ readonly array: boolean; index: number; key: string | undefined }> = []
  private inString = false
  private isKey = false
  private expectKey = false
  private start = 0
  private bytes = 0
  /** Characters of the line read so far. */
  private scanned = 0

  constructor(private readonly limit: number) {}

  /** Reads `line` (the text so far, a prefix of what came before extended) from where it stopped; the path of a string past the bound, if any. */
  feed(line: string): ReadonlyArray<PropertyKey> | undefined {
    const n = line.length
    let i = this.scanned
    while (i < n) {
      const c = line.charCodeAt(i)
      if (this.inString) {
        if (c === 92 /* \ */) {
          // An escape stands for one character: `\uXXXX` for one UTF-16 unit, read once all of it is here.
          if (i + 1 >= n) break
          if (line.charCodeAt(i + 1) === 117 /* u */) {
            if (i + 6 > n) break
            const unit = parseInt(line.slice(i + 2, i + 6), 16)
            this.bytes += unit < 0x80 ? 1 : unit < 0x800 ? 2 : unit >= 0xd800 && unit <= 0xdfff ? 2 : 3
            i += 6
          } else {
            this.bytes += 1
            i += 2
          }
        } else if (c === 34 /* " */) {
          this.inString = false
          if (this.isKey) {
            const top = this.open.at(-1)
            if (top !== undefined) top.key = keyText(line.slice(this.start - 1, i + 1))
          }
          i++
          continue
        } else {
          // A surrogate unit counts 2: a pair is 4 bytes.
          this.bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdfff ? 2 : 3
          i++
        }
        if (this.bytes > this.limit) {
          this.scanned = i
          return this.path()
        }
        continue
      }
      switch (c) {
        case 34 /* " */: {
          this.inString = true
          this.isKey = this.expectKey && this.open.at(-1)?.array === false
          this.start = i + 1
          this.bytes = 0
          break
        }
        case 123 /* { */:
          this.open.push({ array: false, index: 0, key: undefined })
          this.expectKey = true
          break
        case 91 /* [ */:
          this.open.push({ array: true, index: 0, key: undefined })
          this.expectKey = false
          break
        case 125 /* } */:
        case 93 /* ] */:
          this.open.pop()
          break
        case 44 /* , */: {
          const top = this.open.at(-1)
          if (top?.array === true) top.index++
          else this.expectKey = true
          break
        }
        case 58 /* : */:
          this.expectKey = false
          break
      }
      i++
    }
    this.scanned = i
    return undefined
  }

  /** Where the string being read is: the keys and indices of the open containers. */
  private path(): Array<PropertyKey> {
    const path: Array<PropertyKey> = []
    for (const entry of this.open) {
      if (entry.array) path.push(entry.index)
      else if (entry.key !== undefined && !(this.isKey && entry === this.open.at(-1))) path.push(entry.key)
    }
    return path
  }
}

/** A key's text from its JSON form (quotes included); the raw text when it does not parse. */
const keyText = (json: string): string => {
  try {
    return JSON.parse(json) as string
  } catch {
    return json.slice(1, -1)
  }
}

const depthProblem = (found: { readonly field: string | undefined }) =>
  `nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays${
    found.field === undefined ? "" : ` (in field ${JSON.stringify(found.field)})`
  }; flatten it`

/** `JSON.parse` as a value: the message without V8's position suffix, and the position apart. */
const parseJson = (text: string): Parsed => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (error) {
    if (error instanceof RangeError) {
      return {
        ok: false,
        message: `nested too deep to read (${error.message}); rows may nest at most ${MAX_JSON_DEPTH} levels`,
        position: undefined
      }
    }
    const raw = error instanceof Error ? error.message : String(error)
    const match = /at position (\d+)/.exec(raw)
    const message = raw.replace(/\s*(in JSON )?at position \d+(\s*\(line \d+ column \d+\))?/, "")
    return { ok: false, message, position: match === null ? undefined : Number(match[1]) }
  }
}

const lineAndColumn = (text: string, position: number): { line: number; column: number } => {
  let line = 1
  let lineStart = 0
  for (let k = 0; k < position && k < text.length; k++) {
    if (text.charCodeAt(k) === LF) {
      line++
      lineStart = k + 1
    }
  }
  return { line, column: position - lineStart + 1 }
}

const countLines = (text: string): number => {
  let line = 1
  for (let k = text.indexOf("\n"); k !== -1; k = text.indexOf("\n", k + 1)) line++
  return line
}

/** Parses a JSON test set (BOM already removed); every string of every row within `bounds.fieldBytes`. */
export const parseJsonDocument = (
  file: string,
  text: string,
  bounds?: JsonBounds
): Either.Either<JsonDocument, InputError> => {
  const fieldBytes = bounds?.fieldBytes ?? Limits.fieldBytes
  if (text.trim() === "") return Either.left(new InputError({ file, problem: "file is empty" }))
  const parsed = parseJson(text)
  if (!parsed.ok) {
    if (parsed.position === undefined) {
      return Either.left(new InputError({ file, line: countLines(text), problem: `invalid JSON: ${parsed.message}` }))
    }
    const at = lineAndColumn(text, parsed.position)
    return Either.left(
      new InputError({ file, line: at.line, problem: `invalid JSON: ${parsed.message} (column ${at.column})` })
    )
  }
  const top = parsed.value
  let items: ReadonlyArray<unknown>
  let metadata: Record<string, unknown> = {}
  let viaCases: boolean
  if (Array.isArray(top)) {
    items = top
    viaCases = false
  } else if (isRecord(top) && Array.isArray(top.cases)) {
    const { cases, ...rest } = top
    items = cases as ReadonlyArray<unknown>
    metadata = rest
    viaCases = true
  } else {
    const found = isRecord(top)
      ? Object.hasOwn(top, "cases")
        ? `an object whose "cases" is ${describeJson(top.cases)}`
        : `an object without "cases" (keys: ${Object.keys(top).join(", ") || "none"})`
      : describeJson(top)
    return Either.left(
      new InputError({
        file,
        line: 1,
        problem: `expected a top-level array of objects, or an object with a "cases" array; found ${found}`
      })
    )
  }
  if (items.length === 0) {
    return Either.left(
      new InputError({
        file,
        line: 1,
        problem: viaCases ? "no data rows: the \"cases\" array is empty" : "no data rows: the array is empty"
      })
    )
  }
  const lines = elementLines(text, viaCases)
  const rows: Array<Row> = []
  const columns = new KeySet()
  for (let k = 0; k < items.length; k++) {
    const item = items[k]
    const line = lines[k] ?? 1
    if (!isRecord(item)) {
      return Either.left(
        new InputError({
          file,
          line,
          problem: `item ${k + 1}${viaCases ? " of \"cases\"" : ""} is ${describeJson(item)}, expected an object`
        })
      )
    }
    const problem = rowProblem(item, fieldBytes)
    if (problem !== undefined) {
      return Either.left(
        "deep" in problem
          ? new InputError({
            file,
            line,
            problem: `item ${k + 1}${viaCases ? " of \"cases\"" : ""} is ${depthProblem(problem.deep)}`
          })
          : fieldError(file, line, problem.oversized, fieldBytes)
      )
    }
    columns.add(item)
    rows.push({ line, values: item })
  }
  return Either.right({ rows, columns: columns.names, metadata })
}

/** Keys of many objects, in first-seen order. */
class KeySet {
  private readonly seen = new Set<string>()
  readonly names: Array<string> = []
  add(value: Record<string, unknown>): void {
    for (const key in value) {
      if (!this.seen.has(key)) {
        this.seen.add(key)
        this.names.push(key)
      }
    }
  }
}

/**
 * Lines where the elements of the target array start: the top-level array, or the `cases` array of
 * the top-level object. Runs on text that `JSON.parse` accepted, so strings and nesting are sound.
 */
const elementLines = (text: string, viaCases: boolean): Array<number> => {
  const lines: Array<number> = []
  const n = text.length
  let line = 1
  let depth = 0
  /** Depth inside the target array; -1 not found yet, -2 finished. */
  let target = viaCases ? -1 : 1
  let expectElement = false
  let expectKey = false
  let lastKey: string | undefined = undefined
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === LF) {
      line++
      i++
      continue
    }
    if (c === 32 || c === 9 || c === 13) {
      i++
      continue
    }
    if (expectElement && depth === target && c !== 93 /* ] */) {
      lines.push(line)
      expectElement = false
    }
    switch (c) {
      case 34 /* " */: {
        let j = i + 1
        while (j < n) {
          const d = text.charCodeAt(j)
          if (d === 92 /* \ */) j += 2
          else if (d === 34) break
          else j++
        }
        if (viaCases && depth === 1 && expectKey) {
          const key = parseJson(text.slice(i, j + 1))
          lastKey = key.ok && typeof key.value === "string" ? key.value : undefined
          expectKey = false
        }
        i = j + 1
        continue
      }
      case 123 /* { */:
      case 91 /* [ */: {
        depth++
        if (depth === 1 && c === 123) expectKey = true
        if (!viaCases && depth === 1 && c === 91) expectElement = true
        if (viaCases && target === -1 && depth === 2 && c === 91 && lastKey === "cases") {
          target = 2
          expectElement = true
        }
        break
      }
      case 125 /* } */:
      case 93 /* ] */: {
        if (depth === target && c === 93) target = -2
        depth--
        break
      }
      case 44 /* , */: {
        if (depth === target) expectElement = true
        if (depth === 1 && viaCases) expectKey = true
        break
      }
    }
    i++
  }
  return lines
}

/**
 * Incremental JSONL / NDJSON parser: one object per line; blank lines are skipped. A line is held
 * only up to its bounds: past `recordBytes`, or with a string past `fieldBytes` (followed while the
 * line streams in, once it is long enough to hold one), it is refused before it is whole.
 */
export class JsonlParser {
  /** Text of the current, incomplete line. */
  private partial = ""
  /** UTF-8 bytes of `partial`. */
  private partialBytes = 0
  /** Follows `partial` once it may hold a string past the bound. */
  private prefix: JsonPrefix | undefined
  private lineNo = 1
  private rowCount = 0
  private readonly keys = new KeySet()
  readonly fieldBytes: number
  readonly recordBytes: number

  constructor(
    readonly file: string,
    bounds?: JsonBounds,
    /** Rows (lines that are not blank) to count and pass over without parsing them (`ReadOptions.skip`). */
    private skip = 0
  ) {
    this.fieldBytes = bounds?.fieldBytes ?? Limits.fieldBytes
    this.recordBytes = bounds?.recordBytes ?? Limits.recordBytes
  }

  /** Line (1-based) of the line being read. */
  get line(): number {
    return this.lineNo
  }

  /** Keys of all rows so far, in order of first appearance. */
  get columns(): ReadonlyArray<string> {
    return this.keys.names
  }

  get rows(): number {
    return this.rowCount
  }

  push(s: string, out: Array<Row>): InputError | undefined {
    let start = 0
    let nl = s.indexOf("\n")
    while (nl !== -1) {
      const piece = s.slice(start, nl)
      const text = this.partial === "" ? piece : this.partial + piece
      // A line that came whole in one piece is parsed first (the usual case); checked here only when it could be too large.
      const tooLarge = this.partial === "" && piece.length * 3 <= Math.min(this.fieldBytes, this.recordBytes)
        ? undefined
        : this.grown(text, piece)
      this.partial = ""
      this.partialBytes = 0
      this.prefix = undefined
      if (tooLarge !== undefined) return tooLarge
      const problem = this.parseLine(text, out)
      if (problem !== undefined) return problem
      this.lineNo++
      start = nl + 1
      nl = s.indexOf("\n", start)
    }
    const rest = s.slice(start)
    this.partial += rest
    return this.grown(this.partial, rest)
  }

  /** The line so far (`text`, grown by `piece`) checked against the bounds while it streams in. */
  private grown(text: string, piece: string): InputError | undefined {
    this.partialBytes += Buffer.byteLength(piece, "utf8")
    // No string can be past the bound before the line is: follow the line only once it is that long.
    if (this.partialBytes > this.fieldBytes) {
      this.prefix ??= new JsonPrefix(this.fieldBytes)
      const path = this.prefix.feed(text)
      if (path !== undefined) return fieldError(this.file, this.lineNo, path, this.fieldBytes)
    }
    if (this.partialBytes > this.recordBytes) {
      return new InputError({
        file: this.file,
        line: this.lineNo,
        problem: `line exceeds ${formatBytes(this.recordBytes)} (the most one line, one case, may hold)`
      })
    }
    return undefined
  }

  end(out: Array<Row>): InputError | undefined {
    const text = this.partial
    this.partial = ""
    const problem = this.parseLine(text, out)
    if (problem !== undefined) return problem
    if (this.rowCount === 0) {
      return new InputError({ file: this.file, problem: "no data rows: the file has only blank lines" })
    }
    return undefined
  }

  private parseLine(text: string, out: Array<Row>): InputError | undefined {
    if (text.trim() === "") return undefined
    if (this.skip > 0) {
      this.skip--
      this.rowCount++
      return undefined
    }
    const parsed = parseJson(text)
    if (!parsed.ok) {
      const column = parsed.position === undefined ? "" : ` (column ${parsed.position + 1})`
      return new InputError({ file: this.file, line: this.lineNo, problem: `invalid JSON: ${parsed.message}${column}` })
    }
    const value = parsed.value
    if (!isRecord(value)) {
      return new InputError({
        file: this.file,
        line: this.lineNo,
        problem: `expected a JSON object on each line, found ${describeJson(value)}`
      })
    }
    const problem = rowProblem(value, this.fieldBytes)
    if (problem !== undefined) {
      return "deep" in problem
        ? new InputError({ file: this.file, line: this.lineNo, problem: `the object is ${depthProblem(problem.deep)}` })
        : fieldError(this.file, this.lineNo, problem.oversized, this.fieldBytes)
    }
    this.keys.add(value)
    this.rowCount++
    out.push({ line: this.lineNo, values: value })
    return undefined
  }
}
