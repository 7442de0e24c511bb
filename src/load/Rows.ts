/**
 * The input loader's entry: a file path in, a stream of rows out, whatever the format.
 *
 * `readRows` streams CSV and JSONL in constant memory (JSON is read whole); `scanInput` is the
 * validating pass the runner makes before any judge call, so a bad last line costs nothing.
 * Files are read with `node:fs` directly (a file handle, 64 KiB reads) and decoded with a fatal
 * streaming `TextDecoder`, which also drops a leading BOM.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import type { FileHandle } from "node:fs/promises"
import { open } from "node:fs/promises"
import * as NodePath from "node:path"
import { TextDecoder } from "node:util"
import { InputError } from "../domain/Errors.js"
import { formatBytes, Limits } from "../domain/Limits.js"
import { CsvParser } from "./Csv.js"
import { JsonlParser, parseJsonDocument } from "./Json.js"
import type { Row } from "./Row.js"

export type { Row } from "./Row.js"

export type InputFormat = "csv" | "json" | "jsonl"

export interface ReadOptions {
  /** Overrides the choice by extension. */
  readonly format?: InputFormat | undefined
  /** Longest accepted field (a CSV cell, a JSON string) in UTF-8 bytes (default `Limits.fieldBytes`). */
  readonly maxFieldBytes?: number | undefined
  /** Longest accepted record (a CSV row, a JSONL line) in UTF-8 bytes (default `Limits.recordBytes`). */
  readonly maxRecordBytes?: number | undefined
  /** Largest accepted JSON document (read whole) in bytes (default `Limits.jsonDocumentBytes`). */
  readonly maxJsonBytes?: number | undefined
  /**
   * Rows not wanted at the start (a resume past the cases it kept): counted and passed over without
   * being parsed into values or checked beyond finding where they end (a CSV row's fields are still
   * counted against the header). The rows after them keep their lines.
   */
  readonly skip?: number | undefined
}

export interface ScanOptions extends ReadOptions {
  /**
   * Extra validation of every row during the scan (e.g. building the case), so that a bad value
   * anywhere is reported before the run starts.
   */
  readonly check?: ((row: Row, ordinal: number) => Effect.Effect<unknown, InputError>) | undefined
}

export interface InputSummary {
  readonly rows: number
  /** SHA-256 of the raw bytes, hex. */
  readonly sha256: string
  /** CSV header, or the keys of JSON/JSONL objects in order of first appearance. */
  readonly columns: ReadonlyArray<string>
  /** JSON `{ cases, ...metadata }`: the other top-level fields; `{}` otherwise. */
  readonly metadata: Readonly<Record<string, unknown>>
  readonly format: InputFormat
}

/** The format for a path: the explicit one, else by extension. */
export const formatOf = (path: string, format?: InputFormat): Either.Either<InputFormat, InputError> => {
  if (format !== undefined) return Either.right(format)
  const ext = NodePath.extname(path).toLowerCase()
  switch (ext) {
    case ".csv":
      return Either.right("csv")
    case ".json":
      return Either.right("json")
    case ".jsonl":
    case ".ndjson":
      return Either.right("jsonl")
  }
  return Either.left(
    new InputError({
      file: path,
      problem: `${ext === "" ? "no file extension" : `unknown file extension "${ext}"`}: ` +
        "expected .csv, .json, .jsonl or .ndjson (or choose the format explicitly: csv, json or jsonl)"
    })
  )
}

/** Rows of a CSV, JSON or JSONL file, with the line where each starts. */
export const readRows = (path: string, options?: ReadOptions): Stream.Stream<Row, InputError> =>
  Stream.unwrapScoped(
    Effect.gen(function*() {
      const handle = yield* openInput(path)
      const format = yield* formatOf(path, options?.format)
      if (format === "json") {
        const document = yield* readJson(path, handle, options)
        return Stream.fromIterable((options?.skip ?? 0) > 0 ? document.rows.slice(options!.skip) : document.rows)
      }
      return parseText(path, handle, textParser(path, format, options))
    })
  )

/**
 * SHA-256 of a file's bytes (as `scanInput` computes it) without parsing it: 1 MiB reads through the
 * native hash, about a second for 500 MB. Undefined when the file cannot be read (the full scan then
 * says why).
 */
