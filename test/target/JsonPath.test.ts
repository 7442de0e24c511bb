import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as JsonPath from "../../src/target/JsonPath.js"

const path = (text: string) => Either.getOrThrowWith(JsonPath.parse(text), (e) => new Error(e))
const values = (text: string, value: unknown) => JsonPath.select(path(text), value).matches.map((m) => m.value)
const problem = (text: string) => Either.match(JsonPath.parse(text), { onLeft: (e) => e, onRight: () => "parsed" })

describe("JsonPath: parsing", () => {
  it("the subset: $, .name, ['name'], [\"name\"], [n], [-1], [*], .*; canonical text", () => {
    expect(path("$").steps).toEqual([])
    expect(path("$.answer").text).toBe("$.answer")
    expect(path("$['answer']").text).toBe("$.answer")
    expect(path("$[\"answer\"]").text).toBe("$.answer")
    expect(path("answer").text).toBe("$.answer")
    expect(path("data.answer").text).toBe("$.data.answer")
    expect(path("$.choices[0].message.content").steps).toEqual([
      { _tag: "Key", name: "choices" },
      { _tag: "Index", index: 0 },
      { _tag: "Key", name: "message" },
      { _tag: "Key", name: "content" }
    ])
    expect(path("$.sources.*.text").text).toBe("$.sources[*].text")
    expect(path("$.sources[*].text").many).toBe(true)
    expect(path("$.answer").many).toBe(false)
    expect(path("$['key with spaces']['it\\'s']").text).toBe("$['key with spaces']['it\\'s']")
    expect(path("$['key with spaces']['it\\'s']").steps).toEqual([{ _tag: "Key", name: "key with spaces" }, {
      _tag: "Key",
      name: "it's"
    }])
    expect(path("$.items[-1]").steps[1]).toEqual({ _tag: "Index", index: -1 })
  })

  it("what is wrong, and where", () => {
    expect(problem("")).toMatch(/cannot be empty/)
    expect(problem("$.")).toMatch(/expected a name after "\." at character 2/)
    expect(problem("$[0")).toMatch(/expected \[n\], \[\*\] or \['name'\] at character 2/)
    expect(problem("$['open")).toMatch(/expected '\] to close the name/)
    expect(problem("$.a b")).toMatch(/unexpected " " at character 4/)
    expect(problem("$..answer")).toMatch(/expected a name/)
    expect(problem("9lives")).toMatch(/start with \$/)
  })
})

describe("JsonPath: reading", () => {
  const response = {
    answer_text: "Paris",
    sources: [{ text: "Paris is the capital.", id: 1 }, { text: "France is in Europe.", id: 2 }],
    choices: [{ message: { content: "hello" } }],
    empty: [],
    nothing: null
  }

  it("selects values in document order with their concrete paths", () => {
    expect(values("$.sources[*].text", response)).toEqual(["Paris is the capital.", "France is in Europe."])
    expect(JsonPath.select(path("$.sources[*].text"), response).matches.map((m) => m.at)).toEqual([
      "$.sources[0].text",
      "$.sources[1].text"
    ])
    expect(values("$.choices[0].message.content", response)).toEqual(["hello"])
    expect(values("$.sources[-1].id", response)).toEqual([2])
    expect(values("$.empty[*]", response)).toEqual([])
    expect(values("$", 42)).toEqual([42])
    expect(values("$.sources[0].*", response)).toEqual(["Paris is the capital.", 1])
  })

  it("a missing key names the keys that are there", () => {
    const r = JsonPath.readOne(path("$.answer"), response)
    expect(Either.isLeft(r) && r.left).toEqual({
      at: "$.answer",
      absent: true,
      reason: "the response has no $.answer: it has keys answer_text, sources, choices, empty, nothing"
    })
  })

  it("deeper misses say which part is what", () => {
    const reason = (p: string, v: unknown = response) =>
      Either.match(JsonPath.readOne(path(p), v), { onLeft: (m) => m.reason, onRight: () => "found" })
    expect(reason("$.sources[0].body")).toBe("the response has no $.sources[0].body: $.sources[0] has keys text, id")
    expect(reason("$.choices[1].message")).toBe("the response has no $.choices[1]: $.choices is a list of 1")
    expect(reason("$.empty[0]")).toBe("the response has no $.empty[0]: $.empty is an empty list")
    expect(reason("$.nothing.answer")).toBe("the response has no $.nothing.answer: $.nothing is null")
    expect(reason("$.sources.text")).toBe(
      "the response has no $.sources.text: $.sources is a list of 2, not an object (use [0] or [*] for its items)"
    )
    expect(reason("$.answer_text[0]")).toBe(
      "the response has no $.answer_text[0]: $.answer_text is a string (\"Paris\"), not a list"
    )
    expect(reason("$.answer", ["a", "b"])).toBe(
      "the response has no $.answer: it is a list of 2, not an object (use [0] or [*] for its items)"
    )
    expect(JsonPath.select(path("$.answer"), { a: 1 }, "event 3").misses[0]!.reason).toBe(
      "event 3 has no $.answer: it has key a"
    )
  })

  it("a type mismatch is not an absence", () => {
    const miss = JsonPath.readOne(path("$.answer_text.value"), response)
    expect(Either.isLeft(miss) && miss.left.absent).toBe(false)
  })

  it("readOne refuses a wildcard path that selects several values", () => {
    const r = JsonPath.readOne(path("$.sources[*].text"), response)
    expect(Either.isLeft(r) && r.left.reason).toBe(
      "$.sources[*].text selects 2 values in the response; it must select one"
    )
  })

  it("a wildcard branch that misses is reported with the matches of the others", () => {
    const s = JsonPath.select(path("$.sources[*].text"), { sources: [{ text: "a" }, { title: "b" }] })
    expect(s.matches.map((m) => m.value)).toEqual(["a"])
    expect(s.misses.map((m) => m.reason)).toEqual(["the response has no $.sources[1].text: $.sources[1] has key title"])
  })

  it("a long key list is cut after a dozen", () => {
    const wide = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, i]))
    const r = JsonPath.readOne(path("$.answer"), wide)
    expect(Either.isLeft(r) && r.left.reason).toMatch(/it has keys k0, k1, .*k11 and 3 more$/)
  })
})
