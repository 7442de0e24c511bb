/**
 * A schema failure told as a user reads it (`RowSchema`): the path of the bad value under the row's
 * own field names, and the problem in words from the schemas' annotations — never Schema's or
 * TypeScript's notation.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import {
  decodeFields,
  expecting,
  formatPath,
  idText,
  issueDecoder,
  objectWith,
  OptionalId,
  optionalOrNull,
  problemOf,
  requiredText,
  rowError,
  type RowProblem
} from "../../src/load/RowSchema.js"

const problem = <A, I>(schema: Schema.Schema<A, I>, input: unknown): RowProblem => {
  const result = issueDecoder(schema)(input)
  if (Either.isRight(result)) throw new Error(`decoded: ${JSON.stringify(result.right)}`)
  return problemOf(result.left)
}

const Item = Schema.Struct({
  name: requiredText("name"),
  tags: optionalOrNull(Schema.Array(Schema.String).annotations(expecting("a list of tags")))
}).annotations(expecting("an item (an object)"))

const Row = Schema.Struct({
  id: OptionalId,
  title: requiredText("title", expecting("text", "the title is missing")),
  items: Schema.Array(Item).annotations(expecting("a list of items"))
})

describe("problemOf", () => {
  it("words a wrong type from the schema's kind or its annotation, and an absent value as nothing", () => {
    expect(problem(Row, { title: 5, items: [] })).toEqual({ path: ["title"], problem: "expected text, found a number" })
    expect(problem(Row, { title: "t", items: "x" })).toEqual({
      path: ["items"],
      problem: "expected a list of items, found a string"
    })
    expect(problem(Row, { title: "t" })).toEqual({
      path: ["items"],
      problem: "expected a list of items, found nothing"
    })
    expect(problem(Row, { id: {}, title: "t", items: [] })).toEqual({
      path: ["id"],
      problem: "expected text or a number, found an object"
    })
    expect(problem(Schema.Struct({ n: Schema.Number, b: Schema.Boolean }), { n: 1, b: "yes" })).toEqual({
      path: ["b"],
      problem: "expected true or false, found a string"
    })
  })

  it("says the absent message for null or a missing field, and a filter's message for blank text", () => {
    expect(problem(Row, { items: [] })).toEqual({ path: ["title"], problem: "the title is missing" })
    expect(problem(Row, { title: null, items: [] })).toEqual({ path: ["title"], problem: "the title is missing" })
    expect(problem(Row, { title: "  ", items: [] })).toEqual({ path: ["title"], problem: "the title is empty" })
  })

  it("follows arrays and nested arrays down to the bad value", () => {
    expect(problem(Row, { title: "t", items: [{ name: "a" }, 3] })).toEqual({
      path: ["items", 1],
      problem: "expected an item (an object), found a number"
    })
    expect(problem(Row, { title: "t", items: [[{ name: "a" }]] })).toEqual({
      path: ["items", 0],
      problem: "expected an item (an object), found an array"
    })
    expect(problem(Row, { title: "t", items: [{ name: "a", tags: ["x", ["y"]] }] })).toEqual({
      path: ["items", 0, "tags", 1],
      problem: "expected text, found an array"
    })
    expect(problem(Row, { title: "t", items: [{ name: "a", tags: {} }] })).toEqual({
      path: ["items", 0, "tags"],
      problem: "expected a list of tags, found an object"
    })
    expect(problem(Row, { title: "t", items: [{ name: "" }] })).toEqual({
      path: ["items", 0, "name"],
      problem: "the name is empty"
    })
  })

  it("reports a union from inside the member the value was meant for, else with the union's words", () => {
    const Query = Schema.Union(Schema.String, Schema.Struct({ inputs: Schema.Struct({ text: Schema.String }) }))
      .annotations(expecting("text or { inputs: { text } }"))
    expect(problem(Query, 5)).toEqual({ path: [], problem: "expected text or { inputs: { text } }, found a number" })
    // An object without the member's first field is not that shape at all.
    expect(problem(Query, { text: "x" })).toEqual({
      path: [],
      problem: "expected text or { inputs: { text } }, found an object"
    })
    expect(problem(Query, { inputs: { text: 5 } })).toEqual({
      path: ["inputs", "text"],
      problem: "expected text, found a number"
    })
    const Millis = Schema.Number.pipe(Schema.filter((n) => n >= 0 || `expected milliseconds ≥ 0, found ${n}`))
    const Latency = Schema.Union(Millis, Schema.Record({ key: Schema.String, value: Millis })).annotations(
      expecting("milliseconds or an object of spans")
    )
    expect(problem(Latency, -1)).toEqual({ path: [], problem: "expected milliseconds ≥ 0, found -1" })
    expect(problem(Latency, { total: 1, retrieve: -2 })).toEqual({
      path: ["retrieve"],
      problem: "expected milliseconds ≥ 0, found -2"
    })
    expect(problem(Latency, [1])).toEqual({
      path: [],
      problem: "expected milliseconds or an object of spans, found an array"
    })
  })

  it("takes a problem a filter or a builder puts at a path inside the object", () => {
    const Pair = Schema.Struct({ a: optionalOrNull(Schema.String), b: optionalOrNull(Schema.String) }).pipe(
      Schema.filter((p) => p.a != null || p.b != null || { path: ["a"], message: "give a or b" })
    )
    expect(problem(Pair, {})).toEqual({ path: ["a"], problem: "give a or b" })
    const Hit = objectWith(Schema.Struct({ id: OptionalId }), (hit, object) =>
      typeof object.text === "string"
        ? Either.right({ id: idText(hit.id), object })
        : Either.left(new ParseResult.Pointer("text", object, new ParseResult.Type(Schema.String.ast, object.text))))
    expect(problem(Schema.Array(Hit), [{ id: "a", text: "t" }, { id: "b" }])).toEqual({
      path: [1, "text"],
      problem: "expected text, found nothing"
    })
    expect(problem(Schema.Array(Hit), [{ id: [] }])).toEqual({
      path: [0, "id"],
      problem: "expected text or a number, found an array"
    })
  })
})

describe("decodeFields", () => {
  const decode = issueDecoder(Row)
  const names = { id: "key", title: "Heading", items: "things" }

  it("reads each schema field from the row's field of that name and leaves the row as it is", () => {
    const values = { key: 7, Heading: "  Hello  ", things: [{ name: " a ", extra: 1 }], other: true }
    const decoded = decodeFields(decode, names, values)
    expect(decoded).toEqual(Either.right({ id: 7, title: "Hello", items: [{ name: "a" }] }))
    expect(values.Heading).toBe("  Hello  ")
  })

  it("names the row's own field in a problem's path", () => {
    expect(decodeFields(decode, names, { Heading: "h", things: [{ name: "a", tags: [1] }] })).toEqual(
      Either.left({ path: ["things", 0, "tags", 0], problem: "expected text, found a number" })
    )
    expect(decodeFields(decode, names, { things: [] })).toEqual(
      Either.left({ path: ["Heading"], problem: "the title is missing" })
    )
  })

  it("a row's problem is an InputError with the file, the line and the field's path", () => {
    const error = rowError("cases.jsonl", { line: 12, values: {} }, {
      path: ["things", 2, "tags"],
      problem: "expected a list of tags, found a string"
    })
    expect(error).toMatchObject({ _tag: "InputError", file: "cases.jsonl", line: 12, field: "things[2].tags" })
    expect(error.message).toBe("cases.jsonl:12 (field \"things[2].tags\"): expected a list of tags, found a string")
    expect(rowError("f", { line: 1, values: {} }, { path: [], problem: "p" }).field).toBeUndefined()
  })
})

describe("fields", () => {
  it("formatPath writes keys with dots and indices in brackets", () => {
    expect(formatPath(["retrievedCourses", 2, "subjectCode"])).toBe("retrievedCourses[2].subjectCode")
    expect(formatPath(["Fragment Texts", 0, 1])).toBe("Fragment Texts[0][1]")
    expect(formatPath([])).toBe("")
  })

  it("idText: text trimmed (blank is none), a number as text, null or absent is none", () => {
    expect([idText(" a "), idText("  "), idText(7), idText(2.5), idText(null), idText(undefined)]).toEqual([
      "a",
      undefined,
      "7",
      "2.5",
      undefined,
      undefined
    ])
  })

  it("an optional id refuses what is neither text nor a number, Infinity included", () => {
    const Id = Schema.Struct({ id: OptionalId })
    expect(Either.isRight(issueDecoder(Id)({}))).toBe(true)
    expect(Either.isRight(issueDecoder(Id)({ id: null }))).toBe(true)
    expect(problem(Id, { id: true })).toEqual({ path: ["id"], problem: "expected text or a number, found a boolean" })
    expect(problem(Id, { id: JSON.parse("1e999") })).toEqual({
      path: ["id"],
      problem: "expected text or a number, found Infinity"
    })
  })
})
