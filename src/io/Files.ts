/**
 * Output files: written to a temporary sibling and renamed into place, so a crash or an error never
 * leaves a half-written report; and JSON Lines read back as a stream (records are never all in memory).
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import { OutputError } from "../domain/Errors.js"

const tmpName = (path: string) => `${path}.tmp-${process.pid}`
const TMP_SUFFIX = /\.tmp-(\d+)$/

const FULL = new Set(["ENOSPC", "EDQUOT", "EFBIG"])

/** Why a file could not be read, in words (file not found, a directory, permission denied…). */
export const fileReadProblem = (error: unknown): string => {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined
  return code === "ENOENT" || code === "ENOTDIR"
    ? "file not found"
    : code === "EISDIR"
    ? "is a directory, expected a file"
    : code === "EACCES" || code === "EPERM"
    ? "permission denied: the file cannot be read"
    : `cannot read the file: ${error instanceof Error ? error.message : String(error)}`
}

/**
 * The error of a failed write, for the user: a full disk (or quota, or file-size limit) says what to
 * do; anything else says what the system said.
 */
export const writeProblem = (path: string, error: unknown): OutputError => {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return FULL.has(code ?? "")
    ? new OutputError({ path, diskFull: true, problem: "free space and run the same command again", cause: error })
    : new OutputError({
      path,
      problem: `cannot write: ${error instanceof Error ? error.message : String(error)}`,
      cause: error
    })
}

/**
 * How much text (in characters) a writer gathers before it writes: every buffered writer (the
 * journal, records files, reports) writes once its text reaches this, not later. Text gathered with
 * `+=` is a rope that V8 flattens into a new string when it is written; a string past ~128 KB is a
 * large object of its own — memory mapped afresh, its pages faulted in, unmapped at the next
 * collection — and in a heuristic run that cost more than the writes: the journal's batches of
 * ~350 KB took ~4.4 ms a MB to flatten against ~0.6 ms below the limit (docs/benchmarks.md). 32 Ki
 * characters (plus the line that reaches it) stay below it even as two-byte text (any character
 * past U+00FF), at ~10 times the writes of 350 KB batches, which cost less than the flattening did.
 */
export const WRITE_CHUNK_CHARS = 1 << 15

/**
 * Write all of `data` at the descriptor's position (or at the end, for an append descriptor):
 * `write` may write less than asked (a disk that fills up, a file-size limit), so the rest is asked
 * again until it is all written or the system says why not (thrown, with its code). Returns the
 * bytes written.
 */
export const writeFully = (fd: number, data: string | Uint8Array): number => {
  if (typeof data === "string") {
    // A string is written as it is: Node encodes it without a Buffer of our own (≈ 30% less time
    // for a heuristic run's journal, which writes ~1 GB a 100k-case run). Only the rest of a
    // short write is encoded here.
    const first = data.length === 0 ? 0 : fs.writeSync(fd, data)
    const total = Buffer.byteLength(data)
    if (first === total) return total
    if (first <= 0) {
      throw Object.assign(new Error("no space left on device (a write made no progress)"), { code: "ENOSPC" })
    }
    return first + writeFully(fd, Buffer.from(data).subarray(first))
  }
  const bytes = data
  let done = 0
  while (done < bytes.length) {
    const n = fs.writeSync(fd, bytes, done, bytes.length - done)
    // A write that makes no progress is a full disk that did not say so.
    if (n <= 0) throw Object.assign(new Error("no space left on device (a write made no progress)"), { code: "ENOSPC" })
    done += n
  }
  return bytes.length
}

/**
 * A file written a piece at a time and put in place atomically: into `<path>.tmp-<pid>`, buffered
 * (`WRITE_CHUNK_CHARS`), every write checked; `commit` fsyncs it, checks its size against what was written and
 * renames it into place. Released without a commit (a failure, a stop, an interruption), the
 * temporary file is removed and `path` is left as it was. `writeAtomic` writes a stream this way; a
 * report written as a run's records leave (`Reporter.lines`) uses it directly.
 */
export interface AtomicWriter {
  /** Text to the file (buffered). */
  readonly write: (text: string) => Effect.Effect<void, OutputError>
  /** Every text of `texts`, in order: one Effect for many (a chunk of a report's lines). */
  readonly writeAll: (texts: Iterable<string>) => Effect.Effect<void, OutputError>
  /** The file in place, whole. */
  readonly commit: Effect.Effect<void, OutputError>
}