export const hashInput = (path: string): string | undefined => {
  let fd: number | undefined
  try {
    fd = fs.openSync(path, "r")
    const hash = createHash("sha256")
    const buf = Buffer.allocUnsafe(1 << 20)
    for (let n = fs.readSync(fd, buf, 0, buf.length, null); n > 0; n = fs.readSync(fd, buf, 0, buf.length, null)) {
      hash.update(buf.subarray(0, n))
    }
    return hash.digest("hex")
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/**
 * One full validating pass over the input, in constant memory for CSV and JSONL: row count, columns,
 * SHA-256 of the raw bytes, and every row through `options.check` when given.
 */
export const scanInput = (path: string, options?: ScanOptions): Effect.Effect<InputSummary, InputError> =>
  Effect.scoped(
    Effect.gen(function*() {
      const handle = yield* openInput(path)
      const format = yield* formatOf(path, options?.format)
      const check = options?.check
      if (format === "json") {
        const document = yield* readJson(path, handle, options)
        if (check !== undefined) yield* Effect.forEach(document.rows, check, { discard: true })
        return {
          rows: document.rows.length,
          sha256: document.sha256,
          columns: document.columns,
          metadata: document.metadata,
          format
        }
      }
      const hash = createHash("sha256")
      const parser = textParser(path, format, options)
      const rows = parseText(path, handle, parser, (bytes) => hash.update(bytes))
      if (check === undefined) {
        yield* Stream.runDrain(rows)
      } else {
        let ordinal = 0
        yield* Stream.runForEach(rows, (row) => check(row, ordinal++))
      }
      return { rows: parser.rows, sha256: hash.digest("hex"), columns: parser.columns ?? [], metadata: {}, format }
    })
  )

/** What `parseText` drives: the CSV and JSONL parsers. */
interface TextParser {
  /** Current 1-based line, to place a decoding error. */
  readonly line: number
  readonly rows: number
  readonly columns: ReadonlyArray<string> | undefined
  push(text: string, out: Array<Row>): InputError | undefined
  end(out: Array<Row>): InputError | undefined
}

const textParser = (path: string, format: "csv" | "jsonl", options: ReadOptions | undefined): TextParser => {
  const bounds = { maxFieldBytes: options?.maxFieldBytes, maxRecordBytes: options?.maxRecordBytes }
  return format === "csv"
    ? new CsvParser(path, { ...bounds, skip: options?.skip })
    : new JsonlParser(path, { fieldBytes: bounds.maxFieldBytes, recordBytes: bounds.maxRecordBytes }, options?.skip)
}

const READ_SIZE = 64 * 1024

/** Maps a failed `open`/`read` to what the user should be told. */
const fileError = (path: string, error: unknown): InputError => {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined
  switch (code) {
    case "ENOENT":
      return new InputError({ file: path, problem: "file not found" })
    case "ENOTDIR":
      return new InputError({ file: path, problem: "file not found (a parent in the path is not a directory)" })
    case "EACCES":
    case "EPERM":
      return new InputError({ file: path, problem: "permission denied: the file cannot be read" })
    case "EISDIR":
      return new InputError({ file: path, problem: "is a directory, expected a CSV/JSON/JSONL file" })
  }
  const message = error instanceof Error ? error.message : String(error)
  return new InputError({ file: path, problem: `cannot read the file: ${message}` })
}

/** Opens a regular, non-empty file for reading; the handle is closed with the scope. */
const openInput = (path: string): Effect.Effect<FileHandle, InputError, Scope.Scope> =>
  Effect.gen(function*() {
    const handle = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => open(path, "r"), catch: (error) => fileError(path, error) }),
      (handle) => Effect.promise(() => handle.close().catch(() => undefined))
    )
    const stat = yield* Effect.tryPromise({ try: () => handle.stat(), catch: (error) => fileError(path, error) })
    if (stat.isDirectory()) {
      return yield* new InputError({ file: path, problem: "is a directory, expected a CSV/JSON/JSONL file" })
    }
    if (stat.isFile() && stat.size === 0) return yield* new InputError({ file: path, problem: "file is empty" })
    return handle
  })

const readJson = (path: string, handle: FileHandle, options: ReadOptions | undefined) =>
  Effect.gen(function*() {
    const limit = options?.maxJsonBytes ?? Limits.jsonDocumentBytes
    const stat = yield* Effect.tryPromise({ try: () => handle.stat(), catch: (error) => fileError(path, error) })
    if (stat.size > limit) {
      return yield* new InputError({
        file: path,
        problem: `file exceeds ${
          formatBytes(limit)
        }: a JSON test set is read whole, so it may hold at most that; write it as JSONL (one case a line), which is read as a stream`
      })
    }
    const bytes = yield* Effect.tryPromise({ try: () => handle.readFile(), catch: (error) => fileError(path, error) })
    const sha256 = createHash("sha256").update(bytes).digest("hex")
    const text = decodeAll(bytes)
    if (text === undefined) {
      const line = lineCount(decodeValidPrefix(bytes))
      return yield* new InputError({ file: path, line, problem: "invalid UTF-8 (the file must be UTF-8 encoded)" })
    }
    const document = yield* parseJsonDocument(path, text, { fieldBytes: options?.maxFieldBytes })
    return { ...document, sha256 }
  })

