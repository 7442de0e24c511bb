/**
 * Output files: written to a temporary sibling and renamed into place, so a crash or an error never
 * leaves a half-written report; and JSON Lines read back as a stream (records are never all in memory).
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import { OutputError } from "../domain/Errors.js"

const tmpName = (path: string) => `${path}.tmp-${process.pid}`

/** Write the chunks of `content` to `path` atomically. */
export const writeAtomic = <E, R>(path: string, content: Stream.Stream<string, E, R>): Effect.Effect<void, OutputError | E, R> =>
  Effect.acquireUseRelease(
    Effect.try({
      try: () => fs.openSync(tmpName(path), "w"),
      catch: (e) => new OutputError({ path, problem: `cannot write: ${(e as Error).message}` })
    }),
    (fd) => {
      let buffer = ""
      const flush = () => {
        if (buffer.length > 0) fs.writeSync(fd, buffer)
        buffer = ""
      }
      return content.pipe(
        Stream.runForEach((chunk) =>
          Effect.try({
            try: () => {
              buffer += chunk
              if (buffer.length >= 1 << 16) flush()
            },
            catch: (e) => new OutputError({ path, problem: `cannot write: ${(e as Error).message}` })
          })
        ),
        Effect.zipRight(Effect.try({
          try: () => {
            flush()
            fs.fsyncSync(fd)
          },
          catch: (e) => new OutputError({ path, problem: `cannot write: ${(e as Error).message}` })
        }))
      )
    },
    (fd, exit) =>
      Effect.sync(() => {
        fs.closeSync(fd)
        if (exit._tag === "Success") fs.renameSync(tmpName(path), path)
        else fs.rmSync(tmpName(path), { force: true })
      })
  )

export const writeFileAtomic = (path: string, text: string) => writeAtomic(path, Stream.make(text))

export const writeJsonAtomic = (path: string, value: unknown) => writeFileAtomic(path, JSON.stringify(value, null, 2) + "\n")

/** Stream the parsed lines of a JSON Lines file we wrote ourselves. */
export const readJsonLines = <A>(path: string): Stream.Stream<A, OutputError> =>
  Stream.suspend(() => {
    // Large chunks split by hand: a readline async iterator costs a promise and a stream element
    // per line (≈ 3× slower on a 200 MB records file).
    let rest = ""
    const split = (text: string): Array<A> => {
      const lines = (rest + text).split("\n")
      rest = lines.pop() ?? ""
      const out: Array<A> = []
      for (const line of lines) if (line !== "" && line !== "\r") out.push(JSON.parse(line) as A)
      return out
    }
    return Stream.fromAsyncIterable(
      fs.createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 20 }) as AsyncIterable<string>,
      (e) => new OutputError({ path, problem: `cannot read: ${(e as Error).message}` })
    ).pipe(
      // A final newline flushes a last line that has none.
      Stream.concat(Stream.succeed("\n")),
      Stream.mapConcat(split)
    )
  })
