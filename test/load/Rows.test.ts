import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { InputError } from "../../src/domain/Errors.js"
import { ragAnswersColumns, toCase } from "../../src/load/CaseMapping.js"
import { readRows, scanInput } from "../../src/load/Rows.js"
import { allRows, makeTempDir, readError, removeDir, writeInput } from "./files.js"

const dir = makeTempDir()
afterAll(() => removeDir(dir))

const header = "Current User Question,Conversation History,Fragment Texts,Assistant Answer"

describe("readRows: CSV", () => {
  it.effect("reads a BOM + CRLF file with quoted newlines, doubled quotes and no trailing newline", () =>
    Effect.gen(function*() {
      const file = writeInput(
        dir,
        "bom-crlf.csv",
        "\uFEFF" + header + "\r\n" +
          "What is X?,\"User: hi\\nAssistant: hello\",\"1. X is a \"\"thing\"\".\\n2. It has 3.5 parts.\",X is a thing.\r\n" +
          "\"Multi\r\nline?\",,\"1. A\r\n2. B\",\"Yes, it is.\""
      )
      const rows = yield* allRows(file)
      expect(rows).toEqual([
        {
          line: 2,
          values: {
            "Current User Question": "What is X?",
            "Conversation History": "User: hi\\nAssistant: hello",
            "Fragment Texts": "1. X is a \"thing\".\\n2. It has 3.5 parts.",
            "Assistant Answer": "X is a thing."
          }
        },
        {
          line: 3,
          values: {
            "Current User Question": "Multi\r\nline?",
            "Conversation History": "",
            "Fragment Texts": "1. A\r\n2. B",
            "Assistant Answer": "Yes, it is."
          }
        }
      ])
    }))

  it.effect("reads an LF file with trailing blank lines", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "lf.csv", "a,b\n1,2\n3,4\n\n\n")
      const rows = yield* allRows(file)
      expect(rows.map((row) => row.values)).toEqual([{ a: "1", b: "2" }, { a: "3", b: "4" }])
    }))

  it.effect("streams a file of several reads with multi-line rows and multi-byte characters", () =>
    Effect.gen(function*() {
      const lines = ["id,text"]
      for (let i = 0; i < 12_000; i++) lines.push(`${i},"é😀 ${"x".repeat(i % 37)} ""q"" ${i}\r\nend"`)
      const file = writeInput(dir, "big.csv", lines.join("\r\n"))
      expect(fs.statSync(file).size).toBeGreaterThan(2 * 256 * 1024)
      const rows = yield* allRows(file)
      expect(rows.length).toBe(12_000)
      rows.forEach((row, i) => {
        expect(row.line).toBe(2 + 2 * i)
        expect(row.values).toEqual({ id: String(i), text: `é😀 ${"x".repeat(i % 37)} "q" ${i}\r\nend` })
      })
    }))

  it.effect("decodes a character and a CRLF split exactly at read boundaries", () =>
    Effect.gen(function*() {
      const read = 256 * 1024
      const start = "id,text\n1,\""
      // "😀" (4 bytes) starts 2 bytes before the first boundary; a CRLF straddles the second one.
      const first = start + "x".repeat(read - start.length - 2) + "😀\"\n2,\"é"
      const firstBytes = Buffer.byteLength(first)
      const second = "y".repeat(2 * read - firstBytes - 2) + "\"\r\n3,z"
      const file = writeInput(dir, "boundaries.csv", first + second)
      expect(Buffer.from(first + second).subarray(2 * read - 1, 2 * read + 1).toString()).toBe("\r\n")
      const rows = yield* allRows(file)
      expect(rows.map((row) => row.line)).toEqual([2, 3, 4])
      expect(rows[0]!.values.text).toBe("x".repeat(read - start.length - 2) + "😀")
      expect(rows[1]!.values.text).toBe("é" + "y".repeat(2 * read - firstBytes - 2))
      expect(rows[2]!.values).toEqual({ id: "3", text: "z" })
    }))

  it.effect("stops early without reading the rest", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "take.csv", "a\n1\n2\n3\n")
      const rows = yield* Stream.runCollect(Stream.take(readRows(file), 2))
      expect(Chunk.toReadonlyArray(rows).map((row) => row.values.a)).toEqual(["1", "2"])
    }))

  it.effect("honours an explicit format whatever the extension", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "data.txt", "a\n1\n")
      expect((yield* allRows(file, { format: "csv" })).length).toBe(1)
    }))
})