export const atomicWriter = (path: string): Effect.Effect<AtomicWriter, OutputError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => ({ fd: fs.openSync(tmpName(path), "w"), buffer: "", written: 0, committed: false }),
      catch: (e) => writeProblem(path, e)
    }),
    (w) =>
      Effect.sync(() => {
        try {
          fs.closeSync(w.fd)
        } finally {
          if (!w.committed) fs.rmSync(tmpName(path), { force: true })
        }
      })
  ).pipe(Effect.map((w): AtomicWriter => {
    const flush = () => {
      const text = w.buffer
      w.buffer = ""
      if (text.length > 0) w.written += writeFully(w.fd, text)
    }
    const add = (text: string) => {
      w.buffer += text
      if (w.buffer.length >= WRITE_CHUNK_CHARS) flush()
    }
    return {
      write: (text) => Effect.try({ try: () => add(text), catch: (e) => writeProblem(path, e) }),
      writeAll: (texts) =>
        Effect.try({
          try: () => {
            for (const text of texts) add(text)
          },
          catch: (e) => writeProblem(path, e)
        }),
      commit: Effect.try({
        try: () => {
          flush()
          fs.fsyncSync(w.fd)
          const size = fs.fstatSync(w.fd).size
          if (size !== w.written) {
            throw Object.assign(new Error(`${size} bytes on disk, ${w.written} written`), {
              code: size < w.written ? "ENOSPC" : "EIO"
            })
          }
          fs.renameSync(tmpName(path), path)
          w.committed = true
        },
        catch: (e) => writeProblem(path, e)
      })
    }
  }))

/**
 * Write the chunks of `content` to `path` atomically (`atomicWriter`): every write checked, fsynced,
 * its size checked against what was written, then renamed into place. On any failure the temporary
 * file is removed and `path` is left as it was.
 */
export const writeAtomic = <E, R>(
  path: string,
  content: Stream.Stream<string, E, R>
): Effect.Effect<void, OutputError | E, R> =>
  Effect.scoped(Effect.flatMap(atomicWriter(path), (w) =>
    content.pipe(
      // A chunk of lines at a time (a report of a million rows is a million elements).
      Stream.runForEachChunk(w.writeAll),
      Effect.zipRight(w.commit)
    )))

