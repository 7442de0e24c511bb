/** The records file of an iteration, written as records leave the pool in input order. */
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as fs from "node:fs"
import { WRITE_CHUNK_CHARS, writeFully, writeProblem } from "../io/Files.js"

export interface RecordsWriterOptions {
  /** Append to the `.partial` a killed run left (its kept cases, `HeldRecords.ts`) instead of starting it again. */
  readonly append?: boolean | undefined
  /**
   * Which failures keep what was written (the buffer written out, best effort): a resume keeps its
   * complete lines. Any other failure removes the `.partial`.
   */
  readonly keep?: ((exit: Exit.Exit<unknown, unknown>) => boolean) | undefined
}

interface Writing {
  readonly fd: number
  buffer: string
}

/**
 * What is buffered, to the file. Emptied first: a write that fails part-way is never written again
 * (a kept file would hold its first lines twice).
 */
const flush = (w: Writing) => {
  const text = w.buffer
  w.buffer = ""
  if (text.length > 0) writeFully(w.fd, text)
}

/**
 * Buffered line writer for a records file: `<path>.partial`, every write checked, renamed into place
 * when complete (a failure or a stop removes it unless `keep`; a killed run's is removed at the next
 * start, or kept by a resume).
 */
export const recordsWriter = (path: string, options: RecordsWriterOptions = {}) =>
  Effect.acquireRelease(
    Effect.try({
      try: (): Writing => ({ fd: fs.openSync(`${path}.partial`, options.append === true ? "a" : "w"), buffer: "" }),
      catch: (e) => writeProblem(path, e)
    }),
    (w, exit) =>
      Effect.sync(() => {
        const keep = exit._tag === "Failure" && options.keep?.(exit) === true
        if (keep) {
          try {
            flush(w)
          } catch {
            // A torn last line is cut off by the resume.
          }
        }
        fs.closeSync(w.fd)
        if (exit._tag === "Failure" && !keep) fs.rmSync(`${path}.partial`, { force: true })
      })
  ).pipe(Effect.map((w) => ({
    /** Buffered; true when this line made the buffer go to the file. */
    write: (line: string) =>
      Effect.try({
        try: () => {
          w.buffer += line + "\n"
          if (w.buffer.length < WRITE_CHUNK_CHARS) return false
          flush(w)
          return true
        },
        catch: (e) => writeProblem(path, e)
      }),
    /** What is buffered, to the file now (files written in step: `HeldRecords.ts`). */
    flush: Effect.try({ try: () => flush(w), catch: (e) => writeProblem(path, e) }),
    /** The file's size now (what was flushed: a resume's snapshot says how far its files reach). */
    size: Effect.try({ try: () => fs.fstatSync(w.fd).size, catch: (e) => writeProblem(path, e) }),
    /** The rest of the buffer, then the file in place. */
    close: Effect.try({
      try: () => {
        flush(w)
        fs.renameSync(`${path}.partial`, path)
      },
      catch: (e) => writeProblem(path, e)
    })
  })))
