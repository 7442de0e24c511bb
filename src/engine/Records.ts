/** The records file of an iteration, written as records leave the pool in input order. */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { writeFully, writeProblem } from "../io/Files.js"

/**
 * Buffered line writer for a records file: `<path>.partial`, every write checked, renamed into place
 * when complete (a failure or a stop removes it; a killed run's is removed at the next start).
 */
export const recordsWriter = (path: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => ({ fd: fs.openSync(`${path}.partial`, "w"), buffer: "" }),
      catch: (e) => writeProblem(path, e)
    }),
    (w, exit) =>
      Effect.sync(() => {
        fs.closeSync(w.fd)
        if (exit._tag === "Failure") fs.rmSync(`${path}.partial`, { force: true })
      })
  ).pipe(Effect.map((w) => ({
    write: (line: string) =>
      Effect.try({
        try: () => {
          w.buffer += line + "\n"
          if (w.buffer.length >= 1 << 16) {
            writeFully(w.fd, w.buffer)
            w.buffer = ""
          }
        },
        catch: (e) => writeProblem(path, e)
      }),
    /** The rest of the buffer, then the file in place. */
    close: Effect.try({
      try: () => {
        if (w.buffer.length > 0) writeFully(w.fd, w.buffer)
        w.buffer = ""
        fs.renameSync(`${path}.partial`, path)
      },
      catch: (e) => writeProblem(path, e)
    })
  })))