/**
 * Streams the rows a text parser produces from a file, one 64 KiB read at a time (a read's rows
 * stay in memory together until the last is judged: small reads keep them in the young
 * generation). `onBytes` sees every raw chunk (for hashing) before it is decoded.
 */
const parseText = (
  path: string,
  handle: FileHandle,
  parser: TextParser,
  onBytes?: (bytes: Uint8Array) => void
): Stream.Stream<Row, InputError> =>
  Stream.suspend(() => {
    const decoder = new TextDecoder("utf-8", { fatal: true })
    const buffer = Buffer.allocUnsafe(READ_SIZE)
    /** Last bytes of the previous read: a character may straddle two reads. */
    let previousTail: Uint8Array = new Uint8Array(0)
    let finished = false
    let firstRead = true
    const invalid = (bytes: Uint8Array): InputError => {
      const carry = previousTail.subarray(previousTail.length - incompleteTail(previousTail))
      const data = concat(carry, bytes)
      const valid = new TextDecoder("utf-8", { ignoreBOM: !firstRead }).decode(
        data.subarray(0, validPrefixLength(data)),
        { stream: true }
      )
      const earlier = parser.push(valid, [])
      return earlier ?? new InputError({
        file: path,
        line: parser.line,
        problem: "invalid UTF-8 (the file must be UTF-8 encoded)"
      })
    }
    const pull: Effect.Effect<Chunk.Chunk<Row>, Option.Option<InputError>> = Effect.suspend(() =>
      finished ? Effect.fail(Option.none()) : Effect.tryPromise({
        try: () => handle.read(buffer, 0, READ_SIZE, null),
        catch: (error) => Option.some(fileError(path, error))
      }).pipe(
        Effect.flatMap(({ bytesRead }) => {
          const out: Array<Row> = []
          let problem: InputError | undefined
          if (bytesRead === 0) {
            finished = true
            const rest = decodeStep(decoder, undefined)
            problem = rest === undefined
              ? new InputError({
                file: path,
                line: parser.line,
                problem: "invalid UTF-8: the file ends inside a multi-byte character"
              })
              : parser.push(rest, out) ?? parser.end(out)
          } else {
            const bytes = buffer.subarray(0, bytesRead)
            onBytes?.(bytes)
            const text = decodeStep(decoder, bytes)
            problem = text === undefined ? invalid(bytes) : parser.push(text, out)
            previousTail = bytes.slice(Math.max(0, bytesRead - 3))
            firstRead = false
          }
          return problem === undefined ? Effect.succeed(Chunk.unsafeFromArray(out)) : Effect.fail(Option.some(problem))
        })
      )
    )
    return Stream.repeatEffectChunkOption(pull)
  })

/** One streaming decode step (`bytes` undefined: the final flush); undefined when invalid. */
const decodeStep = (decoder: TextDecoder, bytes: Uint8Array | undefined): string | undefined => {
  try {
    return bytes === undefined ? decoder.decode() : decoder.decode(bytes, { stream: true })
  } catch {
    return undefined
  }
}

const decodeAll = (bytes: Uint8Array): string | undefined => {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes)
  } catch {
    return undefined
  }
}

/** The text before the first invalid byte sequence. */
const decodeValidPrefix = (bytes: Uint8Array): string =>
  new TextDecoder("utf-8").decode(bytes.subarray(0, validPrefixLength(bytes)), { stream: true })

const lineCount = (text: string): number => {
  let line = 1
  for (let k = text.indexOf("\n"); k !== -1; k = text.indexOf("\n", k + 1)) line++
  return line
}

/**
 * Length of the longest prefix a fatal streaming decoder accepts (a prefix may end inside a
 * character). Validity is monotone in the length, so a binary search finds it; only used on error.
 */
const validPrefixLength = (bytes: Uint8Array): number => {
  let low = 0
  let high = bytes.length
  while (low < high) {
    const mid = Math.ceil((low + high) / 2)
    if (decodeStep(new TextDecoder("utf-8", { fatal: true }), bytes.subarray(0, mid)) === undefined) high = mid - 1
    else low = mid
  }
  return low
}

/** Number of trailing bytes that begin a multi-byte character not yet complete. */
const incompleteTail = (bytes: Uint8Array): number => {
  const n = bytes.length
  for (let k = 1; k <= Math.min(3, n); k++) {
    const b = bytes[n - k]!
    if ((b & 0xc0) === 0x80) continue
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1
    return need > k ? k : 0
  }
  return 0
}

const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length)
  out.set(a, 0)
  out.set(b, a.length)
  return out
}
