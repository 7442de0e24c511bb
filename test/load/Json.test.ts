import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { afterAll } from "vitest"
import { JsonlParser, MAX_JSON_DEPTH, nestingTooDeep, parseJsonDocument } from "../../src/load/Json.js"
import { allRows, makeTempDir, readError, removeDir, writeInput } from "./files.js"

const dir = makeTempDir()
afterAll(() => removeDir(dir))

describe("JSONL", () => {
  it.effect("reads one object per line, skipping blank lines, with CRLF and a BOM", () =>
    Effect.gen(function*() {
      const file = writeInput(
        dir,
        "cases.jsonl",
        "\uFEFF{\"q\":\"a\"}\r\n\r\n{\"q\":\"b\",\"n\":2}\r\n   \n{\"q\":\"c\"}"
      )
      const rows = yield* allRows(file)
      expect(rows).toEqual([
        { line: 1, values: { q: "a" } },
        { line: 3, values: { q: "b", n: 2 } },
        { line: 5, values: { q: "c" } }
      ])
      const ndjson = writeInput(dir, "cases.ndjson", "{\"q\":\"a\"}\n")
      expect((yield* allRows(ndjson)).length).toBe(1)
    }))

  it.effect("a bad line: its number and the parse problem", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "bad.jsonl", "{\"q\":\"a\"}\n{\"q\":\"b\"}\n{\"q\": \"c\",}\n{\"q\":\"d\"}\n")
      const error = yield* readError(file)
      expect(error.file).toBe(file)
      expect(error.line).toBe(3)
      expect(error.problem).toMatch(/^invalid JSON: .+ \(column 11\)$/)
    }))

  it.effect("a line that is not an object", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "array.jsonl", "{\"q\":\"a\"}\n[1,2]\n")
      expect(yield* readError(file)).toMatchObject({
        file,
        line: 2,
        problem: "expected a JSON object on each line, found an array"
      })
    }))

  it.effect("only blank lines", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "blank.jsonl", "\n  \n")
      expect(yield* readError(file)).toMatchObject({ file, problem: "no data rows: the file has only blank lines" })
    }))

  it.effect("invalid UTF-8", () =>
    Effect.gen(function*() {
      const file = writeInput(
        dir,
        "latin.jsonl",
        Buffer.concat([Buffer.from("{\"q\":\"a\"}\n{\"q\":\"caf"), Buffer.from([0xe9, 0x22, 0x7d])])
      )
      expect(yield* readError(file)).toMatchObject({
        file,
        line: 2,
        problem: "invalid UTF-8 (the file must be UTF-8 encoded)"
      })
    }))
})

describe("JSON", () => {
  it.effect("a top-level array: rows with the line where each object starts", () =>
    Effect.gen(function*() {
      const file = writeInput(
        dir,
        "array.json",
        "[\n  {\"q\": \"a\", \"tags\": [\"x\", {\"y\": \"[,]\"}]},\n  {\n    \"q\": \"b\"\n  }\n]\n"
      )
      expect(yield* allRows(file)).toEqual([
        { line: 2, values: { q: "a", tags: ["x", { y: "[,]" }] } },
        { line: 3, values: { q: "b" } }
      ])
    }))

  it("an object with cases: other fields are metadata; lines point into the cases array", () => {
    const text =
      "{\n \"name\": \"set\",\n \"other\": [{\"q\": \"no\"}],\n \"cases\": [\n  {\"q\": \"a\"},\n\n  {\"q\": \"b\"}\n ],\n \"version\": 3\n}"
    const document = Either.getOrThrow(parseJsonDocument("t.json", text))
    expect(document.metadata).toEqual({ name: "set", other: [{ q: "no" }], version: 3 })
    expect(document.rows).toEqual([{ line: 5, values: { q: "a" } }, { line: 7, values: { q: "b" } }])
    expect(document.columns).toEqual(["q"])
  })

  it.effect("invalid JSON: the line and the parse problem", () =>
    Effect.gen(function*() {
      const file = writeInput(dir, "bad.json", "[\n {\"q\": \"a\"},\n {\"q\" \"b\"}\n]")
      const error = yield* readError(file)
      expect(error).toMatchObject({ file, line: 3 })
      expect(error.problem).toMatch(/^invalid JSON: .+ \(column 7\)$/)
    }))

  it("wrong shapes", () => {
    const problem = (text: string) => Either.flip(parseJsonDocument("t.json", text)).pipe(Either.getOrThrow)
    expect(problem("{\"items\": []}").problem).toBe(
      "expected a top-level array of objects, or an object with a \"cases\" array; found an object without \"cases\" (keys: items)"
    )
    expect(problem("{\"cases\": 3}").problem).toContain("found an object whose \"cases\" is a number")
    expect(problem("42").problem).toContain("found a number")
    expect(problem("[]").problem).toBe("no data rows: the array is empty")
    expect(problem("{\"cases\": []}").problem).toBe("no data rows: the \"cases\" array is empty")
    expect(problem("   ").problem).toBe("file is empty")
    const item = problem("[\n{\"q\": 1},\n\"text\"\n]")
    expect(item).toMatchObject({ line: 3, problem: "item 2 is a string, expected an object" })
  })
})

describe("nesting depth", () => {
  it("counts levels of objects and arrays, the value itself being 1; scalars add none", () => {
    expect(nestingTooDeep({ a: 1 }, 1)).toBeUndefined()
    expect(nestingTooDeep({ a: [] }, 1)).toEqual({ depth: 2, field: "a" })
    expect(nestingTooDeep({ a: [[1]], b: "x" }, 3)).toBeUndefined()
    expect(nestingTooDeep({ b: "x", a: [[{}]] }, 3)).toEqual({ depth: 4, field: "a" })
    expect(nestingTooDeep([[[]]], 2)).toEqual({ depth: 3, field: undefined })
    expect(nestingTooDeep("text", 0)).toBeUndefined()
  })

  it("measures 100,000 levels without recursion", () => {
    const deep = JSON.parse("[".repeat(100_000) + "]".repeat(100_000)) as unknown
    expect(nestingTooDeep({ x: deep })).toEqual({ depth: MAX_JSON_DEPTH + 1, field: "x" })
  })

  it("JSONL and JSON rows deeper than 64 levels are input errors naming the line", () => {
    const parser = new JsonlParser("f.jsonl")
    const deep = "{\"a\":".repeat(64) + "1" + "}".repeat(64)
    expect(parser.push(`{"ok": 1}\n{"x": ${deep}}\n`, [])).toMatchObject({
      _tag: "InputError",
      file: "f.jsonl",
      line: 2
    })
    const doc = parseJsonDocument("f.json", `[\n{"ok": 1},\n{"x": ${deep}}\n]`)
    expect(Either.isLeft(doc) ? doc.left : undefined).toMatchObject({ _tag: "InputError", line: 3 })
  })
})
