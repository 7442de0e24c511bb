import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { atomicWriter, readJsonLines, readJsonLinesAt, readLineEnds, readLines } from "../../src/io/Files.js"

const tempFile = (content: string | Buffer) => {
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-files-"))
  const path = Path.join(dir, "records.jsonl")
  fs.writeFileSync(path, content)
  return path
}

const readAll = (path: string) => readJsonLines<unknown>(path).pipe(Stream.runCollect, Effect.map(Chunk.toArray))

describe("readJsonLines", () => {
  it.effect("reads every line: CRLF, blank lines, no final newline", () =>
    Effect.gen(function*() {
      const path = tempFile("{\"a\":1}\r\n\n{\"a\":2}\n{\"a\":3}")
      expect(yield* readAll(path)).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }])
    }))

  it.effect("reads lines longer than its 64 KiB buffer, and multi-byte characters across reads", () =>
    Effect.gen(function*() {
      // "é" is two bytes: with an odd prefix, some of them straddle a 64 KiB read boundary.
      const long = "é".repeat(100_000)
      const records = [{ text: "x" }, { text: long }, { text: `a${long}` }, { text: "€ and 😀" }]
      const path = tempFile(records.map((r) => JSON.stringify(r)).join("\n") + "\n")
      expect(yield* readAll(path)).toEqual(records)
    }))

  it.effect("an empty file is an empty stream; a missing file is an OutputError naming it", () =>
    Effect.gen(function*() {
      expect(yield* readAll(tempFile(""))).toEqual([])
      const missing = Path.join(os.tmpdir(), "rag-eval-no-such-dir", "records.jsonl")
      const error = yield* Effect.flip(readAll(missing))
      expect(error._tag).toBe("OutputError")
      expect(error.path).toBe(missing)
      expect(error.problem).toMatch(/cannot read/)
    }))

  it.effect("can be read again (each report format makes its own pass)", () =>
    Effect.gen(function*() {
      const path = tempFile(Array.from({ length: 5000 }, (_, i) => JSON.stringify({ i })).join("\n"))
      const stream = readJsonLines<{ i: number }>(path)
      const first = yield* Stream.runFold(stream, 0, (n, r) => n + r.i)
      const second = yield* Stream.runFold(stream, 0, (n, r) => n + r.i)
      expect(first).toBe((4999 * 5000) / 2)
      expect(second).toBe(first)
    }))
})

describe("readJsonLinesAt", () => {
  const at = (path: string, wanted: ReadonlyArray<number>) =>
    readJsonLinesAt<unknown>(path, new Set(wanted)).pipe(Stream.runCollect, Effect.map(Chunk.toArray))

  it.effect("the lines at these indexes (blank lines not counted, as readJsonLines skips them), with their index, in file order", () =>
    Effect.gen(function*() {
      const path = tempFile("{\"a\":0}\r\n\n{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}")
      expect(yield* at(path, [3, 0, 2])).toEqual([[{ a: 0 }, 0], [{ a: 2 }, 2], [{ a: 3 }, 3]])
      expect(yield* at(path, [])).toEqual([])
      // An index past the end is not there; the others are.
      expect(yield* at(path, [1, 9])).toEqual([[{ a: 1 }, 1]])
    }))

  it.effect("a line not wanted is never decoded: a broken one is skipped", () =>
    Effect.gen(function*() {
      const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ i, text: "x".repeat(i % 50) }))
      lines[7] = "{ not json"
      lines[19_999] = "{ not json either"
      const path = tempFile(lines.join("\n") + "\n")
      const got = yield* at(path, [6, 8, 12_345])
      expect(got.map(([r, i]) => [(r as { i: number }).i, i])).toEqual([[6, 6], [8, 8], [12_345, 12_345]])
      // The same lines as a full read gives.
      const all = yield* readAll(tempFile(lines.filter((_, i) => i !== 7 && i !== 19_999).join("\n")))
      expect(got[2]![0]).toEqual(all[12_344])
    }))
})

