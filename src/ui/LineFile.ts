/**
 * JSON Lines files read the way the browser review needs them: one pass that visits every line as a
 * byte range (no string made unless the visitor asks), and random access to a line by its byte
 * offsets. A run's records, case metrics and journal are indexed by one pass each and then read a
 * page at a time, so a 100,000-case run opens in about a second and the server holds a few bytes
 * per case, never the files.
 *
 * The files are read through an open descriptor that the index keeps: a file replaced by an atomic
 * rename (`rag-eval report` rewriting a run's records) is still the file the index describes until
 * the index is rebuilt (`FileStamp` tells it changed).
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { InputError } from "../domain/Errors.js"
import { fileReadProblem } from "../io/Files.js"

const CHUNK = 1 << 20
const NEWLINE = 0x0a

/** What identifies a file's version: a replaced (renamed over) or appended file has another stamp. */
export interface FileStamp {
  readonly ino: number
  readonly size: number
  readonly mtimeMs: number
}

export const stampOf = (stat: fs.Stats): FileStamp => ({ ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs })

export const sameStamp = (a: FileStamp | undefined, b: FileStamp | undefined): boolean =>
  a !== undefined && b !== undefined && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs

/** The file's stamp now, or undefined when it is not there. */
export const currentStamp = (path: string): FileStamp | undefined => {
  try {
    return stampOf(fs.statSync(path))
  } catch {
    return undefined
  }
}

/** An open file: its descriptor and the stamp it had when opened. */
export interface OpenFile {
  readonly path: string
  readonly fd: number
  readonly stamp: FileStamp
}

export const openFile = (path: string): Effect.Effect<OpenFile, InputError> =>
  Effect.try({
    try: () => {
      const fd = fs.openSync(path, "r")
      try {
        const stat = fs.fstatSync(fd)
        if (stat.isDirectory()) throw Object.assign(new Error("is a directory"), { code: "EISDIR" })
        return { path, fd, stamp: stampOf(stat) }
      } catch (e) {
        fs.closeSync(fd)
        throw e
      }
    },
    catch: (e) => new InputError({ file: path, problem: fileReadProblem(e) })
  })

export const closeFile = (file: OpenFile): void => {
  try {
    fs.closeSync(file.fd)
  } catch {
    // Already closed.
  }
}

/**
 * Visits the lines of the first `size` bytes of an open file: `visit(buffer, start, end, offset,
 * torn)` gets each line's bytes `[start, end)` in `buffer` (without its newline or a trailing CR),
 * the line's byte offset in the file, and whether it is a last line without its newline (a crash
 * mid-append leaves one: `torn`, also in the result). The buffer is reused: copy what is kept. Reads are asynchronous, one MiB at a
 * time, so the server keeps answering other requests while a large file is indexed.
 */
export const scanLines = (
  file: OpenFile,
  visit: (buffer: Buffer, start: number, end: number, offset: number, torn: boolean) => void,
  size: number = file.stamp.size
): Effect.Effect<{ readonly lines: number; readonly torn: boolean }, InputError> =>
  Effect.suspend(() => {
    let buffer = Buffer.allocUnsafe(CHUNK)
    /** Bytes [0, held) of the buffer are the start of a line not yet complete, at file offset `base`. */
    let held = 0
    let base = 0
    let position = 0
    let lines = 0
    const emit = (start: number, end: number, torn = false) => {
      const stop = end > start && buffer[end - 1] === 0x0d ? end - 1 : end
      visit(buffer, start, stop, base + start, torn)
      lines++
    }
    const step: Effect.Effect<{ readonly lines: number; readonly torn: boolean }, InputError> = Effect.suspend(() => {
      if (held === buffer.length) {
        const bigger = Buffer.allocUnsafe(buffer.length * 2)
        buffer.copy(bigger, 0, 0, held)
        buffer = bigger
      }
      const want = Math.min(buffer.length - held, size - position)
      if (want <= 0) {
        const torn = held > 0
        if (torn) emit(0, held, true)
        return Effect.succeed({ lines, torn })
      }
      return Effect.async<number, InputError>((resume) => {
        fs.read(file.fd, buffer, held, want, position, (error, read) => {
          if (error !== null) resume(Effect.fail(new InputError({ file: file.path, problem: fileReadProblem(error) })))
          else resume(Effect.succeed(read))
        })
      }).pipe(Effect.flatMap((read) => {
        if (read === 0) {
          // The file shrank under us: what was read is all there is.
          const torn = held > 0
          if (torn) emit(0, held, true)
          return Effect.succeed({ lines, torn })
        }
        position += read
        const end = held + read
        let start = 0
        for (let nl = buffer.indexOf(NEWLINE, held); nl !== -1 && nl < end; nl = buffer.indexOf(NEWLINE, start)) {
          emit(start, nl)
          start = nl + 1
        }
        buffer.copy(buffer, 0, start, end)
        base += start
        held = end - start
        return step
      }))
    })
    return step
  })

/** The text of bytes [start, end) of an open file (a line, without its newline). */
export const readRange = (file: OpenFile, start: number, end: number): Effect.Effect<string, InputError> =>
  Effect.async<string, InputError>((resume) => {
    const length = Math.max(0, end - start)
    const buffer = Buffer.allocUnsafe(length)
    const loop = (done: number) => {
      if (done >= length) return resume(Effect.succeed(buffer.toString("utf8", 0, done)))
      fs.read(file.fd, buffer, done, length - done, start + done, (error, read) => {
        if (error !== null) {
          return resume(Effect.fail(new InputError({ file: file.path, problem: fileReadProblem(error) })))
        }
        if (read === 0) return resume(Effect.succeed(buffer.toString("utf8", 0, done)))
        loop(done + read)
      })
    }
    loop(0)
  })

/** A line read back as JSON; a line that is not JSON names the file and line. */
export const parseLine = (text: string, file: string, line: number): Effect.Effect<unknown, InputError> =>
  Effect.try({
    try: () => JSON.parse(text.endsWith("\r") ? text.slice(0, -1) : text) as unknown,
    catch: (e) =>
      new InputError({ file, line, problem: `not valid JSON: ${e instanceof Error ? e.message : String(e)}` })
  })

const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * The JSON string value of `"<name>":"…"` in a line's bytes, searched from `from`: its raw bytes'
 * range when it has no escape (the common case: hashed as it is), else the decoded string. Undefined
 * when the field is not there as a string.
 */
export const stringField = (
  buffer: Buffer,
  start: number,
  end: number,
  prefix: Buffer
): { readonly start: number; readonly end: number } | { readonly text: string } | undefined => {
  const at = buffer.indexOf(prefix, start)
  if (at === -1 || at + prefix.length > end) return undefined
  const valueStart = at + prefix.length
  let escaped = false
  for (let i = valueStart; i < end; i++) {
    const c = buffer[i]
    if (c === BACKSLASH) {
      escaped = true
      i++
      continue
    }
    if (c === QUOTE) {
      if (!escaped) return { start: valueStart, end: i }
      try {
        return { text: JSON.parse(buffer.toString("utf8", valueStart - 1, i + 1)) as string }
      } catch {
        return undefined
      }
    }
  }
  return undefined
}
