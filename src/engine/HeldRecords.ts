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
 * folded again from the last snapshot (below: means, intervals, lowest cases — the fold is cheap,
 * the judging and scoring are not), and the judging starts at the first case after it. Everything else — the journal, what it holds
 * for later cases — is as before. Kept only when the run is resumed by the same version with the
 * same command (the guard), and when the first record rebuilt from the journal is the record on
 * disk (a change of scoring shows there); otherwise every file is written again.
 *
 * This runs once, before the iteration starts.
 *
 * Folding half a million kept records again took 26–37 s (their JSON read and parsed), so every
 * `SNAPSHOT_EVERY` cases, at a point where the three files were just written out together, the engine
 * also saves its fold — the engine's (`CaseFold.ts`), the kind's own (`Accumulator.save`) and
 * report.md's choice of details — with the files' sizes and the cases they hold, in
 * `fold-iteration-N.snapshot.partial` (`v8.serialize`, written whole then renamed). A resume that keeps
 * at least those cases starts from the snapshot and folds only the records after it; a snapshot that
 * does not match what is kept (another guard, files shorter than it says, a resume file whose line
 * for that case does not end where it says) is ignored, and every kept record is folded as before.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as v8 from "node:v8"
import { type OutputError, UsageError } from "../domain/Errors.js"
import { f64, Growing } from "../domain/Growing.js"
import type { Judgment } from "../domain/Judgment.js"
import { thousands } from "../domain/Numbers.js"
import { readLineEnds, readWholeLines, writeProblem } from "../io/Files.js"
import { runWhileSync } from "../io/Streams.js"
import { sha256 } from "../judges/Prompt.js"

/** The file of an iteration that tells a resume which records it may keep. */
export const resumeFile = (iteration: number) => `resume-iteration-${iteration}.jsonl`

/** The fold's snapshot of an iteration, beside its resume file. */
export const snapshotFile = (iteration: number) => `fold-iteration-${iteration}.snapshot.partial`

/**
 * Cases between two snapshots: one costs ~10–15 ms (answer-correctness' 0.57 MB, made and written;
 * 20,000 cases with one every 500 took +0.5 s of CPU), against ~15 s of CPU for 20,000 cases.
 */
export const SNAPSHOT_EVERY = 20_000

/**
 * The cases between two snapshots: `SNAPSHOT_EVERY`, or `RAG_EVAL_SNAPSHOT_EVERY` (a whole number ≥ 1;
 * the tests take them every few cases).
 */
export const snapshotEvery: Effect.Effect<number, UsageError> = Config.option(
  Config.string("RAG_EVAL_SNAPSHOT_EVERY")
).pipe(
  Effect.orElseSucceed(() => Option.none<string>()),
  Effect.flatMap((given) => {
    if (Option.isNone(given)) return Effect.succeed(SNAPSHOT_EVERY)
    const n = Number(given.value)
    return Number.isSafeInteger(n) && n >= 1 && /^\s*\d+\s*$/.test(given.value)
      ? Effect.succeed(n)
      : Effect.fail(
        new UsageError({
          problem: `RAG_EVAL_SNAPSHOT_EVERY: expected a whole number of cases ≥ 1, got ${JSON.stringify(given.value)}`
        })
      )
  })
)

/** The unfinished files of an iteration a resume may keep (every other `.partial` is removed). */
export const keptPartial = (name: string) =>
  /^(?:(?:records|case-metrics|resume)-iteration-\d+\.jsonl|fold-iteration-\d+\.snapshot)\.partial$/.test(name)

/** Where the three files stood when a snapshot was taken: their sizes in bytes. */
export interface HeldSizes {
  readonly records: number
  readonly cases: number
  readonly resume: number
}

interface Snapshot {
  readonly snapshot: 1
  readonly guard: string
  /** The cases folded into `state` (the first `cases` lines of each file). */
  readonly cases: number
  readonly sizes: HeldSizes
  readonly state: unknown
}

/**
 * Save the fold after `cases` cases, the files standing at `sizes` (written whole, then renamed: a
 * kill leaves the last snapshot or this one).
 */
