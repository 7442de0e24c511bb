/**
 * The answer-synthesis test-set builder (SPEC §2.2): a query-log JSONL — one
 * `{ queryLogId, question, answer, context, timestamp, … }` object per line — becomes a versioned
 * test set `{ version, name, description, createdFrom: { file, sha256 }, cases }` that the
 * answer-synthesis pipeline loads.
 *
 * - De-duplication is by `hash` = sha256(queryLogId) (hex), which every case carries. Of several
 *   lines with the same queryLogId the latest by `timestamp` is kept when both lines have one
 *   (ISO 8601 text or epoch milliseconds), else the first; the case keeps the position of the first.
 * - Every line is validated like a test-set case (question, answer, context list) and must have a
 *   queryLogId; a bad line fails the build with its line number.
 * - The output is written atomically and never replaces an existing file unless `overwrite`.
 * - No clock time is recorded, so the same log gives a byte-identical test set.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, OutputError, UsageError } from "../domain/Errors.js"
import { writeJsonAtomic } from "../io/Files.js"
import { fieldsFor, validateRow } from "../kinds/synthesis/AnswerSynthesis.js"
import { readRows, scanInput } from "../load/Rows.js"

export interface BuildTestSetOptions {
  /** The query-log JSONL file. */
  readonly logs: string
  readonly name: string
  readonly version: string
  readonly description?: string | undefined
  /** Output file; default `test-sets/answer-synthesis/<name>-v<version>.json` (from the working directory). */
  readonly out?: string | undefined
  /** Replace an existing output file. */
  readonly overwrite?: boolean | undefined
}

export interface TestSetCase {
  readonly queryLogId: string
  /** sha256 of queryLogId, hex: the de-duplication key. */
  readonly hash: string
  readonly question: string
  readonly answer: string
  readonly context: ReadonlyArray<unknown>
  readonly timestamp?: string | number | undefined
  /** Any other fields of the log line are kept as they were. */
  readonly [field: string]: unknown
}

export interface TestSet {
  readonly version: string
  readonly name: string
  readonly description: string
  readonly createdFrom: { readonly file: string; readonly sha256: string }
  readonly cases: ReadonlyArray<TestSetCase>
}

export interface BuildTestSetResult {
  readonly testSet: TestSet
  /** Log lines dropped because an earlier or later line had the same queryLogId. */
  readonly duplicates: number
  /** Log lines read. */
  readonly read: number
  /** Path of the file written. */
  readonly written: string
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

/** `<name>-v<version>.json`; a version given as `v2` is not doubled to `vv2`. */
export const testSetFileName = (name: string, version: string): string =>
  `${name}-v${version.replace(/^v(?=\d)/i, "")}.json`

export const defaultOutput = (name: string, version: string): string =>
  Path.join("test-sets", "answer-synthesis", testSetFileName(name, version))

export const queryLogHash = (queryLogId: string): string => createHash("sha256").update(queryLogId).digest("hex")

/** Milliseconds since the epoch, undefined when absent; an InputError when present but unreadable. */
const timeOf = (value: unknown, file: string, line: number): Effect.Effect<number | undefined, InputError> => {
  if (value === undefined || value === null) return Effect.succeed(undefined)
  const fail = (found: string) =>
    Effect.fail(
      new InputError({
        file,
        line,
        field: "timestamp",
        problem: `expected an ISO 8601 date or epoch milliseconds, found ${found}`
      })
    )
  if (typeof value === "number") return Number.isFinite(value) ? Effect.succeed(value) : fail(String(value))
  if (typeof value === "string") {
    const ms = Date.parse(value)
    return Number.isNaN(ms) ? fail(JSON.stringify(value)) : Effect.succeed(ms)
  }
  return fail(typeof value)
}

const KNOWN = new Set<string>(["queryLogId", "question", "answer", "context", "timestamp"])

interface Kept {
  readonly time: number | undefined
  readonly value: TestSetCase
}

export const buildTestSet = (
  options: BuildTestSetOptions
): Effect.Effect<BuildTestSetResult, InputError | UsageError | OutputError> =>
  Effect.gen(function*() {
    if (!SAFE_NAME.test(options.name)) {
      return yield* new UsageError({
        problem: `test-set name ${
          JSON.stringify(options.name)
        }: use letters, digits, ".", "_" or "-" (it becomes a file name)`
      })
    }
    if (!SAFE_NAME.test(options.version)) {
      return yield* new UsageError({
        problem: `test-set version ${
          JSON.stringify(options.version)
        }: use letters, digits, ".", "_" or "-", e.g. 1 or 2.1`
      })
    }
    const out = options.out ?? defaultOutput(options.name, options.version)
    if (options.overwrite !== true && fs.existsSync(out)) {
      return yield* new UsageError({
        problem: `${out} already exists; choose another --version or name, or pass --overwrite to replace it`
      })
    }

    const file = options.logs
    // First pass: the file is well-formed JSONL, and its hash.
    const scan = yield* scanInput(file, { format: "jsonl" })
    const fields = fieldsFor(undefined)
    const kept = new Map<string, Kept>()
    let read = 0
    yield* readRows(file, { format: "jsonl" }).pipe(Stream.runForEach((row) =>
      Effect.gen(function*() {
        read++
        const r = yield* validateRow(row, file, fields)
        if (r.queryLogId === undefined) {
          return yield* new InputError({
            file,
            line: row.line,
            field: "queryLogId",
            problem: "the queryLogId is missing (it identifies the query and de-duplicates the log)"
          })
        }
        const time = yield* timeOf(row.values.timestamp, file, row.line)
        const hash = queryLogHash(r.queryLogId)
        const rest = Object.fromEntries(Object.entries(row.values).filter(([k]) => !KNOWN.has(k)))
        const value: TestSetCase = {
          queryLogId: r.queryLogId,
          hash,
          question: r.question,
          answer: r.answer,
          context: r.context,
          ...(row.values.timestamp === undefined || row.values.timestamp === null
            ? {}
            : { timestamp: row.values.timestamp as string | number }),
          ...rest
        }
        const earlier = kept.get(hash)
        // Map.set on an existing key keeps its insertion position: the case stays where it first appeared.
        if (earlier === undefined || (earlier.time !== undefined && time !== undefined && time > earlier.time)) {
          kept.set(hash, { time, value })
        }
      })
    ))

    const cases = [...kept.values()].map((k) => k.value)
    const duplicates = read - cases.length
    const testSet: TestSet = {
      version: options.version,
      name: options.name,
      description: options.description ??
        `Answer-synthesis test set built from ${
          Path.basename(file)
        }: ${cases.length} unique queries (${duplicates} duplicate log line${duplicates === 1 ? "" : "s"} dropped).`,
      createdFrom: { file, sha256: scan.sha256 },
      cases
    }
    yield* Effect.try({
      try: () => fs.mkdirSync(Path.dirname(out), { recursive: true }),
      catch: (e) =>
        new OutputError({ path: out, problem: `cannot create the directory: ${(e as Error).message}`, cause: e })
    })
    yield* writeJsonAtomic(out, testSet)
    return { testSet, duplicates, read, written: out }
  })
