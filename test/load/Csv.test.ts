import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { CsvParser, formatBytes, parseCsvText } from "../../src/load/Csv.js"
import type { Row } from "../../src/load/Rows.js"

const parse = (text: string, maxFieldBytes?: number) => parseCsvText("t.csv", text, { maxFieldBytes })

const rowsOf = (text: string) => {
  const result = parse(text)
  if (Either.isLeft(result)) throw new Error(result.left.message)
  return result.right.rows
}

const problemOf = (text: string, maxFieldBytes?: number) => {
  const result = parse(text, maxFieldBytes)
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

/** Feeds the text in pieces of 1..7 characters, to cross every state at a chunk boundary. */
const parsePieces = (text: string, seed: number): ReadonlyArray<Row> => {
  const parser = new CsvParser("t.csv")
  const rows: Array<Row> = []
  let i = 0
  let s = seed
  while (i < text.length) {
    s = (s * 1103515245 + 12345) % 2147483648
    const size = 1 + (s % 7)
    const problem = parser.push(text.slice(i, i + size), rows)
    if (problem !== undefined) throw new Error(problem.message)
    i += size
  }
  const problem = parser.end(rows)
  if (problem !== undefined) throw new Error(problem.message)
  return rows
}

describe("CsvParser", () => {
  it("reads LF rows with their start lines", () => {
    expect(rowsOf("a,b\n1,2\n3,4\n")).toEqual([
      { line: 2, values: { a: "1", b: "2" } },
      { line: 3, values: { a: "3", b: "4" } }
    ])
  })

  it("reads CRLF, lone CR and no trailing newline", () => {
    expect(rowsOf("a,b\r\n1,2\r\n3,4")).toEqual([
      { line: 2, values: { a: "1", b: "2" } },
      { line: 3, values: { a: "3", b: "4" } }
    ])
    expect(rowsOf("a,b\r1,2\r3,4\r")).toEqual([
      { line: 2, values: { a: "1", b: "2" } },
      { line: 3, values: { a: "3", b: "4" } }
    ])
  })

  it("keeps commas, line breaks and doubled quotes inside quoted fields, and counts lines through them", () => {
    const rows = rowsOf("q,t\n\"a, b\",\"line 1\r\nline 2\nline 3\"\n\"say \"\"hi\"\"\",\"\"\nlast,x")
    expect(rows).toEqual([
      { line: 2, values: { q: "a, b", t: "line 1\r\nline 2\nline 3" } },
      { line: 5, values: { q: "say \"hi\"", t: "" } },
      { line: 6, values: { q: "last", t: "x" } }
    ])
  })

  it("keeps escaped \\n sequences as they are (fragment splitting unescapes them later)", () => {
    const rows = rowsOf("f\n\"1. One.\\n2. Two, too.\"\n")
    expect(rows[0]!.values.f).toBe("1. One.\\n2. Two, too.")
  })

  it("keeps empty fields, including a trailing one", () => {
    expect(rowsOf("a,b,c\n,,\n1,,\n")).toEqual([
      { line: 2, values: { a: "", b: "", c: "" } },
      { line: 3, values: { a: "1", b: "", c: "" } }
    ])
  })

  it("skips blank lines, trailing or not", () => {
    expect(rowsOf("a,b\n1,2\n\n3,4\n\r\n\n  \n")).toEqual([
      { line: 2, values: { a: "1", b: "2" } },
      { line: 4, values: { a: "3", b: "4" } }
    ])
  })

  it("keeps a quote inside an unquoted field literally", () => {
    expect(rowsOf("a,b\n5\" pipe,x\n")[0]!.values).toEqual({ a: "5\" pipe", b: "x" })
  })

  it("gives the same rows whatever the chunking", () => {
    const text = "h1,\"h 2\",h3\r\n" +
      "plain,\"quoted, with comma\",\"multi\r\nline \"\"q\"\"\"\r\n" +
      "\r\n" +
      "é→😀,\"\",x\rlone,cr,row\n" +
      "\"a\"\"\",\"\"\"b\",\"c\r\n\"\r\n" +
      "end,of,file"
    const whole = rowsOf(text)
    expect(whole.map((row) => row.line)).toEqual([2, 5, 6, 7, 9])
    for (let seed = 1; seed <= 50; seed++) expect(parsePieces(text, seed)).toEqual(whole)
  })

  it("keeps a __proto__ column as an ordinary value", () => {
    const values = rowsOf("__proto__,b\n1,2\n")[0]!.values
    expect(Object.keys(values)).toEqual(["__proto__", "b"])
    expect(Object.getOwnPropertyDescriptor(values, "__proto__")?.value).toBe("1")
  })
})

describe("CsvParser errors", () => {
  it("rejects a row with a different number of fields, naming its line", () => {
    const error = problemOf("a,b,c\n1,2,3\n\"x\ny\",2\n")
    expect(error.line).toBe(3)
    expect(error.problem).toBe("expected 3 fields (as in the header), found 2")
    expect(problemOf("a,b\n1,2,3\n").problem).toContain("found 3 (is a field containing a comma missing its quotes?)")
  })

  it("names the line where an unbalanced quote starts", () => {
    const error = problemOf("a,b\n1,2\n3,\"open\n4,5\n6,7\n")
    expect(error.file).toBe("t.csv")
    expect(error.line).toBe(3)
    expect(error.field).toBe("b")
    expect(error.problem).toContain("unbalanced quote")
  })

  it("rejects text after a closing quote", () => {
    const error = problemOf("a,b\n1,\"say \"hi\" there\"\n")
    expect(error.line).toBe(2)
    expect(error.field).toBe("b")
    expect(error.problem).toContain("after the closing quote of column 2")
  })

  it("rejects duplicate and empty header names", () => {
    const duplicate = problemOf("a,b,a\n1,2,3\n")
    expect(duplicate.line).toBe(1)
    expect(duplicate.problem).toBe("duplicate column name \"a\" in the header (columns 1 and 3)")
    const empty = problemOf("a,,c\n1,2,3\n")
    expect(empty.line).toBe(1)
    expect(empty.problem).toBe("empty column name in the header (column 2)")
  })

  it("rejects empty and header-only inputs", () => {
    expect(problemOf("").problem).toBe("file is empty (no header row)")
    expect(problemOf("\n\r\n").problem).toBe("file is empty (no header row)")
    const headerOnly = problemOf("a,b\r\n\r\n")
    expect(headerOnly.line).toBe(1)
    expect(headerOnly.problem).toBe("no data rows: the file has a header but no rows")
  })

  it("limits field length in UTF-8 bytes, naming line and column", () => {
    const error = problemOf("a,b\n1,2\nx,\"" + "é".repeat(60) + "\"\n", 100)
    expect(error.line).toBe(3)
    expect(error.field).toBe("b")
    expect(error.problem).toBe("field exceeds 100 bytes (column 2)")
    expect(Either.isRight(parse("a,b\n1,\"" + "é".repeat(50) + "\"\n", 100))).toBe(true)
    expect(problemOf("a,b\n" + "z".repeat(101) + ",2\n", 100).problem).toBe("field exceeds 100 bytes (column 1)")
  })

  it("formats limits", () => {
    expect(formatBytes(1024 * 1024)).toBe("1 MiB")
    expect(formatBytes(64 * 1024)).toBe("64 KiB")
    expect(formatBytes(1000)).toBe("1000 bytes")
  })
})
