/**
 * Every input size bounded (`domain/Limits.ts`): a field, a streamed record (a CSV row, a JSONL line)
 * and a JSON document past its bound is refused with the file, the line and the field — while the
 * file streams, before the oversized text is built whole.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll } from "vitest"
import { Limits } from "../../src/domain/Limits.js"
import { CsvParser } from "../../src/load/Csv.js"
import { JsonlParser, oversizedField } from "../../src/load/Json.js"
import { formatPath, type Row } from "../../src/load/Row.js"
import { scanInput } from "../../src/load/Rows.js"
import { mulberry32Floats } from "../../src/stats/Paired.js"
import { allRows, makeTempDir, readError, removeDir, writeInput } from "./files.js"

const dir = makeTempDir()
afterAll(() => removeDir(dir))

const MiB = 1024 * 1024

describe("the bounds' defaults", () => {
  it("a field 1 MiB, a record 16 MiB, a JSON document 256 MiB, a reply 1,000,000 characters, 1,000 claims", () => {
    expect(Limits).toMatchObject({
      fieldBytes: MiB,
      recordBytes: 16 * MiB,
      jsonDocumentBytes: 256 * MiB,
      replyChars: 1_000_000,
      claims: 1_000
    })
  })
})

describe("JSONL: a field past the bound", () => {
  it.effect("a 3 MiB answer on line 2: refused naming the line and the field; 1 MiB exactly passes", () =>
    Effect.gen(function*() {
      const ok = "a".repeat(MiB)
      const file = writeInput(
        dir,
        "answer.jsonl",
        `{"id":"1","answer":"${ok}"}\n{"id":"2","question":"q","answer":"${"b".repeat(3 * MiB)}"}\n`
      )
      expect(yield* readError(file)).toMatchObject({
        file,
        line: 2,
        field: "answer",
        problem: "field exceeds 1 MiB (the most one field may hold)"
      })
    }))

  it.effect("inside an array and an object: the path, with indices", () =>
    Effect.gen(function*() {
      const file = writeInput(
        dir,
        "nested.jsonl",
        `{"id":"1","contexts":["short",{"text":"x","meta":{"note":"${"é".repeat(MiB / 2 + 1)}"}}]}\n`
      )
      expect(yield* readError(file)).toMatchObject({ line: 1, field: "contexts[1].meta.note" })
    }))

  it.effect("UTF-8 bytes, not characters: escapes count as what they stand for", () =>
    Effect.gen(function*() {
      const limit = 1000
      // 400 × "é" written as \u00e9 is 400 characters, 800 bytes: within 1000 bytes.
      const within = writeInput(dir, "escaped.jsonl", `{"a":"${"\\u00e9".repeat(400)}"}\n`)
      expect(yield* allRows(within, { maxFieldBytes: limit })).toHaveLength(1)
      // 501 of them: 1002 bytes.
      const past = writeInput(dir, "escaped-past.jsonl", `{"a":"${"\\u00e9".repeat(501)}"}\n`)
      expect(yield* readError(past, { maxFieldBytes: limit })).toMatchObject({ field: "a" })
    }))

  it.effect("a key past the bound is refused too", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "key.jsonl", `{"id":"1","${"k".repeat(2000)}":1}\n`)
      expect(yield* readError(file, { maxFieldBytes: 1000 })).toMatchObject({ line: 1 })
    }))

  it("while the line streams: the parser refuses once the string passes the bound, without the rest of the line", () => {
    const parser = new JsonlParser("cases.jsonl", { fieldBytes: 1000 })
    const out: Array<Row> = []
    expect(parser.push("{\"id\":\"1\"}\n{\"id\":\"2\",\"answer\":\"", out)).toBeUndefined()
    expect(parser.push("x".repeat(999), out)).toBeUndefined()
    // One more character passes 1000 bytes: refused although the line (and the string) never ended.
    expect(parser.push("xx", out)).toMatchObject({ line: 2, field: "answer" })
    expect(out).toHaveLength(1)
  })

  it("a line past the record bound is refused while it streams, naming the line", () => {
    const parser = new JsonlParser("cases.jsonl", { fieldBytes: 100, recordBytes: 1000 })
    const out: Array<Row> = []
    const field = (i: number) => `"f${i}":"${"v".repeat(50)}",`
    let problem
    for (let i = 0; i < 100 && problem === undefined; i++) {
      problem = parser.push(i === 0 ? `{${field(i)}` : field(i), out)
    }
    expect(problem).toMatchObject({
      line: 1,
      problem: "line exceeds 1000 bytes (the most one line, one case, may hold)"
    })
  })

  it("the streaming check agrees with the parsed row's (random rows, random chunks)", () => {
    const random = mulberry32Floats(7)
    const pick = <A>(xs: ReadonlyArray<A>) => xs[Math.floor(random() * xs.length)]!
    const text = (n: number) =>
      Array.from({ length: n }, () => pick(["a", "é", "€", "𝄞", "\"", "\\", "\n", "z"])).join("")
    const value = (depth: number): unknown => {
      const r = random()
      if (depth > 3 || r < 0.4) return text(Math.floor(random() ** 3 * 120))
      if (r < 0.55) return Math.round(random() * 100)
      if (r < 0.75) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1))
      return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, (_, i) => [`k${i}`, value(depth + 1)]))
    }
    let refused = 0
    for (let trial = 0; trial < 400; trial++) {
      const row = { id: String(trial), body: value(0), more: value(0) }
      const line = JSON.stringify(row)
      const expected = oversizedField(row, 150)
      const parser = new JsonlParser("r.jsonl", { fieldBytes: 150, recordBytes: 1_000_000 })
      const out: Array<Row> = []
      let problem
      for (let at = 0; at < line.length && problem === undefined;) {
        const size = 1 + Math.floor(random() * 40)
        problem = parser.push(line.slice(at, at + size), out)
        at += size
      }
      problem ??= parser.push("\n", out) ?? parser.end(out)
      if (expected === undefined) {
        expect(problem).toBeUndefined()
      } else {
        refused++
        expect(problem?.field ?? "").toBe(formatPath(expected))
      }
    }
    expect(refused).toBeGreaterThan(20)
  })
})

describe("CSV: a row past the record bound", () => {
  it("refused at the field that passes it, naming the line and that column", () => {
    const parser = new CsvParser("cases.csv", { maxFieldBytes: 100, maxRecordBytes: 250 })
    const out: Array<Row> = []
    const problem = parser.push(
      `a,b,c,d\n1,2,3,4\n${["x".repeat(90), "y".repeat(90), "z".repeat(90), "w"].join(",")}\n`,
      out
    )
    expect(out).toHaveLength(1)
    expect(problem).toMatchObject({
      line: 3,
      field: "c",
      problem: "row exceeds 250 bytes (the most one row, one case, may hold; column 3)"
    })
  })
})

describe("JSON: fields and the document's size", () => {
  it.effect("a field past the bound: the line of its case and its path", () =>
    Effect.gen(function*() {
      const file = writeInput(
        dir,
        "cases.json",
        `{"cases": [\n  {"id": "1", "answer": "ok"},\n  {"id": "2", "answer": "${"z".repeat(2 * MiB)}"}\n]}\n`
      )
      expect(yield* readError(file)).toMatchObject({ file, line: 3, field: "answer" })
    }))

  it.effect("a document past its bound is refused before it is read", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "big.json", `[${"{\"id\":\"1\"},".repeat(200)}{"id":"x"}]`)
      const error = yield* Effect.flip(scanInput(file, { maxJsonBytes: 1000 }))
      expect(error.problem).toMatch(/^file exceeds 1000 bytes: a JSON test set is read whole.*JSONL/)
    }))
})
