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
import type { Row } from "./Row.js"

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
export const MAX_JSON_DEPTH = 64

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

/** Parses a JSON test set (BOM already removed). */
export const parseJsonDocument = (file: string, text: string): Either.Either<JsonDocument, InputError> => {
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
    const deep = nestingTooDeep(item)
    if (deep !== undefined) {
      return Either.left(
        new InputError({
          file,
          line,
          problem: `item ${k + 1}${viaCases ? " of \"cases\"" : ""} is ${depthProblem(deep)}`
        })
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

/** Incremental JSONL / NDJSON parser: one object per line; blank lines are skipped. */
export class JsonlParser {
  /** Text of the current, incomplete line. */
  private partial = ""
  private lineNo = 1
  private rowCount = 0
  private readonly keys = new KeySet()

  constructor(readonly file: string) {}

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
      const text = this.partial === "" ? s.slice(start, nl) : this.partial + s.slice(start, nl)
      this.partial = ""
      const problem = this.parseLine(text, out)
      if (problem !== undefined) return problem
      this.lineNo++
      start = nl + 1
      nl = s.indexOf("\n", start)
    }
    this.partial += s.slice(start)
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
    const deep = nestingTooDeep(value)
    if (deep !== undefined) {
      return new InputError({ file: this.file, line: this.lineNo, problem: `the object is ${depthProblem(deep)}` })
    }
    this.keys.add(value)
    this.rowCount++
    out.push({ line: this.lineNo, values: value })
    return undefined
  }
}