/** Is a process of this pid running (a signal-0 probe; EPERM: it runs, as another user)? */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Remove what a killed process left in `dir`: temporary files of atomic writes (`*.tmp-<pid>`, of a
 * process no longer running) and unfinished records files (`*.partial`, only ever written by the
 * run that owns the directory — call this while holding its lock), except those `keep` names (a
 * resume keeps an iteration's records: `engine/HeldRecords.ts`). Returns the names removed.
 */
export const removeLeftovers = (dir: string, keep: (name: string) => boolean = () => false): Array<string> => {
  const removed: Array<string> = []
  let names: Array<string>
  try {
    names = fs.readdirSync(dir)
  } catch {
    return removed
  }
  for (const name of names) {
    const tmp = TMP_SUFFIX.exec(name)
    const stale = (tmp !== null && Number(tmp[1]) !== process.pid && !isAlive(Number(tmp[1]))) ||
      (name.endsWith(".partial") && !keep(name))
    if (!stale) continue
    try {
      fs.rmSync(Path.join(dir, name), { force: true })
      removed.push(name)
    } catch {
      // Left for the next start; it is never read.
    }
  }
  return removed
}

export const writeFileAtomic = (path: string, text: string) => writeAtomic(path, Stream.make(text))

export const writeJsonAtomic = (path: string, value: unknown) =>
  writeFileAtomic(path, JSON.stringify(value, null, 2) + "\n")

const READ_SIZE = 64 * 1024
const NEWLINE = 0x0a

/**
 * Stream the parsed lines of a JSON Lines file we wrote ourselves.
 *
 * Read 64 KiB at a time into one reused buffer, each line decoded on its own: no read-ahead queue
 * and no string larger than a line, so what a pass allocates dies young (1 MiB chunk strings, or
 * one split into lines, outlived a scavenge and landed in the old generation — a 100k-row run's
 * large-object space reached 230 MB during its reports, and its peak fell 412 → 292 MB without them). Each read is asynchronous on purpose: a pass
 * that never returns to the event loop also starves V8's own collection tasks, and a 300k-row
 * run's reports grew the process by 25 MB when the reads were synchronous.
 */
export const readJsonLines = <A>(path: string): Stream.Stream<A, OutputError> =>
  readDecodedLines(
    path,
    (buffer, start, stop) => (stop > start ? JSON.parse(buffer.toString("utf8", start, stop)) as A : undefined)
  )

/**
 * The parsed lines at these indexes (0-based, blank lines not counted, as `readJsonLines` skips
 * them), each with its index, in file order; every other line is skipped without being decoded, and
 * the read stops after the last one wanted.
 */
export const readJsonLinesAt = <A>(
  path: string,
  wanted: ReadonlySet<number>
): Stream.Stream<readonly [A, number], OutputError> =>
  wanted.size === 0 ? Stream.empty : Stream.suspend(() => {
    let index = 0
    return readDecodedLines(path, (buffer, start, stop): readonly [A, number] | undefined => {
      if (stop <= start) return undefined
      const i = index++
      return wanted.has(i) ? [JSON.parse(buffer.toString("utf8", start, stop)) as A, i] : undefined
    }).pipe(Stream.take(wanted.size))
  })

/**
 * Every line of a text file as a string, blank lines included (so the n-th element is line n), read
 * the way `readJsonLines` reads: for callers that decode, count lines and report errors themselves
 * (e.g. a journal whose torn last line is tolerated). A final newline does not start an empty line.
 */
export const readLines = (path: string): Stream.Stream<string, OutputError> =>
  readDecodedLines(path, (buffer, start, stop) => buffer.toString("utf8", start, stop))

/**
 * The newline-ended lines of a file — a last line without its newline (torn by a crash) is not one —
 * each decoded from its text, with the file offset just past its newline: what a caller needs to cut
 * the file back to whole lines. Blank lines are lines. A missing file has none.
 */
export const readWholeLines = <A>(
  path: string,
  decode: (text: string) => A,
  /** Bytes a read asks for: larger for a file read once from end to end (fewer trips to the thread pool). */
  readSize = READ_SIZE,
  /** The file offset to start at (a line's start). */
  from = 0
): Stream.Stream<readonly [A, number], OutputError> =>
  Stream.suspend(() =>
    fs.existsSync(path)
      ? readDecodedLines(
        path,
        (buffer, start, stop, next): readonly [A, number] | undefined =>
          next === undefined ? undefined : [decode(buffer.toString("utf8", start, stop)), next],
        readSize,
        from
      )
      : Stream.empty
  )

/**
 * The file offset just past each whole line's newline, in order, without decoding the lines (a
 * last line without a newline is not whole, and not listed).
 */
export const readLineEnds = (path: string, readSize = READ_SIZE, from = 0): Stream.Stream<number, OutputError> =>
  Stream.suspend(() =>
    fs.existsSync(path)
      ? readDecodedLines(path, (_buffer, _start, _stop, next): number | undefined => next, readSize, from)
      : Stream.empty
  )

/**
 * The lines of a file, each decoded by `decode` from its bytes [start, stop) (a trailing CR dropped)
 * and the file offset just past its newline (undefined for a last line without one); undefined skips it.
 */
const readDecodedLines = <A>(
  path: string,
  decode: (buffer: Buffer, start: number, stop: number, next: number | undefined) => A | undefined,
  readSize = READ_SIZE,
  /** The file offset of the first line. */
  from = 0
): Stream.Stream<A, OutputError> =>
  Stream.suspend(() => {
    const fail = (e: unknown) => Option.some(new OutputError({ path, problem: `cannot read: ${(e as Error).message}` }))
    let fd: number | undefined
    let buffer = Buffer.allocUnsafe(readSize)
    /** Bytes [0, held) of `buffer` are the start of a line not yet complete. */
    let held = 0
    /** The file offset of `buffer[0]`. */
    let base = from
    /** The file offset of the next read. */
    let position = from
    let done = false
    const close = () => {
      if (fd !== undefined) fs.closeSync(fd)
      fd = undefined
    }
    const parse = (start: number, end: number, out: Array<A>, next: number | undefined) => {
      const stop = end > start && buffer[end - 1] === 0x0d ? end - 1 : end
      const value = decode(buffer, start, stop, next)
      if (value !== undefined) out.push(value)
    }
    /** The records of the lines completed by `read` more bytes; the last line may have no newline. */
    const lines = (read: number): Effect.Effect<Chunk.Chunk<A>, Option.Option<OutputError>> => {
      try {
        const end = held + read
        const out: Array<A> = []
        let start = 0
        for (let nl = buffer.indexOf(NEWLINE, held); nl !== -1 && nl < end; nl = buffer.indexOf(NEWLINE, start)) {
          parse(start, nl, out, base + nl + 1)
          start = nl + 1
        }
        if (read === 0) {
          if (end > start) parse(start, end, out, undefined)
          done = true
          close()
          return out.length === 0 ? Effect.fail(Option.none()) : Effect.succeed(Chunk.unsafeFromArray(out))
        }
        held = end - start
        base += start
        buffer.copy(buffer, 0, start, end)
        return Effect.succeed(Chunk.unsafeFromArray(out))
      } catch (e) {
        close()
        done = true
        return Effect.fail(fail(e))
      }
    }
    const pull = Effect.suspend((): Effect.Effect<Chunk.Chunk<A>, Option.Option<OutputError>> => {
      if (done) return Effect.fail(Option.none())
      try {
        fd ??= fs.openSync(path, "r")
      } catch (e) {
        done = true
        return Effect.fail(fail(e))
      }
      // A line longer than the buffer: grow it, keeping what is held.
      if (held === buffer.length) {
        const bigger = Buffer.allocUnsafe(buffer.length * 2)
        buffer.copy(bigger, 0, 0, held)
        buffer = bigger
      }
      const target = fd
      return Effect.flatMap(
        Effect.async<number, Option.Option<OutputError>>((resume) => {
          fs.read(target, buffer, held, buffer.length - held, position, (error, read) => {
            if (error !== null) {
              close()
              done = true
              resume(Effect.fail(fail(error)))
            } else {
              position += read
              resume(Effect.succeed(read))
            }
          })
        }),
        lines
      )
    })
    return Stream.repeatEffectChunkOption(pull).pipe(Stream.ensuring(Effect.sync(close)))
  })