export const writeSnapshot = (
  path: string,
  parts: { readonly guard: string; readonly cases: number; readonly sizes: HeldSizes; readonly state: unknown }
): Effect.Effect<void, OutputError> =>
  Effect.try({
    try: () => {
      const snapshot: Snapshot = { snapshot: 1, ...parts }
      const temporary = path.replace(/\.partial$/, ".tmp.partial")
      fs.writeFileSync(temporary, v8.serialize(snapshot))
      fs.renameSync(temporary, path)
    },
    catch: (e) => writeProblem(path, e)
  })

/** The snapshot at `path` when it is one of `guard`'s; undefined when missing, unreadable or another's. */
const readSnapshot = (path: string, guard: string): Snapshot | undefined => {
  try {
    const value = v8.deserialize(fs.readFileSync(path)) as Partial<Snapshot> | null
    return value !== null && typeof value === "object" && value.snapshot === 1 && value.guard === guard &&
        Number.isSafeInteger(value.cases) && value.sizes !== undefined
      ? value as Snapshot
      : undefined
  } catch {
    return undefined
  }
}

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

/** A resume file's first line, whatever its guard (`headerLine`'s start). */
const isHeaderLine = (line: string) => line.startsWith("{\"resume\":")

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

const asText = (text: string) => text

/** A file's first whole line, or undefined. */
const firstLine = (path: string): Effect.Effect<string | undefined, OutputError> =>
  Effect.map(Stream.runHead(readWholeLines(path, asText)), (head) => Option.getOrUndefined(head)?.[0])

/**
 * The first record a killed run wrote of an iteration, when its resume file says it was made by
 * `guard`'s version and command; undefined otherwise (nothing can be kept).
 */
export const firstHeldRecord = (files: HeldFiles, guard: string): Effect.Effect<string | undefined, OutputError> =>
  Effect.flatMap(
    firstLine(files.resume),
    (header) => header === headerLine(guard) ? firstLine(files.records) : Effect.succeed(undefined)
  )

/**
 * The resume file's cases the run may keep, in order up to the first it cannot: each one's
 * judgments and the file offset just past its line (`at[0]`: past the header). Undefined when the
 * file is missing or its header is not `guard`'s.
 */
const keepable = (
  path: string,
  guard: string
): Effect.Effect<
  { readonly counts: Growing<Float64Array>; readonly at: Growing<Float64Array> } | undefined,
  OutputError
> =>
  Effect.suspend(() => {
    const counts = new Growing(f64(1024), f64)
    const at = new Growing(f64(1024), f64)
    return runWhileSync(readWholeLines(path, asText), ([text, end]) => {
      if (at.length === 0 ? text !== headerLine(guard) : !/^\d+$/.test(text)) return false
      if (at.length > 0) counts.push(Number(text))
      at.push(end)
      return true
    }).pipe(Effect.map(() => at.length === 0 ? undefined : { counts, at }))
  })

/** A record line that did not parse (never expected): it ends what is kept. */
const unreadable = Symbol("unreadable")

/**
 * Keep what a killed run wrote of an iteration: the fold starts from the snapshot when there is one
 * that matches (`restore` is handed its state; when it throws, the snapshot is not used), then each
 * kept record after it is handed to `fold` in input order, and the three files are cut to the kept
 * cases (appended to from there). Returns the cases kept and the judgments behind them; 0 cases when
 * nothing can be kept (the caller writes every file again). The files are read as every JSON Lines
 * file is (`readWholeLines`: asynchronous reads, so a Ctrl+C is seen while a million records are
 * folded, ~30 s without a snapshot); once `stopping`, what was folded is kept.
 */