describe("readRows: bad input", () => {
  it.effect("missing file", () =>
    Effect.gen(function*() {
      const file = path.join(dir, "nope.csv")
      const error = yield* readError(file)
      expect(error).toBeInstanceOf(InputError)
      expect(error.file).toBe(file)
      expect(error.line).toBeUndefined()
      expect(error.problem).toBe("file not found")
    }))

  it.effect("a directory", () =>
    Effect.gen(function*() {
      const sub = path.join(dir, "folder.csv")
      fs.mkdirSync(sub)
      const error = yield* readError(sub)
      expect(error.file).toBe(sub)
      expect(error.problem).toBe("is a directory, expected a CSV/JSON/JSONL file")
    }))

  it.effect("an empty file, a blank file and a header-only file", () =>
    Effect.gen(function*() {
      const empty = writeInput(dir, "empty.csv", "")
      expect(yield* readError(empty)).toMatchObject({ file: empty, problem: "file is empty" })
      const blank = writeInput(dir, "blank.csv", "\uFEFF\r\n\r\n")
      expect(yield* readError(blank)).toMatchObject({ file: blank, problem: "file is empty (no header row)" })
      const headerOnly = writeInput(dir, "header-only.csv", header + "\r\n")
      expect(yield* readError(headerOnly)).toMatchObject({
        file: headerOnly,
        line: 1,
        problem: "no data rows: the file has a header but no rows"
      })
    }))

  it.effect("an unknown extension suggests the formats", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "data.xlsx", "a\n1\n")
      const error = yield* readError(file)
      expect(error.file).toBe(file)
      expect(error.problem).toContain("unknown file extension \".xlsx\"")
      expect(error.problem).toContain(".csv, .json, .jsonl or .ndjson")
    }))

  it.effect("unbalanced quote: the line where the quoted field starts", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "unbalanced.csv", "a,b\n1,2\n3,\"never closed\n4,5\n6,7")
      const error = yield* readError(file)
      expect(error).toMatchObject({ file, line: 3, field: "b" })
      expect(error.problem).toContain("unbalanced quote")
    }))

  it.effect("wrong field count", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "count.csv", "a,b,c\r\n1,2,3\r\n4,5\r\n")
      expect(yield* readError(file)).toMatchObject({
        file,
        line: 3,
        problem: "expected 3 fields (as in the header), found 2"
      })
    }))

  it.effect("invalid UTF-8 bytes: the line that holds them", () =>
    Effect.gen(function*() {
      const bytes = Buffer.concat([Buffer.from("a,b\n1,é\n2,2\n3,"), Buffer.from([0xff, 0xfe]), Buffer.from("x\n")])
      const file = writeInput(dir, "latin.csv", bytes)
      expect(yield* readError(file)).toMatchObject({
        file,
        line: 4,
        problem: "invalid UTF-8 (the file must be UTF-8 encoded)"
      })
    }))

  it.effect("invalid UTF-8 far into the file, after several reads", () =>
    Effect.gen(function*() {
      const lines = ["a,b"]
      for (let i = 0; i < 20_000; i++) lines.push(`${i},"é ${i}\r\nx"`)
      const head = Buffer.from(lines.join("\n") + "\n") // 20,000 rows of 2 lines: the next line is 40,002
      const bytes = Buffer.concat([head, Buffer.from("z,caf"), Buffer.from([0xe9]), Buffer.from("\n")])
      const file = writeInput(dir, "late-latin.csv", bytes)
      expect(yield* readError(file)).toMatchObject({ file, line: 40_002 })
    }))

  it.effect("a file ending inside a multi-byte character", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "truncated.csv", Buffer.concat([Buffer.from("a\nx\ny"), Buffer.from([0xe2, 0x82])]))
      const error = yield* readError(file)
      expect(error).toMatchObject({ file, line: 3 })
      expect(error.problem).toContain("invalid UTF-8")
    }))

  it.effect("a 10 MB field fails at 1 MiB naming line and column", () =>
    Effect.gen(function*() {
      const big = "y".repeat(10 * 1024 * 1024)
      const file = writeInput(dir, "huge.csv", `${header}\nq,h,"${big}",a\n`)
      const error = yield* readError(file)
      expect(error).toMatchObject({
        file,
        line: 2,
        field: "Fragment Texts",
        problem: "field exceeds 1 MiB (column 3)"
      })
      const smaller = yield* readError(file, { maxFieldBytes: 64 * 1024 })
      expect(smaller.problem).toBe("field exceeds 64 KiB (column 3)")
    }))

  it.effect.skipIf(process.getuid?.() === 0)("permission denied", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "secret.csv", "a\n1\n")
      fs.chmodSync(file, 0o000)
      expect(yield* readError(file)).toMatchObject({ file, problem: "permission denied: the file cannot be read" })
    }))
})

