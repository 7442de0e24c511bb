/**
 * The index of one iteration of a run, built by one pass over each of its files and then read a page
 * at a time: what lets a 100,000-case run open in about a second with the server holding a few bytes
 * per case (offsets, two 32-bit hashes, the per-case metrics), never the files.
 *
 * - `case-metrics-iteration-N.jsonl` (each row decoded through `RunFiles.CaseMetrics`) gives the
 *   cases in input order, their declared per-case metrics and their `failed` flag; without it (a
 *   pipeline that declares no per-case metrics) the records give the cases.
 * - `records-iteration-N.jsonl` gives each case's record (question, answer, claims, hits…) by
 *   offset; its lines are matched to cases by the case id at the start of each line (no parse).
 * - `judgments.jsonl`, indexed on the first case opened: each case's judgments of this iteration
 *   (the judge's reasons and raw replies), by offset.
 * - A background pass over the records asks the pipeline's view for each case's verdict and flags
 *   (the HTML report's "failing"), and the headline metrics' bootstrap intervals are computed from
 *   the columns; a request filtering failing cases waits for the verdicts (the run's `failing` count
 *   is the `failed` flag alone until then, marked `verdictsReady: false`).
 *
 * Case ids are found by two 32-bit hashes (FNV-1a with two bases) in a sorted array, every hit
 * confirmed by reading the case's own line.
 */
import * as Effect from "effect/Effect"
import { isRecord } from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError } from "../domain/Errors.js"
import { f64, Growing, i32, u32, u8 } from "../domain/Growing.js"
import type { MetricSpec } from "../domain/Metric.js"
import { CaseMetrics, caseMetricsFile, describeIssues } from "../domain/RunFiles.js"
import { closeFile, type OpenFile, openFile, parseLine, readRange, scanLines, stringField } from "./LineFile.js"

export const recordsFile = (iteration: number) => `records-iteration-${iteration}.jsonl`
export const JOURNAL_FILE = "judgments.jsonl"

// ---------------------------------------------------------------------------------------------
// Hashes

const BASIS_A = 0x811c9dc5
const BASIS_B = 0x050c5d1f