export const keepHeld = (
  files: HeldFiles,
  guard: string,
  fold: (record: unknown) => void,
  stopping: () => boolean = () => false,
  snapshot?: { readonly path: string; readonly restore: (state: unknown) => void },
  /** Told the bytes of records to read and fold, before they are read. */
  reading: (bytes: number) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<
  { readonly cases: number; readonly judgments: number; readonly fromSnapshot: number },
  OutputError
> =>
  Effect.gen(function*() {
    const none = { cases: 0, judgments: 0, fromSnapshot: 0 }
    const resume = yield* keepable(files.resume, guard)
    if (resume === undefined || resume.counts.length === 0 || !writable(files)) return none
    // Where the fold starts: the snapshot's cases, when it matches the files and restores.
    const start = { cases: 0, records: 0, metrics: 0 }
    const saved = snapshot === undefined ? undefined : readSnapshot(snapshot.path, guard)
    if (
      saved !== undefined && saved.cases > 0 && saved.cases <= resume.counts.length &&
      resume.at.get(saved.cases) === saved.sizes.resume &&
      saved.sizes.records <= fs.statSync(files.records).size && saved.sizes.cases <= fs.statSync(files.cases).size
    ) {
      try {
        snapshot!.restore(saved.state)
        Object.assign(start, { cases: saved.cases, records: saved.sizes.records, metrics: saved.sizes.cases })
      } catch {
        // Not this fold's state: every kept record is folded.
      }
    }
    // The case metrics' line ends, as far as the resume file lists cases.
    const metricsAt = new Growing(f64(1024), f64)
    yield* Stream.runForEachChunk(
      Stream.take(readLineEnds(files.cases, undefined, start.metrics), resume.counts.length - start.cases),
      (ends) =>
        Effect.sync(() => {
          for (const end of ends) metricsAt.push(end)
        })
    )
    // The records last, folded as they are read.
    yield* reading(fs.statSync(files.records).size - start.records)
    let folded = 0
    let recordsEnd = start.records
    const parse = (text: string): unknown => {
      try {
        return JSON.parse(text) as unknown
      } catch {
        return unreadable
      }
    }
    yield* runWhileSync(
      // Read 1 MiB at a time: 64 KiB reads left the process waiting on the thread pool ~12% of the fold.
      Stream.take(readWholeLines(files.records, parse, 1 << 20, start.records), metricsAt.length),
      ([record, end]) => {
        if (record === unreadable) return false
        fold(record)
        folded++
        recordsEnd = end
        return !stopping()
      }
    )
    const cases = start.cases + folded
    if (cases === 0) return none
    let judgments = 0
    for (let i = 0; i < cases; i++) judgments += resume.counts.get(i)
    const cut = (path: string, bytes: number) =>
      Effect.try({ try: () => fs.truncateSync(path, bytes), catch: (e) => writeProblem(path, e) })
    yield* cut(files.records, recordsEnd)
    yield* cut(files.cases, folded === 0 ? start.metrics : metricsAt.get(folded - 1))
    yield* cut(files.resume, resume.at.get(cases))
    return { cases, judgments, fromSnapshot: start.cases }
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
  /** The fold's snapshot, when the run takes them (`keepHeld`). */
  readonly snapshot?: { readonly path: string; readonly restore: (state: unknown) => void } | undefined
  /** Ctrl+C: keep what was read so far. */
  readonly stopping?: (() => boolean) | undefined
  readonly note: (text: string) => Effect.Effect<void>
}): Effect.Effect<{ readonly cases: number; readonly judgments: number }, E | OutputError, R> =>
  Effect.gen(function*() {
    const none = { cases: 0, judgments: 0 }
    const first = yield* firstHeldRecord(parts.files, parts.guard)
    if (first === undefined) {
      // Said, not silent: the resume then judges what it could have kept (minutes at a million cases).
      const header = yield* firstLine(parts.files.resume)
      if (header !== undefined && isHeaderLine(header)) {
        yield* parts.note(
          "the records a killed run wrote were made by another command line or version (a flag other than --quiet or --concurrency changed): they are made again from the journal"
        )
      }
      return none
    }
    const rebuilt = yield* parts.firstFromJournal
    if (rebuilt === undefined || JSON.stringify(rebuilt) !== first) {
      yield* parts.note(
        "the records a killed run wrote differ from what the journal gives now: they are made again from the journal"
      )
      return none
    }
    const held = yield* keepHeld(
      parts.files,
      parts.guard,
      parts.fold,
      parts.stopping,
      parts.snapshot,
      (bytes) =>
        bytes > 1 << 26
          ? parts.note(`reading the ${Math.round(bytes / 2 ** 20)} MB of records a killed run wrote…`)
          : Effect.void
    )
    if (held.cases > 0) {
      const folded = held.cases - held.fromSnapshot
      yield* parts.note(
        `kept the records of ${thousands(held.cases)} case${held.cases === 1 ? "" : "s"} a killed run wrote (${
          held.fromSnapshot === 0
            ? "all folded again"
            : `the fold of the first ${thousands(held.fromSnapshot)} from its snapshot, ${
              thousands(folded)
            } folded again`
        }); judging resumes after them`
      )
    }
    return { cases: held.cases, judgments: held.judgments }
  })
