import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { compilePaths, readJson, StreamReading } from "../../src/target/Answer.js"
import type { SseEvent } from "../../src/target/Sse.js"

const generic = compilePaths({ answer: "$.answer", contexts: "$.sources[*].text" })
const chat = compilePaths({ answer: "$.choices[0].message.content", delta: "$.choices[0].delta.content" })
const left = <A, E>(e: Either.Either<A, E>): E =>
  Either.match(e, { onLeft: (l) => l, onRight: (r) => expect.fail(`expected a failure, got ${JSON.stringify(r)}`) })
const right = <A, E>(e: Either.Either<A, E>): A =>
  Either.match(e, { onLeft: (l) => expect.fail(`expected an answer, got ${JSON.stringify(l)}`), onRight: (r) => r })

const events = (reading: StreamReading, data: ReadonlyArray<string>) => {
  for (const d of data) {
    const stop = reading.add({ event: "message", data: d } satisfies SseEvent)
    if (stop !== undefined) return stop
  }
  return undefined
}

describe("reading a JSON answer", () => {
  it("the answer and the passages at their paths", () => {
    expect(
      right(
        readJson(
          generic,
          "{\"answer\": \"Paris.\", \"sources\": [{\"text\": \"P is the capital\"}, {\"text\": \"F\"}]}"
        )
      )
    ).toEqual({ answer: "Paris.", contexts: ["P is the capital", "F"] })
    expect(right(readJson(compilePaths({ answer: "$.answer" }), "{\"answer\": \"x\"}"))).toEqual({ answer: "x" })
  })

  it("a path to one list of texts gives its items; numbers are text", () => {
    expect(
      right(
        readJson(
          compilePaths({ answer: "$.answer", contexts: "$.contexts" }),
          "{\"answer\": \"a\", \"contexts\": [\"one\", 2]}"
        )
      ).contexts
    ).toEqual(["one", "2"])
  })

  it("passages absent or empty: none, with the reason", () => {
    expect(right(readJson(generic, "{\"answer\": \"a\"}"))).toEqual({
      answer: "a",
      contexts: [],
      contextsNote: "the response has no $.sources: it has key answer"
    })
    expect(right(readJson(generic, "{\"answer\": \"a\", \"sources\": []}"))).toEqual({
      answer: "a",
      contexts: [],
      contextsNote: "the response has no passages at $.sources[*].text"
    })
  })

  it("not JSON, empty, an HTML page: malformed, with the start of the body", () => {
    expect(left(readJson(generic, "{\"answer\": \"unfinished"))).toEqual({
      kind: "malformed",
      detail: expect.stringMatching(/^the response is not JSON \(.*\); it starts with "\{\\"answer\\": \\"unfinished"$/)
    })
    expect(left(readJson(generic, "  "))).toEqual({ kind: "malformed", detail: "the response body is empty" })
    expect(left(readJson(generic, "<html><body>502 Bad Gateway</body></html>")).detail).toContain(
      "it starts with \"<html><body>502 Bad Gateway</body></html>\""
    )
  })

  it("the answer missing, null or not text: shape, saying what is there", () => {
    expect(left(readJson(generic, "{\"answer_text\": \"Paris\", \"sources\": []}"))).toEqual({
      kind: "shape",
      detail: "the response has no $.answer: it has keys answer_text, sources"
    })
    expect(left(readJson(generic, "{\"answer\": null}"))).toEqual({
      kind: "shape",
      detail: "the answer at $.answer in the response is null, not text"
    })
    expect(left(readJson(generic, "{\"answer\": {\"text\": \"x\"}}"))).toEqual({
      kind: "shape",
      detail: "the answer at $.answer in the response is an object, not text"
    })
    expect(left(readJson(generic, "[1, 2]")).detail).toBe(
      "the response has no $.answer: it is a list of 2, not an object (use [0] or [*] for its items)"
    )
  })

  it("a passage that is not text: shape, with a hint", () => {
    const bad = left(
      readJson(
        compilePaths({ answer: "$.answer", contexts: "$.sources[*]" }),
        "{\"answer\": \"a\", \"sources\": [{\"text\": \"t\"}]}"
      )
    )
    expect(bad).toEqual({
      kind: "shape",
      detail:
        "the passage at $.sources[0] in the response is an object, not text (point --target-contexts at its text, e.g. $.sources[*].text)"
    })
    expect(left(readJson(generic, "{\"answer\": \"a\", \"sources\": \"one\"}")).detail).toBe(
      "the response has no $.sources[*]: $.sources is a string (\"one\"), not a list or an object"
    )
  })
})

describe("reading a streamed answer", () => {
  it("generic: the last event carrying the answer; passages from the last event carrying them; [DONE] and non-JSON skipped", () => {
    const r = new StreamReading(generic)
    expect(
      events(r, [
        "{\"delta\": \"Par\"}",
        "keep-alive",
        "{\"answer\": \"Par\"}",
        "{\"answer\": \"Paris.\", \"sources\": [{\"text\": \"s1\"}]}",
        "[DONE]"
      ])
    ).toBeUndefined()
    expect(right(r.finish())).toEqual({ answer: "Paris.", contexts: ["s1"], events: 5 })
  })

  it("openai-chat: deltas concatenated in order; role-only and finish chunks carry none", () => {
    const r = new StreamReading(chat)
    const chunk = (delta: object) => JSON.stringify({ choices: [{ index: 0, delta }] })
    events(r, [
      chunk({ role: "assistant" }),
      chunk({ content: "Hel" }),
      chunk({ content: "lo, " }),
      chunk({ content: "world" }),
      JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
      JSON.stringify({ choices: [], usage: { total_tokens: 9 } }),
      "[DONE]"
    ])
    expect(right(r.finish())).toEqual({ answer: "Hello, world", events: 7 })
  })

  it("openai-chat: a stream with no delta but a whole message takes the message", () => {
    const r = new StreamReading(chat)
    events(r, [JSON.stringify({ choices: [{ message: { content: "whole" } }] })])
    expect(right(r.finish()).answer).toBe("whole")
  })

  it("an error event without an answer: a server failure (retryable), reading stops", () => {
    const r = new StreamReading(generic)
    expect(
      events(r, [
        "{\"delta\": \"Partial \"}",
        "{\"error\": {\"message\": \"model overloaded\"}}",
        "{\"answer\": \"late\"}"
      ])
    ).toEqual({ kind: "server", detail: "the stream sent an error at event 2: \"model overloaded\"" })
    expect(left(r.finish()).kind).toBe("server")
  })

  it("no answer in any event: shape, with what the last event had", () => {
    const r = new StreamReading(generic)
    events(r, ["{\"delta\": \"a\"}", "{\"delta\": \"b\"}", "[DONE]"])
    expect(left(r.finish())).toEqual({
      kind: "shape",
      detail: "the stream ended after 3 event(s) without $.answer (event 2 has no $.answer: it has key delta)"
    })
    const c = new StreamReading(chat)
    events(c, [JSON.stringify({ choices: [] })])
    expect(left(c.finish()).detail).toMatch(
      /^the stream ended after 1 event\(s\) without \$\.choices\[0\]\.delta\.content or \$\.choices\[0\]\.message\.content \(event 1 has no \$\.choices\[0\]: \$\.choices is an empty list\)$/
    )
  })

  it("no event at all, or no JSON event: malformed", () => {
    expect(left(new StreamReading(generic).finish())).toEqual({
      kind: "malformed",
      detail: "the event stream ended without an event"
    })
    const r = new StreamReading(generic)
    events(r, ["hello", "world"])
    expect(left(r.finish())).toEqual({
      kind: "malformed",
      detail: "none of the stream's 2 event(s) holds JSON; the first is \"hello\""
    })
  })
})

describe("passages in a stream", () => {
  it("events without passages (deltas, a bare number) are not held to the contexts path; a passage that is not text is", () => {
    const r = new StreamReading(generic)
    expect(events(r, ["{\"delta\": \"a\"}", "7", "{\"answer\": \"a\", \"sources\": [{\"text\": \"s\"}]}"]))
      .toBeUndefined()
    expect(right(r.finish())).toEqual({ answer: "a", contexts: ["s"], events: 3 })
    const none = new StreamReading(generic)
    events(none, ["{\"answer\": \"a\"}"])
    expect(right(none.finish())).toEqual({
      answer: "a",
      contexts: [],
      contextsNote: "no event of the stream has passages at $.sources[*].text",
      events: 1
    })
    const bad = new StreamReading(generic)
    expect(events(bad, ["{\"answer\": \"a\", \"sources\": [{\"text\": {\"x\": 1}}]}"])?.kind).toBe("shape")
  })
})
