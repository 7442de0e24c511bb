/**
 * The pure parts of the server: body sizes, problem paths and messages, the token comparison,
 * request preparation and the metrics of one ranking.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { decode, formatPath, parseSize } from "../../src/server/Body.js"
import { SearchRequest } from "../../src/server/Domain.js"
import { meanMetrics, prepare, searchMetrics } from "../../src/server/Evaluate.js"
import { tokensEqual } from "../../src/server/Http.js"

describe("parseSize", () => {
  it("reads bytes and binary units", () => {
    expect(parseSize("1mb")).toEqual(Either.right(1024 * 1024))
    expect(parseSize("512kb")).toEqual(Either.right(512 * 1024))
    expect(parseSize("2MiB")).toEqual(Either.right(2 * 1024 * 1024))
    expect(parseSize("1.5k")).toEqual(Either.right(1536))
    expect(parseSize("1048576")).toEqual(Either.right(1048576))
    expect(parseSize(" 10 b ")).toEqual(Either.right(10))
  })
  it("refuses what is not a size", () => {
    expect(Either.isLeft(parseSize("lots"))).toBe(true)
    expect(Either.isLeft(parseSize("1tb"))).toBe(true)
    expect(Either.isLeft(parseSize("0"))).toBe(true)
    expect(Either.isLeft(parseSize("-1mb"))).toBe(true)
  })
})

describe("problems", () => {
  it("paths read like the request: hits[0].id", () => {
    expect(formatPath(["hits", 0, "id"])).toBe("hits[0].id")
    expect(formatPath(["requests", 2, "hits", 1])).toBe("requests[2].hits[1]")
    expect(formatPath([])).toBe("")
  })
  it("one problem per path; a union's members merged into one message", () => {
    const result = decode(SearchRequest, { query: { inputs: { text: "q" } }, eval: { gain: "cubic" }, hits: [] })
    const error = Either.getLeft(result)
    expect(error._tag).toBe("Some")
    if (error._tag === "Some") {
      expect(error.value.error.problems).toEqual([{
        path: "eval.gain",
        message: "expected \"exponential\" or \"linear\", got \"cubic\""
      }])
      expect(error.value.error.message).toBe(
        "invalid request (1 problem): eval.gain: expected \"exponential\" or \"linear\", got \"cubic\""
      )
    }
  })
  it("the SPEC §8 request decodes", () => {
    const request = {
      query: { inputs: { text: "q" } },
      eval: { fields: ["text"], debug: false },
      hits: [{ id: "a", text: "t", extra: { nested: 1 } }]
    }
    expect(Either.isRight(decode(SearchRequest, request))).toBe(true)
    expect(Schema.decodeUnknownSync(SearchRequest)(request).hits[0]).toEqual({
      id: "a",
      text: "t",
      extra: { nested: 1 }
    })
  })
})

describe("tokensEqual", () => {
  it("compares whole tokens of any length in constant time", () => {
    expect(tokensEqual("abc", "abc")).toBe(true)
    expect(tokensEqual("abc", "abd")).toBe(false)
    expect(tokensEqual("abc", "abcd")).toBe(false)
    expect(tokensEqual("", "x")).toBe(false)
  })
})

describe("prepare", () => {
  const request = (hits: ReadonlyArray<Record<string, unknown>>, fields?: ReadonlyArray<string>) =>
    Schema.decodeUnknownSync(SearchRequest)({
      query: { inputs: { text: "  capital of france  " } },
      ...(fields === undefined ? {} : { eval: { fields } }),
      hits
    })

  it("the judge reads one field as its value, several as `field: value` lines; the query is trimmed", () => {
    const one = Either.getOrThrow(prepare(request([{ id: "a", text: "Paris", title: "T" }])))
    expect(one.query).toBe("capital of france")
    expect(one.passages).toEqual(["Paris"])
    expect(one.caseId).toBe("1")
    const two = Either.getOrThrow(prepare(request([{ id: "a", text: "Paris", title: "T" }], ["title", "text"])))
    expect(two.passages).toEqual(["title: T\ntext: Paris"])
  })
  it("names every hit without any of the chosen fields", () => {
    const problems = Either.getLeft(
      prepare(request([{ id: "a", text: "x" }, { id: "b", body: "y" }, { id: "c" }]), "requests[4]")
    )
    expect(problems._tag === "Some" ? problems.value.map((p) => p.path) : []).toEqual([
      "requests[4].hits[1]",
      "requests[4].hits[2]"
    ])
  })
})

describe("searchMetrics", () => {
  it("hand-computed: grades 3, 0, 2", () => {
    const m = searchMetrics([3, 0, 2], { gain: "exponential" })
    expect(m.ndcg).toBeCloseTo((7 + 3 / 2) / (7 + 3 / Math.log2(3)), 12)
    expect(m.map).toBeCloseTo((1 / 1 + 2 / 3) / 2, 12)
    expect(m.mrr).toBe(1)
    expect(searchMetrics([3, 0, 2], { gain: "linear", k: 1 }).ndcg).toBe(1)
    expect(searchMetrics([1, 3], { gain: "linear", k: 1 }).ndcg).toBeCloseTo(1 / 3, 12)
  })
  it("every metric has a value for an empty list and for no relevant hit", () => {
    expect(searchMetrics([], { gain: "exponential" })).toEqual({ ndcg: 0, map: 0, mrr: 0 })
    expect(searchMetrics([1, 0], { gain: "exponential" })).toEqual({ ndcg: 1, map: 0, mrr: 0 })
    expect(meanMetrics([])).toEqual({ ndcg: 0, map: 0, mrr: 0 })
  })
})