describe("scanInput", () => {
  it.effect("counts rows, hashes the raw bytes and reports the columns", () =>
    Effect.gen(function*() {
      const content = "\uFEFF" + header + "\r\nq1,,f,a\r\nq2,,f,a\r\n\r\n"
      const file = writeInput(dir, "scan.csv", content)
      const summary = yield* scanInput(file)
      expect(summary).toEqual({
        rows: 2,
        sha256: createHash("sha256").update(Buffer.from(content)).digest("hex"),
        columns: header.split(","),
        metadata: {},
        format: "csv"
      })
    }))

  it.effect("finds bad input on the last line before anything else happens", () =>
    Effect.gen(function*() {
      const lines = [header]
      for (let i = 0; i < 5000; i++) lines.push(`question ${i},,1. f,answer`)
      lines.push(",,1. f,answer")
      const file = writeInput(dir, "late-bad.csv", lines.join("\n"))
      const error = yield* Effect.flip(
        scanInput(file, { check: (row, ordinal) => toCase(row, ordinal, ragAnswersColumns, file) })
      )
      expect(error).toMatchObject({
        file,
        line: 5002,
        field: "Current User Question",
        problem: "the question is empty"
      })
      const structural = writeInput(dir, "late-structural.csv", lines.slice(0, -1).join("\n") + "\nq,\"unclosed,f,a\n")
      expect(yield* Effect.flip(scanInput(structural))).toMatchObject({ file: structural, line: 5002 })
    }))

  it.effect("JSONL: columns are the keys in order of first appearance", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "scan.jsonl", "{\"a\":1}\n{\"b\":2,\"a\":3}\n")
      const summary = yield* scanInput(file)
      expect(summary.rows).toBe(2)
      expect(summary.columns).toEqual(["a", "b"])
      expect(summary.format).toBe("jsonl")
    }))

  it.effect("JSON: returns the test set's metadata", () =>
    Effect.gen(function*() {
      const content = JSON.stringify({ version: "1.2", name: "courses", cases: [{ id: "c1", question: "q" }] })
      const file = writeInput(dir, "scan.json", content)
      const summary = yield* scanInput(file)
      expect(summary).toEqual({
        rows: 1,
        sha256: createHash("sha256").update(content).digest("hex"),
        columns: ["id", "question"],
        metadata: { version: "1.2", name: "courses" },
        format: "json"
      })
    }))
})

describe("readRows: skip (a resume past the cases it kept)", () => {
  const csv = header + "\r\n" +
    "q0,,\"1. A\",a0\r\n" +
    "\r\n" +
    "\"q1 on\r\ntwo lines\",,\"1. \"\"B\"\"\",a1\r\n" +
    "q2,,\"1. C\",\"a2, with a comma\"\r\n" +
    "q3,,,a3"
  const jsonl = "{\"q\":\"q0\"}\n\n  \n{\"q\":\"q1\",\"n\":[1,2]}\r\n{\"q\":\"q2\"}\n{\"q\":\"q3\"}"
  const json = JSON.stringify([{ q: "q0" }, { q: "q1" }, { q: "q2" }, { q: "q3" }])
  for (const [name, content] of [["skip.csv", csv], ["skip.jsonl", jsonl], ["skip.json", json]] as const) {
    it.effect(`${name}: the rows after the skipped ones, with their own lines, at every skip`, () =>
      Effect.gen(function*() {
        const file = writeInput(dir, name, content)
        const all = yield* allRows(file)
        expect(all).toHaveLength(4)
        for (let skip = 0; skip <= 5; skip++) {
          expect(yield* allRows(file, { skip }), `skip ${skip}`).toEqual(all.slice(skip))
        }
      }))
  }

  it.effect("a skipped JSONL line is not parsed (a bad one is passed over); a CSV row's fields are still counted", () =>
    Effect.gen(function*() {
      const jsonlFile = writeInput(dir, "skip-bad.jsonl", "{not json\n{\"q\":\"q1\"}\n")
      expect(yield* allRows(jsonlFile, { skip: 1 })).toEqual([{ line: 2, values: { q: "q1" } }])
      expect((yield* readError(jsonlFile)).line).toBe(1)
      const csvFile = writeInput(dir, "skip-bad.csv", header + "\nq0,only two\nq1,,,a1\n")
      expect((yield* readError(csvFile, { skip: 1 })).problem).toMatch(/expected 4 fields/)
    }))
})