describe("readLines", () => {
  const lines = (path: string) => readLines(path).pipe(Stream.runCollect, Effect.map(Chunk.toArray))

  it.effect("every line as text, blank lines kept (so element n is line n + 1), CR dropped, no empty line after a final newline", () =>
    Effect.gen(function*() {
      expect(yield* lines(tempFile("a b\r\n\nnot json {\n\r\nlast"))).toEqual(["a b", "", "not json {", "", "last"])
      expect(yield* lines(tempFile("one\ntwo\n"))).toEqual(["one", "two"])
      expect(yield* lines(tempFile(""))).toEqual([])
    }))

  it.effect("lines longer than the 64 KiB buffer", () =>
    Effect.gen(function*() {
      const long = "x".repeat(200_000)
      expect(yield* lines(tempFile(`${long}\nshort\n`))).toEqual([long, "short"])
    }))

  it.effect("a missing file is an OutputError naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(lines("/nonexistent/rag-eval/file.txt"))
      expect(error.message).toMatch(/^\/nonexistent\/rag-eval\/file\.txt: cannot read/)
    }))
})

describe("readLineEnds", () => {
  it.effect("the offset past each whole line's newline, across reads; a last line without one is not listed", () =>
    Effect.gen(function*() {
      const ends = (path: string, size?: number) =>
        readLineEnds(path, size).pipe(Stream.runCollect, Effect.map(Chunk.toArray))
      expect(yield* ends(tempFile("a\nbb\r\n\nccc"))).toEqual([2, 6, 7])
      // 1,000 lines of 10 bytes read 64 bytes at a time: every end found, none twice.
      const many = tempFile("123456789\n".repeat(1000))
      expect(yield* ends(many, 64)).toEqual(Array.from({ length: 1000 }, (_, i) => 10 * (i + 1)))
      expect(yield* ends(Path.join(os.tmpdir(), "rag-eval-no-such-file.jsonl"))).toEqual([])
    }))
})

describe("atomicWriter", () => {
  const dirWith = (content?: string) => {
    const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-atomic-"))
    const path = Path.join(dir, "report.csv")
    if (content !== undefined) fs.writeFileSync(path, content)
    return { dir, path }
  }

  it.effect("committed: the file in place, whole (more than its 64 KiB buffer), no temporary file left", () =>
    Effect.gen(function*() {
      const { dir, path } = dirWith("old\n")
      const lines = Array.from({ length: 20_000 }, (_, i) => `row ${i},é\n`)
      yield* Effect.scoped(Effect.gen(function*() {
        const w = yield* atomicWriter(path)
        yield* w.write("header\n")
        yield* w.writeAll(lines.slice(0, 10_000))
        for (const line of lines.slice(10_000)) yield* w.write(line)
        // Nothing is in place before the commit: the old file is as it was.
        expect(fs.readFileSync(path, "utf8")).toBe("old\n")
        yield* w.commit
      }))
      expect(fs.readFileSync(path, "utf8")).toBe(`header\n${lines.join("")}`)
      expect(fs.readdirSync(dir)).toEqual(["report.csv"])
    }))

  it.effect("released without a commit (a failure, a stop): the temporary file removed, the old file untouched", () =>
    Effect.gen(function*() {
      const { dir, path } = dirWith("old\n")
      const failed = yield* Effect.flip(Effect.scoped(Effect.gen(function*() {
        const w = yield* atomicWriter(path)
        yield* w.writeAll(Array.from({ length: 10_000 }, () => "x".repeat(100)))
        expect(fs.readdirSync(dir).some((n) => n.startsWith("report.csv.tmp-"))).toBe(true)
        return yield* Effect.fail("stopped" as const)
      })))
      expect(failed).toBe("stopped")
      expect(fs.readFileSync(path, "utf8")).toBe("old\n")
      expect(fs.readdirSync(dir)).toEqual(["report.csv"])
      const { dir: fresh, path: never } = dirWith()
      yield* Effect.scoped(Effect.flatMap(atomicWriter(never), (w) => w.write("a\n")))
      expect(fs.readdirSync(fresh)).toEqual([])
    }))

  it.effect("a directory that cannot be written: an OutputError naming the file", () =>
    Effect.gen(function*() {
      const missing = Path.join(os.tmpdir(), "rag-eval-no-such-dir", "report.csv")
      const error = yield* Effect.flip(Effect.scoped(atomicWriter(missing)))
      expect(error._tag).toBe("OutputError")
      expect(error.path).toBe(missing)
    }))
})