const fnv = (bytes: Uint8Array, start: number, end: number, basis: number): number => {
  let h = basis
  for (let i = start; i < end; i++) {
    h ^= bytes[i]!
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

const encoder = new TextEncoder()

/** The two hashes of a case id's UTF-8 bytes. */
export const hashId = (id: string): readonly [number, number] => {
  const bytes = encoder.encode(id)
  return [fnv(bytes, 0, bytes.length, BASIS_A), fnv(bytes, 0, bytes.length, BASIS_B)]
}

const CASE_ID = Buffer.from("\"caseId\":\"")
const ITERATION = Buffer.from("\"iteration\":")

/** The hashes of the `caseId` of a line's bytes, without parsing the line; undefined when it has none. */
const lineCaseHash = (buffer: Buffer, start: number, end: number): readonly [number, number] | undefined => {
  const field = stringField(buffer, start, end, CASE_ID)
  if (field === undefined) return undefined
  if ("text" in field) return hashId(field.text)
  return [fnv(buffer, field.start, field.end, BASIS_A), fnv(buffer, field.start, field.end, BASIS_B)]
}

/** The integer after `"iteration":` in a line's bytes (undefined when absent). */
const lineIteration = (buffer: Buffer, start: number, end: number): number | undefined => {
  const at = buffer.indexOf(ITERATION, start)
  if (at === -1 || at >= end) return undefined
  let value = 0
  let digits = 0
  for (let i = at + ITERATION.length; i < end; i++) {
    const c = buffer[i]!
    if (c < 0x30 || c > 0x39) break
    value = value * 10 + (c - 0x30)
    digits++
  }
  return digits === 0 ? undefined : value
}

// ---------------------------------------------------------------------------------------------
// The index

/** Per-case status bits. */
export const FAILED = 1
export const VERDICT_FAIL = 2
export const VERDICT_PASS = 4
export const FLAGGED = 8

export interface JournalIndex {
  /** Lines of case i are entries [start[i], start[i + 1]). */
  readonly start: Int32Array
  readonly offset: Float64Array
  readonly length: Uint32Array
  /** Lines of this iteration that name no case of the index. */
  readonly orphans: number
  readonly torn: boolean
}

export interface CaseIndex {
  readonly dir: string
  readonly iteration: number
  readonly cases: number
  /** The declared per-case metrics (columns), in declaration order. */
  readonly metrics: ReadonlyArray<MetricSpec>
  /** Case i's value of metric m is `columns[m * cases + i]` (NaN: null). */
  readonly columns: Float64Array
  readonly status: Uint8Array
  readonly line: Int32Array
  /** Where each case's line is in the case metrics (or the records, without them); -1 none. */
  readonly metricsOffset: Float64Array
  readonly metricsLength: Uint32Array
  readonly recordOffset: Float64Array
  readonly recordLength: Uint32Array
  /** Case of each records line, in file order (for scans of the records). */
  readonly recordCase: Int32Array
  readonly hashA: Uint32Array
  readonly hashB: Uint32Array
  /** Case indexes sorted by (hashA, hashB). */
  readonly byHash: Int32Array
  readonly metricsFile: OpenFile | undefined
  readonly recordsFile: OpenFile | undefined
  /** Problems met while indexing that did not stop it (a torn last line…). */
  readonly notes: Array<string>
  /** Set by the background pass: verdicts and flags of every case are known. */
  verdictsReady: boolean
  journal: JournalIndex | undefined
  journalFile: OpenFile | undefined
}

const decodeCaseMetrics = Schema.decodeUnknownEither(CaseMetrics)

const sortByHash = (hashA: Uint32Array, hashB: Uint32Array, n: number): Int32Array => {
  const order = new Int32Array(n)
  for (let i = 0; i < n; i++) order[i] = i
  order.sort((x, y) => hashA[x]! - hashA[y]! || hashB[x]! - hashB[y]! || x - y)
  return order
}

/** The first position in `order` (sorted by hashes) of the hashes (a, b); `order.length` when none is there. */
const firstOf = (hashA: Uint32Array, hashB: Uint32Array, order: Int32Array, a: number, b: number): number => {
  let lo = 0
  let hi = order.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    const c = order[mid]!
    const ha = hashA[c]!
    const hb = hashB[c]!
    if (ha < a || (ha === a && hb < b)) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The case with the hashes (a, b), or -1 (while indexing: the ids of one file are unique). */
const lookup = (hashA: Uint32Array, hashB: Uint32Array, order: Int32Array, a: number, b: number): number => {
  const at = firstOf(hashA, hashB, order, a, b)
  if (at >= order.length) return -1
  const c = order[at]!
  return hashA[c] === a && hashB[c] === b ? c : -1
}

export interface BuildOptions {
  readonly dir: string
  readonly iteration: number
  /** The per-case metrics the run declares (the manifest's `caseMetricSpecs`). */
  readonly metrics: ReadonlyArray<MetricSpec>
}

/**
 * Builds the index of one iteration: the case metrics (when the run has them) then the records. A
 * run that has written neither yet (running, or stopped before the end of the iteration) has no
 * cases: `notes` says why.
 */
export const buildIndex = (options: BuildOptions): Effect.Effect<CaseIndex, InputError> =>
  Effect.gen(function*() {
    const { dir, iteration } = options
    const metricsPath = Path.join(dir, caseMetricsFile(iteration))
    const recordsPath = Path.join(dir, recordsFile(iteration))
    const notes: Array<string> = []
    const metricNames = options.metrics.map((m) => m.name)
    const m = metricNames.length

    const hashA = new Growing(u32(1024), u32)
    const hashB = new Growing(u32(1024), u32)
    const lineNo = new Growing(i32(1024), i32)
    const status = new Growing(u8(1024), u8)
    const metricsOffset = new Growing(f64(1024), f64)
    const metricsLength = new Growing(u32(1024), u32)
    const values: Array<Growing<Float64Array>> = metricNames.map(() => new Growing(f64(1024), f64))

    let metricsFile: OpenFile | undefined
    if (fs.existsSync(metricsPath)) {
      metricsFile = yield* openFile(metricsPath)
      const file = metricsFile
      let lineNumber = 0
      let problem: InputError | undefined
      const scanned = yield* scanLines(file, (buffer, start, end, offset, torn) => {
        lineNumber++
        if (problem !== undefined || end === start || torn) return
        let parsed: unknown
        try {
          parsed = JSON.parse(buffer.toString("utf8", start, end))
        } catch (e) {
          problem = new InputError({
            file: metricsPath,
            line: lineNumber,
            problem: `not valid JSON: ${e instanceof Error ? e.message : String(e)}`
          })
          return
        }
        const decoded = decodeCaseMetrics(parsed)
        if (decoded._tag === "Left") {
          problem = new InputError({
            file: metricsPath,
            line: lineNumber,
            problem: `not a case-metrics row: ${describeIssues(decoded.left)}`
          })
          return
        }
        const row = decoded.right
        const [a, b] = hashId(row.caseId)
        hashA.push(a)
        hashB.push(b)
        lineNo.push(row.line)
        status.push(row.failed ? FAILED : 0)
        metricsOffset.push(offset)
        metricsLength.push(end - start)
        for (let k = 0; k < m; k++) {
          const v = row.metrics[metricNames[k]!]
          values[k]!.push(typeof v === "number" ? v : NaN)
        }
      })
      if (problem !== undefined) {
        closeFile(file)
        return yield* problem
      }
      // The file is written whole, then renamed: only a damaged copy has a torn last line.
      if (scanned.torn) notes.push(`${metricsPath}: the last line is torn; left out`)
    }
    const fromMetrics = hashA.length

    // The records: offsets by case; cases of their own when there are no case metrics.
    let recordsFileOpen: OpenFile | undefined
    const recordOffset = new Growing(f64(Math.max(1024, fromMetrics)), f64)
    const recordLength = new Growing(u32(Math.max(1024, fromMetrics)), u32)
    const recordCase = new Growing(i32(Math.max(1024, fromMetrics)), i32)
    let byHash = sortByHash(hashA.data, hashB.data, fromMetrics)
    const recordOf = new Float64Array(fromMetrics).fill(-1)
    const recordLen = new Uint32Array(fromMetrics)
    if (fs.existsSync(recordsPath)) {
      recordsFileOpen = yield* openFile(recordsPath)
      let unmatched = 0
      let lineNumber = 0
      let bad: number | undefined
      const scanned = yield* scanLines(recordsFileOpen, (buffer, start, end, offset, torn) => {
        lineNumber++
        if (end === start || torn) return
        let hash = lineCaseHash(buffer, start, end)
        if (hash === undefined) {
          // Not at the start of the line: parse it (a record written by another tool).
          try {
            const parsed = JSON.parse(buffer.toString("utf8", start, end)) as unknown
            if (isRecord(parsed) && typeof parsed["caseId"] === "string") hash = hashId(parsed["caseId"])
          } catch {
            bad ??= lineNumber
          }
        }
        if (hash === undefined) {
          recordCase.push(-1)
          return
        }
        if (fromMetrics > 0) {
          // Fast path: records and case metrics are both in input order.
          const i = recordCase.length
          const c = i < fromMetrics && hashA.data[i] === hash[0] && hashB.data[i] === hash[1]
            ? i
            : lookup(hashA.data, hashB.data, byHash, hash[0], hash[1])
          recordCase.push(c)
          if (c === -1) unmatched++
          else {
            recordOf[c] = offset
            recordLen[c] = end - start
          }
        } else {
          // No case metrics: the records are the cases.
          recordCase.push(hashA.length)
          hashA.push(hash[0])
          hashB.push(hash[1])
          lineNo.push(-1)
          status.push(0)
          metricsOffset.push(-1)
          metricsLength.push(0)
          recordOffset.push(offset)
          recordLength.push(end - start)
        }
      })
      if (scanned.torn) notes.push(`${recordsPath}: the last line is torn; left out`)
      if (bad !== undefined) {
        closeFile(recordsFileOpen)
        if (metricsFile !== undefined) closeFile(metricsFile)
        return yield* new InputError({ file: recordsPath, line: bad, problem: "not valid JSON" })
      }
      if (unmatched > 0) notes.push(`${unmatched} record(s) of ${recordsPath} name a case the case metrics do not have`)
    } else if (fromMetrics > 0) {
      notes.push(`${recordsPath} is missing: the cases' details cannot be shown`)
    }
    if (hashA.length === 0 && metricsFile === undefined && recordsFileOpen === undefined) {
      notes.push(
        `iteration ${iteration} has no records yet: a run writes them when the iteration ends (rag-eval report --partial writes them from the journal)`
      )
    }
    const cases = hashA.length
    if (fromMetrics === 0) byHash = sortByHash(hashA.data, hashB.data, cases)
    const columns = new Float64Array(m * cases)
    for (let k = 0; k < m; k++) columns.set(values[k]!.data.subarray(0, cases), k * cases)
    return {
      dir,
      iteration,
      cases,
      metrics: options.metrics,
      columns,
      status: status.done(),
      line: lineNo.done(),
      metricsOffset: metricsOffset.done(),
      metricsLength: metricsLength.done(),
      recordOffset: fromMetrics > 0 ? recordOf : recordOffset.done(),
      recordLength: fromMetrics > 0 ? recordLen : recordLength.done(),
      recordCase: recordCase.done(),
      hashA: hashA.done(),
      hashB: hashB.done(),
      byHash,
      metricsFile,
      recordsFile: recordsFileOpen,
      notes,
      verdictsReady: false,
      journal: undefined,
      journalFile: undefined
    } satisfies CaseIndex
  })

export const closeIndex = (index: CaseIndex): void => {
  if (index.metricsFile !== undefined) closeFile(index.metricsFile)
  if (index.recordsFile !== undefined) closeFile(index.recordsFile)
  if (index.journalFile !== undefined) closeFile(index.journalFile)
}

/** Bytes the index holds (its typed arrays): what `bench` reports per case. */
export const indexBytes = (index: CaseIndex): number =>
  [
    index.columns,
    index.status,
    index.line,
    index.metricsOffset,
    index.metricsLength,
    index.recordOffset,
    index.recordLength,
    index.recordCase,
    index.hashA,
    index.hashB,
    index.byHash,
    ...(index.journal === undefined ? [] : [index.journal.start, index.journal.offset, index.journal.length])
  ].reduce((sum, a) => sum + a.byteLength, 0)

// ---------------------------------------------------------------------------------------------
// Reading a case back

/** Case i's case-metrics row, decoded; undefined when the run has none. */
export const readCaseMetrics = (index: CaseIndex, i: number): Effect.Effect<CaseMetrics | undefined, InputError> =>
  Effect.gen(function*() {
    const file = index.metricsFile
    if (file === undefined || index.metricsOffset[i]! < 0) return undefined
    const start = index.metricsOffset[i]!
    const text = yield* readRange(file, start, start + index.metricsLength[i]!)
    const decoded = decodeCaseMetrics(yield* parseLine(text, file.path, index.line[i] ?? 0))
    if (decoded._tag === "Left") {
      return yield* new InputError({
        file: file.path,
        problem: `not a case-metrics row: ${describeIssues(decoded.left)}`
      })
    }
    return decoded.right
  })

/** Case i's record (the pipeline's own shape); undefined when the records are missing. */
export const readRecord = (index: CaseIndex, i: number): Effect.Effect<unknown, InputError> =>
  Effect.gen(function*() {
    const file = index.recordsFile
    const start = index.recordOffset[i]!
    if (file === undefined || start < 0) return undefined
    const text = yield* readRange(file, start, start + index.recordLength[i]!)
    return yield* parseLine(text, file.path, i + 1)
  })

/** The case id of case i, read back from its line. */
export const caseIdOf = (index: CaseIndex, i: number): Effect.Effect<string | undefined, InputError> =>
  Effect.map(
    index.metricsFile !== undefined && index.metricsOffset[i]! >= 0 ? readCaseMetrics(index, i) : readRecord(index, i),
    (row) => (isRecord(row) && typeof row["caseId"] === "string" ? row["caseId"] : undefined)
  )

/** The case of `other` with the same id hashes as case i of `index` (one run's iterations, or two runs), or -1. */
export const sameCase = (index: CaseIndex, i: number, other: CaseIndex): number => {
  const a = index.hashA[i]!
  const b = index.hashB[i]!
  if (i < other.cases && other.hashA[i] === a && other.hashB[i] === b) return i
  return lookup(other.hashA, other.hashB, other.byHash, a, b)
}

/** The case with this id (confirmed by its line), or -1. */
export const lookupCase = (index: CaseIndex, id: string): Effect.Effect<number, InputError> =>
  Effect.gen(function*() {
    const [a, b] = hashId(id)
    for (let k = firstOf(index.hashA, index.hashB, index.byHash, a, b); k < index.cases; k++) {
      const c = index.byHash[k]!
      if (index.hashA[c] !== a || index.hashB[c] !== b) break
      if ((yield* caseIdOf(index, c)) === id) return c
    }
    return -1
  })

// ---------------------------------------------------------------------------------------------
// The journal, on demand

/**
 * Indexes the journal's judgments of this iteration by case (CSR: one offset and length a line,
 * grouped by case). Lines of other record kinds (replies awaiting repair) and other iterations are
 * left out; a torn last line is tolerated. Later lines of a key replace earlier ones when read.
 */
export const indexJournal = (index: CaseIndex, journalPath: string): Effect.Effect<void, InputError> =>
  Effect.gen(function*() {
    if (index.journal !== undefined) return
    if (!fs.existsSync(journalPath)) {
      index.journal = {
        start: new Int32Array(index.cases + 1),
        offset: new Float64Array(0),
        length: new Uint32Array(0),
        orphans: 0,
        torn: false
      }
      return
    }
    const file = yield* openFile(journalPath)
    const caseOf = new Growing(i32(4096), i32)
    const offsets = new Growing(f64(4096), f64)
    const lengths = new Growing(u32(4096), u32)
    let orphans = 0
    const scanned = yield* scanLines(file, (buffer, start, end, offset, torn) => {
      if (end === start || torn) return
      if (lineIteration(buffer, start, end) !== index.iteration) return
      const hash = lineCaseHash(buffer, start, end)
      const c = hash === undefined ? -1 : lookup(index.hashA, index.hashB, index.byHash, hash[0], hash[1])
      if (c === -1) {
        orphans++
        return
      }
      caseOf.push(c)
      offsets.push(offset)
      lengths.push(end - start)
    })
    // Counting sort by case, keeping file order within a case (the latest line of a key last).
    const start = new Int32Array(index.cases + 1)
    for (let k = 0; k < caseOf.length; k++) start[caseOf.data[k]! + 1]!++
    for (let c = 0; c < index.cases; c++) start[c + 1]! += start[c]!
    const fill = start.slice(0, index.cases)
    const offset = new Float64Array(caseOf.length)
    const length = new Uint32Array(caseOf.length)
    for (let k = 0; k < caseOf.length; k++) {
      const at = fill[caseOf.data[k]!]!++
      offset[at] = offsets.data[k]!
      length[at] = lengths.data[k]!
    }
    index.journalFile = file
    index.journal = { start, offset, length, orphans, torn: scanned.torn }
  })

/** The raw journal lines of case i (this iteration), in file order. */
export const journalLines = (index: CaseIndex, i: number): Effect.Effect<ReadonlyArray<string>, InputError> =>
  Effect.gen(function*() {
    const journal = index.journal
    const file = index.journalFile
    if (journal === undefined || file === undefined) return []
    const lines: Array<string> = []
    for (let k = journal.start[i]!; k < journal.start[i + 1]!; k++) {
      lines.push(yield* readRange(file, journal.offset[k]!, journal.offset[k]! + journal.length[k]!))
    }
    return lines
  })

/** The case ids of the index, in case order (one pass over the case metrics, or the records). */
export const readCaseIds = (index: CaseIndex): Effect.Effect<Array<string>, InputError> =>
  Effect.gen(function*() {
    const fromMetrics = index.metricsFile !== undefined
    const file = fromMetrics ? index.metricsFile : index.recordsFile
    const ids = new Array<string>(index.cases)
    if (file === undefined) return []
    let line = 0
    yield* scanLines(file, (buffer, start, end, _offset, torn) => {
      if (end === start || torn) return
      const c = fromMetrics ? line : index.recordCase[line] ?? -1
      line++
      if (c < 0 || c >= index.cases) return
      const field = stringField(buffer, start, end, CASE_ID)
      if (field !== undefined) {
        ids[c] = "text" in field ? field.text : buffer.toString("utf8", field.start, field.end)
        return
      }
      try {
        const parsed = JSON.parse(buffer.toString("utf8", start, end)) as unknown
        if (isRecord(parsed) && typeof parsed["caseId"] === "string") ids[c] = parsed["caseId"]
      } catch {
        // Not JSON: the index refused such a line when it was built.
      }
    })
    return ids
  })

/** Case i's line of the case metrics and of the records, as the files hold them (undefined: none). */
export const caseLines = (
  index: CaseIndex,
  i: number
): Effect.Effect<{ readonly metrics: string | undefined; readonly record: string | undefined }, InputError> =>
  Effect.gen(function*() {
    const read = (file: OpenFile | undefined, offset: number, length: number) =>
      file === undefined || offset < 0 ? Effect.succeed(undefined) : readRange(file, offset, offset + length)
    return {
      metrics: yield* read(index.metricsFile, index.metricsOffset[i]!, index.metricsLength[i]!),
      record: yield* read(index.recordsFile, index.recordOffset[i]!, index.recordLength[i]!)
    }
  })
