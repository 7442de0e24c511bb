/**
 * What a resumed run keeps of the records a killed (or stopped) run wrote, so that a long run's
 * resume starts judging new cases in seconds instead of rebuilding every finished case from the
 * journal (issue #35: 77,000 finished cases took 33 s to replay, as long as judging them had).
 *
 * While a local judge's iteration runs, beside `records-iteration-N.jsonl.partial` and
 * `case-metrics-iteration-N.jsonl.partial` the engine writes `resume-iteration-N.jsonl.partial`: a
 * header naming what made the records (`guard`), then one line per record — the number of
 * judgments behind it, or `-` when the case cannot be kept (a failed judgment: a resume asks it
 * again, or keeps it only without `--retry-failed`; it is rebuilt from the journal as before).
 *
 * On resume, the longest prefix of cases present whole in all three files (complete lines; a line
 * torn by the crash is cut off) is kept: the files are cut to it and appended to, its records are
 * folded again (means, intervals, lowest cases: the fold is cheap, the judging and scoring are not),
 * and the judging starts at the first case after it. Everything else — the journal, what it holds
 * for later cases — is as before. Kept only when the run is resumed by the same version with the
 * same command (the guard), and when the first record rebuilt from the journal is the record on
 * disk (a change of scoring shows there); otherwise every file is written again.
 *
 * The files are read synchronously in large pieces: this runs once, before the iteration starts.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import type { OutputError } from "../domain/Errors.js"
import type { Judgment } from "../domain/Judgment.js"
import { thousands } from "../domain/Numbers.js"
import { writeProblem } from "../io/Files.js"
import { sha256 } from "../judges/Prompt.js"

/** The file of an iteration that tells a resume which records it may keep. */
export const resumeFile = (iteration: number) => `resume-iteration-${iteration}.jsonl`

/** The unfinished files of an iteration a resume may keep (every other `.partial` is removed). */
export const keptPartial = (name: string) =>
  /^(?:records|case-metrics|resume)-iteration-\d+\.jsonl\.partial$/.test(name)

/** The header's guard: what made the records. Another version, command or run: nothing is kept. */
export const guardOf = (parts: {
  readonly version: string
  readonly identity: string
  readonly command: string
  readonly pipeline: string
  readonly iteration: number
}): string => sha256(JSON.stringify([1, parts.version, parts.identity, parts.command, parts.pipeline, parts.iteration]))

/** The resume file's first line. */
export const headerLine = (guard: string) => JSON.stringify({ resume: 1, guard })

/**
 * A resume file's line for a case: how many judgments it was scored from, or `-` when it cannot be
 * kept (a failed judgment, or one that spent tokens: the run's cost counts what the journal holds).
 */
export const resumeLine = (judgments: ReadonlyArray<Judgment>): string => {
  for (const j of judgments) {
    if (j.status !== "ok" || j.usage.inputTokens > 0 || j.usage.outputTokens > 0) return "-"
  }
  return String(judgments.length)
}

const CHUNK = 1 << 20
const NEWLINE = 10

interface Scanned {
  /** Complete lines taken. */
  lines: number
  /** The byte offset just past the last line taken. */
  end: number
  done: boolean
}

/**
 * The complete lines of a file, up to `max`, each handed to `line` with its text (a false return
 * stops before it), a piece of the file a `step`. A missing file has no lines.
 */
const scanner = (path: string, max: number, line?: (text: string) => boolean) => {
  let fd: number | undefined
  try {
    fd = fs.openSync(path, "r")
  } catch {
    fd = undefined
  }
  const state: Scanned = { lines: 0, end: 0, done: fd === undefined }
  let position = 0
  let carry: Buffer = Buffer.alloc(0)
  const chunk = Buffer.allocUnsafe(CHUNK)
  const close = () => {
    if (fd !== undefined) fs.closeSync(fd)
    fd = undefined
    state.done = true
  }
  const step = (): Scanned => {
    if (fd === undefined || state.lines >= max) {
      close()
      return state
    }
    try {
      const n = fs.readSync(fd, chunk, 0, CHUNK, position)
      if (n === 0) {
        close()
        return state
      }
      position += n
      const buffer = carry.length === 0 ? chunk.subarray(0, n) : Buffer.concat([carry, chunk.subarray(0, n)])
      let start = 0
      for (let nl = buffer.indexOf(NEWLINE, start); nl !== -1; nl = buffer.indexOf(NEWLINE, start)) {
        if (state.lines >= max || (line !== undefined && !line(buffer.toString("utf8", start, nl)))) {
          close()
          return state
        }
        state.lines++
        state.end += nl + 1 - start
        start = nl + 1
      }
      // What is left is a line still being read (copied: the chunk is read into again).
      carry = Buffer.from(buffer.subarray(start))
      return state
    } catch (e) {
      close()
      throw e
    }
  }
  return { step, close, state }
}

/** `scanner` to the end, at once (the small files). */
const completeLines = (path: string, max: number, line?: (text: string) => boolean): Scanned => {
  const s = scanner(path, max, line)
  while (!s.step().done);
  return s.state
}

/** A turn of the event loop: a signal (Ctrl+C) is seen between pieces of a long read. */
const hostTurn = Effect.async<void>((resume) => {
  const t = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(t))
})

/** Whether the three files can be cut and appended to (a file made read-only: nothing is kept). */
const writable = (files: HeldFiles): boolean => {
  try {
    for (const path of [files.records, files.cases, files.resume]) fs.accessSync(path, fs.constants.W_OK)
    return true
  } catch {
    return false
  }
}

export interface HeldFiles {
  readonly records: string
  readonly cases: string
  readonly resume: string
}

const firstLine = (path: string): string | undefined => {
  let first: string | undefined
  completeLines(path, 1, (text) => {
    first = text
    return true
  })
  return first
}

/**
 * The first record a killed run wrote of an iteration, when its resume file says it was made by
 * `guard`'s version and command; undefined otherwise (nothing can be kept).
 */
export const firstHeldRecord = (files: HeldFiles, guard: string): string | undefined =>
  firstLine(files.resume) === headerLine(guard) ? firstLine(files.records) : undefined

/**
 * How many judgments each case the resume file lists as keepable had, in order, up to the first
 * case it cannot keep; undefined when the file is missing or its header is not `guard`'s.
 */
const keepable = (path: string, guard: string): ReadonlyArray<number> | undefined => {
  const counts: Array<number> = []
  let header = true
  let ok = true
  completeLines(path, Number.MAX_SAFE_INTEGER, (text) => {
    if (header) {
      header = false
      ok = text === headerLine(guard)
      return ok
    }
    if (!/^\d+$/.test(text)) return false
    counts.push(Number(text))
    return true
  })
  return ok && !header ? counts : undefined
}

/**
 * Keep what a killed run wrote of an iteration: each kept record is handed to `fold` in input
 * order, and the three files are cut to the kept cases (appended to from there). Returns the cases
 * kept and the judgments behind them; 0 cases when nothing can be kept (the caller writes every
 * file again). The records are read a piece at a time with a turn of the event loop between pieces
 * (a million records take ~30 s); once `stopping`, what was read so far is kept.
 */
export const keepHeld = (
  files: HeldFiles,
  guard: string,
  fold: (record: unknown) => void,
  stopping: () => boolean = () => false
): Effect.Effect<{ readonly cases: number; readonly judgments: number }, OutputError> =>
  Effect.suspend(() => {
    const counts = keepable(files.resume, guard)
    if (counts === undefined || counts.length === 0 || !writable(files)) {
      return Effect.succeed({ cases: 0, judgments: 0 })
    }
    const metrics = completeLines(files.cases, counts.length)
    // The records last: a record that does not parse (never expected) ends what is kept.
    const records = scanner(files.records, metrics.lines, (text) => {
      let record: unknown
      try {
        record = JSON.parse(text)
      } catch {
        return false
      }
      fold(record)
      return true
    })
    const read: Effect.Effect<void> = Effect.suspend(() => {
      if (records.step().done) return Effect.void
      if (stopping()) {
        records.close()
        return Effect.void
      }
      return Effect.zipRight(hostTurn, read)
    })
    return read.pipe(
      Effect.ensuring(Effect.sync(records.close)),
      Effect.flatMap(() => {
        const cases = records.state.lines
        if (cases === 0) return Effect.succeed({ cases: 0, judgments: 0 })
        let judgments = 0
        for (let i = 0; i < cases; i++) judgments += counts[i]!
        const cut = (path: string, bytes: number) =>
          Effect.try({ try: () => fs.truncateSync(path, bytes), catch: (e) => writeProblem(path, e) })
        return Effect.all([
          cut(files.records, records.state.end),
          cut(files.cases, completeLines(files.cases, cases).end),
          cut(files.resume, completeLines(files.resume, cases + 1).end)
        ], { discard: true }).pipe(Effect.as({ cases, judgments }))
      })
    )
  })

/**
 * What a killed run wrote of an iteration, kept (`keepHeld`) when the first record the journal gives
 * now is the one on disk: another scoring (a new version, other options) writes them all again.
 * Tells the user (`note`) what it reads and what it kept. Returns the cases kept and the judgments
 * behind them.
 */
export const keepRecords = <E, R>(parts: {
  readonly files: HeldFiles
  readonly guard: string
  readonly firstFromJournal: Effect.Effect<unknown, E, R>
  readonly fold: (record: unknown) => void
  /** Ctrl+C: keep what was read so far. */
  readonly stopping?: (() => boolean) | undefined
  readonly note: (text: string) => Effect.Effect<void>
}): Effect.Effect<{ readonly cases: number; readonly judgments: number }, E | OutputError, R> =>
  Effect.gen(function*() {
    const none = { cases: 0, judgments: 0 }
    const first = firstHeldRecord(parts.files, parts.guard)
    if (first === undefined) return none
    const rebuilt = yield* parts.firstFromJournal
    if (rebuilt === undefined || JSON.stringify(rebuilt) !== first) {
      yield* parts.note(
        "the records a killed run wrote differ from what the journal gives now: they are made again from the journal"
      )
      return none
    }
    const bytes = fs.statSync(parts.files.records).size
    if (bytes > 1 << 26) {
      yield* parts.note(`reading the ${Math.round(bytes / 2 ** 20)} MB of records a killed run wrote…`)
    }
    const held = yield* keepHeld(parts.files, parts.guard, parts.fold, parts.stopping)
    if (held.cases > 0) {
      yield* parts.note(
        `kept the records of ${thousands(held.cases)} case${
          held.cases === 1 ? "" : "s"
        } a killed run wrote; judging resumes after them`
      )
    }
    return held
  })
